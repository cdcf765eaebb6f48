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
    // The summary and the reports show them; no figure of a workload the stage lacks.
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("    images: 12 sent (2.00 per request; "),
        "{stdout}"
    );
    assert!(
        stdout.contains("    vision tokens: 11.0 per image (132 over 12 images of 6 ok"),
        "{stdout}"
    );
    for absent in ["tool calls", "reasoning tokens", "TTFA", "answer-starved"] {
        assert!(!stdout.contains(absent), "{absent}: {stdout}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| images | 12 sent (2.00 per request; "),
        "{md}"
    );
    assert!(md.contains("| vision tokens | 11.0 per image "), "{md}");
    assert!(!md.contains("| tool calls |"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("vision tokens") && html.contains("11.0 per image"));
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

/// The head of a PNG of `w`×`h`: all a server that reads sizes (and the loader) looks at.
fn png_head(w: u32, h: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 2, 0, 0, 0]);
    b
}

#[test]
fn images_named_in_jsonl_are_read_and_sent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("img")).unwrap();
    let png = png_head(56, 56);
    std::fs::write(dir.path().join("img/a.png"), &png).unwrap();
    std::fs::write(
        dir.path().join("v.jsonl"),
        "{\"prompt\": \"Describe this.\", \"images\": [\"img/a.png\", \"https://example.com/b.jpg\"], \"max_tokens\": 4}\n",
    )
    .unwrap();
    let path = scenario(
        dir.path(),
        "s.kdl",
        r#"
target "sim" { decode-base "1ms"; }
dataset "d" { jsonl "v.jsonl" }
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests 3; }
"#,
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let p = stage(&results(&out), "s")["payload"].clone();
    assert_eq!(p["images"], 6, "{p}");
    assert_eq!(p["image_bytes"], 3 * png.len(), "{p}");
    assert_eq!(p["image_pixels"], 3 * 56 * 56, "{p}");
    // The file's 2×2 patches (4 tokens), the URL's 256, the chat template's 6.
    assert_eq!(p["vision_tokens"], 3 * (4 + 256 + 6), "{p}");
}

#[test]
fn bad_jsonl_images_name_their_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("text.png"), "not an image").unwrap();
    std::fs::write(dir.path().join("empty.png"), png_head(0, 5)).unwrap();
    let huge = std::fs::File::create(dir.path().join("huge.png")).unwrap();
    huge.set_len(21 << 20).unwrap();
    std::fs::create_dir(dir.path().join("folder.png")).unwrap();
    // A header whose pixels would wrap a sum: 2 × (2^32 − 1)² is past u64.
    std::fs::write(dir.path().join("vast.png"), png_head(u32::MAX, u32::MAX)).unwrap();
    std::fs::write(dir.path().join("wide.png"), png_head(16_385, 16_384)).unwrap();
    for (images, want) in [
        (
            "[\"vast.png\", \"vast.png\"]",
            "vast.png` says it is 4294967295×4294967295 pixels, more than the 268435456",
        ),
        ("[\"wide.png\"]", "says it is 16385×16384 pixels"),
        ("[\"missing.png\"]", "images[0]: cannot read"),
        ("[\"https://h/x.png\", \"text.png\"]", "images[1]: "),
        ("[\"empty.png\"]", "is not a PNG or JPEG"),
        ("[\"huge.png\"]", "more than 20971520 bytes"),
        ("[\"folder.png\"]", "it is a directory, not a regular file"),
        ("\"a.png\"", "`images` must be a list"),
        ("[7]", "images[0] must be a string"),
    ] {
        std::fs::write(
            dir.path().join("v.jsonl"),
            format!("{{\"prompt\": \"ok\"}}\n{{\"prompt\": \"x\", \"images\": {images}}}\n"),
        )
        .unwrap();
        let path = scenario(
            dir.path(),
            "s.kdl",
            "target \"sim\"\ndataset \"d\" { jsonl \"v.jsonl\" }\n\
             stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 1; }\n",
        );
        let o = run(&path, &dir.path().join("out"), &[]);
        let (_, err) = text(&o);
        assert_ne!(o.status.code(), Some(0), "{images}: {}", describe(&o));
        assert!(
            err.contains("v.jsonl:2") && err.contains(want),
            "{images}: {err}"
        );
    }
}

#[test]
fn a_request_image_whose_header_claims_too_many_pixels_is_refused_by_the_simulator() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let uri = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png_head(u32::MAX, u32::MAX))
    );
    // A `data:` URI is sent as written: the client does not read its header, the server does.
    std::fs::write(
        dir.path().join("v.jsonl"),
        format!("{{\"prompt\": \"x\", \"images\": [\"{uri}\", \"{uri}\"]}}\n"),
    )
    .unwrap();
    let path = scenario(
        dir.path(),
        "s.kdl",
        "target \"sim\"\ndataset \"d\" { jsonl \"v.jsonl\" }\n\
         stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 2; }\n",
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--untrusted", "judge"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    let s = stage(&results(&out), "s").clone();
    assert_eq!(
        s["requests"]["errors"],
        serde_json::json!({ "http_400": 2 }),
        "{}",
        s["requests"]
    );
    assert_eq!(s["payload"]["images"], 4, "{}", s["payload"]);
}
