//! Arbitrary bytes as a response body, through the client's own decoders: HTTP/1.1 framing
//! (chunked, or to the end of the connection) into the SSE decoder, the bytes cut into reads
//! at arbitrary places. Neither may panic; every event handed out is within the event cap;
//! and, unless the framing itself is broken, the events (or the error that stopped them) must
//! not depend on where the reads were cut, which is what a server's TCP segments decide.
#![no_main]

use infermeter_core::client::{Events, Framing, SseError};
use libfuzzer_sys::fuzz_target;

/// A small cap, so that hostile inputs reach it.
const MAX_EVENT: usize = 256;

#[derive(Debug, PartialEq)]
enum End {
    /// The body's framing ended (or the input ran out) after these events.
    Clean,
    Framing,
    Sse(SseError),
}

/// The events of `body` read in pieces of the given sizes (cycled), and how they ended.
fn decode(chunked: bool, body: &[u8], cuts: &[u8]) -> (Vec<Vec<u8>>, End) {
    let mut framing = if chunked {
        Framing::chunked()
    } else {
        Framing::Close
    };
    let mut events = Events::new(MAX_EVENT);
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < body.len() && !framing.is_done() {
        let n = cuts
            .get(i % cuts.len().max(1))
            .map_or(body.len(), |&c| usize::from(c).max(1));
        i += 1;
        let read = &body[at..(at + n).min(body.len())];
        let used = match framing.decode(read, events.spare()) {
            Ok(used) => used,
            Err(_) => return (out, End::Framing),
        };
        assert!(used <= read.len());
        at += read.len();
        loop {
            match events.next_data() {
                Ok(Some(data)) => {
                    assert!(data.len() <= MAX_EVENT, "an event past the cap");
                    out.push(data.as_bytes().to_vec());
                }
                Ok(None) => break,
                Err(e) => return (out, End::Sse(e)),
            }
        }
        if used < read.len() {
            // Bytes after the body's end: not the body.
            break;
        }
    }
    (out, End::Clean)
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let ncuts = usize::from(mode >> 4).min(rest.len());
    let (cuts, body) = rest.split_at(ncuts);
    let chunked = mode & 1 == 1;
    let whole = decode(chunked, body, &[]);
    let pieces = decode(chunked, body, cuts);
    // Broken framing is found when its read is decoded: in one read, before any event of
    // that read; in pieces, after the events of earlier ones. Otherwise nothing may differ.
    if whole.1 != End::Framing && pieces.1 != End::Framing {
        assert_eq!(whole, pieces, "the events depend on where the reads were cut");
    }
});
