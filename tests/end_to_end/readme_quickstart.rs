//! The README's quick start, followed literally: its shell block is run as one bash script
//! with the freshly built binary on PATH (the simulator's port swapped for a free one, so
//! parallel test runs do not collide), and must end with a passing gate. And the install
//! paths agree: the asset name the README downloads, the one `release.yml` uploads, the one
//! `cargo binstall` (Cargo.toml) and the Action look for.

use std::path::Path;
use std::process::Command;

use crate::support::bin;

const README: &str = include_str!("../../README.md");

/// The first ```sh block after the heading that starts with `heading`.
fn block_after(doc: &str, heading: &str) -> String {
    let section = doc.split(heading).nth(1).expect("the heading exists");
    let start = section.find("```sh\n").expect("a sh block") + 6;
    let rest = &section[start..];
    rest[..rest.find("```").expect("the block ends")].to_string()
}

#[test]
#[cfg(unix)]
fn the_quick_start_works_as_written() {
    use std::os::unix::process::CommandExt;

    let script = block_after(README, "## Quick start");
    assert!(script.contains("infermeter new "), "{script}");
    assert!(script.contains("infermeter wait "), "{script}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // And the run judges its numbers even when this busy test machine's send lag makes the
    // stage untrusted (which, on a quiet machine, it is not): the gate under test is the
    // scenario's SLAs, not the test machine's scheduler.
    let script = script
        .replace("127.0.0.1:8000", &format!("127.0.0.1:{port}"))
        .replace(
            "infermeter run gate.kdl",
            "infermeter run gate.kdl --untrusted judge",
        );
    assert!(script.contains("--untrusted judge"), "{script}");
    let dir = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        Path::new(bin()).parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let child = Command::new("bash")
        .args(["-e", "-c", &script])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_STEP_SUMMARY")
        // Its own process group, so the simulator it starts in the background goes too.
        .process_group(0)
        // Files, not pipes: the simulator left running in the background would hold a pipe
        // open, and reading it to the end would wait for the simulator.
        .stdout(std::fs::File::create(dir.path().join("stdout")).unwrap())
        .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let group = i32::try_from(child.id()).unwrap();
    let status = child.wait_with_output().unwrap().status;
    // SAFETY: kill(2) on the process group this test created.
    unsafe { libc::kill(-group, libc::SIGTERM) };
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
    assert_eq!(
        status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        read("stdout"),
        read("stderr")
    );
    let kdl = std::fs::read_to_string(dir.path().join("gate.kdl")).unwrap();
    assert!(kdl.contains("assert \"ttft.p95 < 500ms\""), "{kdl}");
    let r = crate::support::results(&dir.path().join("results/gate"));
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(r["stages"][0]["requests"]["ok"], 200);
}

#[test]
fn release_asset_names_agree() {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |f: &str| std::fs::read_to_string(Path::new(root).join(f)).unwrap();
    let release = read(".github/workflows/release.yml");
    assert!(
        release.contains("name=\"infermeter-$TARGET\""),
        "release.yml's archive name"
    );
    assert!(release.contains("tar -czf \"$name.tar.gz\" \"$name\""));
    for target in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "aarch64-apple-darwin",
        "x86_64-apple-darwin",
    ] {
        assert!(release.contains(&format!("target: {target}")), "{target}");
        assert!(
            read("action.yml").contains(&format!("target={target}")),
            "{target}"
        );
    }
    assert!(README.contains("releases/latest/download/infermeter-x86_64-unknown-linux-gnu.tar.gz"));
    assert!(README.contains("infermeter-x86_64-unknown-linux-gnu/infermeter"));
    let cargo = read("Cargo.toml");
    assert!(cargo.contains(
        "pkg-url = \"{ repo }/releases/download/v{ version }/{ name }-{ target }{ archive-suffix }\""
    ));
    assert!(cargo.contains("bin-dir = \"{ name }-{ target }/{ bin }{ binary-ext }\""));
    assert!(read("action.yml").contains("name=\"infermeter-$TARGET\""));
}
