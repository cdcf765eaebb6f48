//! The promises the client's response-head parser keeps on any answer, checked by the
//! `response_head` fuzz target on every input it makes (the reads cut where the input says)
//! and by `tests/library/client_head_corpus.rs` on the corpus it grew (every read boundary);
//! one copy, included by both with `#[path]`. No panic; the answer given after any read is the
//! whole input's (a head found stays that head whatever follows, a refusal stays a refusal); a
//! head takes at most `MAX_HEAD` bytes and is a final status; a "not yet" never holds more
//! than `MAX_HEAD` bytes; the body after a head goes through its framing's decoder.

use infermeter_core::client::{BadHead, Framing, Head, MAX_HEAD, parse_head};

/// The answer for `buf`, checked against the bounds every answer keeps.
fn checked(buf: &[u8]) -> Result<Option<Head>, BadHead> {
    let r = parse_head(buf);
    match &r {
        Ok(Some(h)) => {
            assert!(h.len <= buf.len() && h.len <= MAX_HEAD, "{h:?}");
            assert!((200..=599).contains(&h.status), "{h:?}");
            if h.status == 204 || h.status == 304 {
                assert_eq!(h.framing, Framing::Length(0));
            }
            if h.reusable() {
                assert!(h.keep_alive && !matches!(h.framing, Framing::Close | Framing::Length(0)));
            }
        }
        Ok(None) => assert!(buf.len() <= MAX_HEAD, "{} bytes held, no head", buf.len()),
        Err(_) => {}
    }
    r
}

/// The target's layout: a first byte whose low half counts the read sizes that follow, then
/// the answer. `None` for an empty input.
pub fn split(input: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&ncuts, rest) = input.split_first()?;
    let ncuts = usize::from(ncuts & 0x0f).min(rest.len());
    Some(rest.split_at(ncuts))
}

/// The reads as the input cuts them (the cuts' sizes, then the rest at once): the answer at
/// the first read that settles it must be the whole input's.
pub fn check_reads(cuts: &[u8], answer: &[u8]) {
    let whole = checked(answer);
    let mut end = 0;
    let mut reads = cuts.iter().map(|&c| usize::from(c).max(1));
    loop {
        end = reads
            .next()
            .map_or(answer.len(), |n| (end + n).min(answer.len()));
        match checked(&answer[..end]) {
            Ok(None) if end < answer.len() => continue,
            Ok(None) => assert_eq!(whole, Ok(None)),
            Ok(Some(h)) => assert_eq!(whole, Ok(Some(h)), "a head that changed with more bytes"),
            Err(e) => assert!(whole.is_err(), "refused on {end} bytes ({e}), not on all"),
        }
        break;
    }
    body(answer, whole);
}

/// Every read boundary (the first 4 KiB), not only the input's own cuts.
#[allow(
    dead_code,
    reason = "the corpus replay's check: thousands of parses per input, too slow for the fuzzer"
)]
pub fn check_every_boundary(answer: &[u8]) {
    let whole = checked(answer);
    for end in 0..answer.len().min(4096) {
        match checked(&answer[..end]) {
            Ok(None) => {}
            Ok(Some(h)) => assert_eq!(whole, Ok(Some(h)), "a head that changed at {end}"),
            Err(e) => assert!(whole.is_err(), "refused at {end} ({e}), not on all"),
        }
    }
    body(answer, whole);
}

/// The body after a head goes through its framing's decoder and uses no more than it has.
fn body(answer: &[u8], whole: Result<Option<Head>, BadHead>) {
    if let Ok(Some(h)) = whole {
        let mut framing = h.framing;
        let mut out = Vec::new();
        if let Ok(used) = framing.decode(&answer[h.len..], &mut out) {
            assert!(used <= answer.len() - h.len);
        }
    }
}
