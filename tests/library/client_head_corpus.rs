//! The corpus the `response_head` fuzz target grew (`fuzz/corpus/response_head/`), replayed in
//! every test run on stable Rust with the target's checks: no panic; the answer given after
//! any read is the whole input's (a head found stays that head, a refusal stays one); a head
//! takes at most `MAX_HEAD` bytes and is a final status; nothing more than `MAX_HEAD` bytes is
//! ever held as "not yet".

use infermeter::client::{BadHead, Framing, Head, MAX_HEAD, parse_head};

fn checked(buf: &[u8]) -> Result<Option<Head>, BadHead> {
    let r = parse_head(buf);
    match &r {
        Ok(Some(h)) => {
            assert!(h.len <= buf.len() && h.len <= MAX_HEAD, "{h:?}");
            assert!((200..=599).contains(&h.status), "{h:?}");
            if h.status == 204 || h.status == 304 {
                assert_eq!(h.framing, Framing::Length(0));
            }
        }
        Ok(None) => assert!(buf.len() <= MAX_HEAD),
        Err(_) => {}
    }
    r
}

/// Every read boundary, not only the input's own cuts: a head must not depend on any.
fn check(answer: &[u8]) {
    let whole = checked(answer);
    for end in 0..answer.len().min(4096) {
        match checked(&answer[..end]) {
            Ok(None) => {}
            Ok(Some(h)) => assert_eq!(whole, Ok(Some(h)), "a head that changed at {end}"),
            Err(e) => assert!(whole.is_err(), "refused at {end} ({e}), not on all"),
        }
    }
    if let Ok(Some(h)) = whole {
        let mut framing = h.framing;
        let _ = framing.decode(&answer[h.len..], &mut Vec::new());
    }
}

#[test]
fn the_fuzz_corpus_holds_the_parsers_promises() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/response_head");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("the corpus is in the repository") {
        let input = std::fs::read(entry.unwrap().path()).unwrap();
        // The target's layout: a byte whose low half counts the cut sizes that follow.
        let Some((&ncuts, rest)) = input.split_first() else {
            continue;
        };
        let ncuts = usize::from(ncuts & 0x0f).min(rest.len());
        check(&rest[ncuts..]);
        n += 1;
    }
    assert!(n > 100, "{n} inputs: the corpus went missing");
}
