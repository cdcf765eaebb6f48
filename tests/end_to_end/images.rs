//! Images through the real binary and the simulator: synthetic images drawn per request go
//! out as chat content parts, and results.json counts them (images, pixels, bytes), the
//! request bodies' size, and the vision tokens the server counted for them.

use crate::support::*;

#[test]
fn synthetic_images_are_sent_counted_and_their_tokens_show() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(
        dir.path(),
        "s.kdl",
        r#"
scenario "img" { seed 3 }
target "sim" { decode-base "1ms"; }
dataset "d" {
    synthetic { input-tokens 32; output-tokens 4; }
    images 2 {
        size "112x56"
        format "png" weight=1
        format "jpeg" weight=1
    }
}
stage "s" { dataset "d"; arrival "concurrency" clients=2; requests 6; }
"#,
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let s = stage(&results(&out), "s").clone();
    assert_eq!(s["requests"]["ok"], 6, "{s}");
    assert_eq!(s["tokens"]["mismatched"], 0, "{s}");
    let p = &s["payload"];
    assert_eq!(p["requests"], 6, "{p}");
    assert_eq!(p["images"], 12, "{p}");
    assert_eq!(p["image_pixels"], 12 * 112 * 56, "{p}");
    let image_bytes = p["image_bytes"].as_u64().unwrap();
    let request_bytes = p["request_bytes"].as_u64().unwrap();
    // Base64 makes the body a third larger than the images it carries.
    assert!(request_bytes > image_bytes * 4 / 3, "{p}");
    // 112×56 is 4×2 patches: 8 tokens an image, 16 a request, plus the chat template's 6
    // (3 for the message, 3 for the reply's priming) that the plan's text count leaves out.
    assert_eq!(p["vision_requests"], 6, "{p}");
    assert_eq!(p["vision_tokens"], 6 * (16 + 6), "{p}");
    assert_eq!(p["vision_tokens_per_image"], 11.0, "{p}");
    let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    for line in rows.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["images"], 2, "{r}");
        assert!(r["request_bytes"].as_u64().unwrap() > r["image_bytes"].as_u64().unwrap());
    }
    // A rerun sends the same bytes: the images are drawn from the seed.
    let again = dir.path().join("again");
    let o = run(&path, &again, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(
        stage(&results(&again), "s")["payload"]["image_bytes"],
        image_bytes
    );
}

#[test]
fn images_need_chat_and_sane_sizes() {
    let dir = tempfile::tempdir().unwrap();
    for (target, images, want) in [
        ("api \"completions\"", "size \"64x64\"", "images"),
        ("", "size \"100000x2\"", "invalid image size"),
        ("", "size \"0x64\"", "a side of 0 pixels"),
        ("", "size \"8192x8192\"", "more than the"),
        ("", "format \"gif\"", "unknown image format `gif`"),
    ] {
        let path = scenario(
            dir.path(),
            "bad.kdl",
            &format!(
                "target \"sim\" {{ {target} }}\n\
                 dataset \"d\" {{ synthetic {{ input-tokens 8; output-tokens 2; }}; images 1 {{ {images} }} }}\n\
                 stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=1; requests 1; }}\n"
            ),
        );
        let o = run(&path, &dir.path().join("out"), &[]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{images}: {}", describe(&o));
        assert!(err.contains(want), "{images}: {err}");
    }
}
