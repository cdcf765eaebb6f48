//! Arbitrary bytes as what a server answers, through the client's response-head parser as the
//! client calls it: on the whole buffer after every read, the reads cut anywhere. It may not
//! panic; its answer may not change once given (a head found stays that head whatever
//! follows, a refusal stays a refusal); a head takes at most `MAX_HEAD` bytes, is a final
//! status, and a "not yet" never holds more than `MAX_HEAD` bytes; and the body after a head
//! goes through its framing's decoder without a panic.
#![no_main]

use infermeter::client::{BadHead, Framing, Head, MAX_HEAD, parse_head};
use libfuzzer_sys::fuzz_target;

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

fuzz_target!(|input: &[u8]| {
    let Some((&ncuts, rest)) = input.split_first() else {
        return;
    };
    let ncuts = usize::from(ncuts & 0x0f).min(rest.len());
    let (cuts, answer) = rest.split_at(ncuts);
    let whole = checked(answer);
    // The reads as they came (the cuts' sizes, then the rest at once): the answer at the
    // first read that settles it must be the whole input's.
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
    if let Ok(Some(h)) = whole {
        let mut framing = h.framing;
        let mut out = Vec::new();
        if let Ok(used) = framing.decode(&answer[h.len..], &mut out) {
            assert!(used <= answer.len() - h.len);
        }
    }
});
