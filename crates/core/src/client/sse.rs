//! Server-sent events framing over a response body's bytes, with a cap on one event's size.
//!
//! Bytes go into one buffer that is reused for the whole response (a network read lands in
//! it directly); a complete event's `data` is handed out borrowed from that buffer when it is
//! one `data:` line, as every OpenAI-compatible server sends it, and assembled only otherwise.
//! Line endings are LF, CR or CRLF and an empty line ends an event, as the SSE specification
//! defines them; comments and fields other than `data` are skipped, as browsers' EventSource
//! skips them. The search for an event's end resumes where the last read stopped, so an event
//! split over many reads is scanned once.
//!
//! The cap counts the bytes of the event still open: a server that streams one line that never
//! ends costs a bounded amount of memory and fails its request as `malformed`.

/// Why the events stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("an SSE event exceeded {0} bytes (the target's max-event-size)")]
    TooLarge(usize),
    #[error("an SSE event's data is not UTF-8")]
    NotUtf8,
}

/// The body's bytes not yet handed out as events.
pub struct Events {
    buf: Vec<u8>,
    /// Where the open event starts.
    start: usize,
    /// How far the search for the open event's end has looked.
    scanned: usize,
    /// The last byte examined ended a line (or nothing was read yet).
    at_line_start: bool,
    /// The last byte examined was CR: an LF now belongs to the same line ending.
    after_cr: bool,
    /// Where the open event's first line ends, once found.
    first_eol: Option<usize>,
    /// An event's data assembled from more than one `data:` line.
    joined: Vec<u8>,
    max: usize,
}

/// A network read's size: most reads carry a few events (a few hundred bytes each).
const READ: usize = 16 * 1024;

impl Events {
    pub fn new(max: usize) -> Self {
        Events {
            buf: Vec::with_capacity(READ),
            start: 0,
            scanned: 0,
            at_line_start: true,
            after_cr: false,
            first_eol: None,
            joined: Vec::new(),
            max: max.max(1),
        }
    }

    /// Appends body bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.compact();
        self.buf.extend_from_slice(bytes);
    }

    /// The buffer, to append body bytes to (with room for a read): the open event moved to
    /// its front first.
    pub fn spare(&mut self) -> &mut Vec<u8> {
        self.compact();
        self.buf.reserve(READ);
        &mut self.buf
    }

    /// The bytes not handed out as events: a whole (not streamed) answer's body, read into
    /// the buffer by the same reads.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Drops every byte not handed out yet; how many there were.
    pub fn discard(&mut self) -> usize {
        let n = self.buf.len() - self.start;
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        self.first_eol = None;
        n
    }

    /// Ready for the next response's body (the buffers are kept, unless one large event grew
    /// them: a pooled connection holds a read's worth).
    pub fn reset(&mut self) {
        self.discard();
        if self.buf.capacity() > 4 * READ {
            self.buf = Vec::with_capacity(READ);
        }
        if self.joined.capacity() > 4 * READ {
            self.joined = Vec::new();
        }
        self.at_line_start = true;
        self.after_cr = false;
    }

    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        if self.start == self.buf.len() {
            self.buf.clear();
        } else {
            self.buf.drain(..self.start);
        }
        self.scanned -= self.start;
        self.first_eol = self.first_eol.map(|e| e - self.start);
        self.start = 0;
    }

    /// The next complete event's data (events without data, or with empty data, are skipped);
    /// `None` when more bytes are needed.
    pub fn next_data(&mut self) -> Result<Option<&str>, SseError> {
        loop {
            let Some(end) = self.find_end() else {
                if self.buf.len() - self.start > self.max {
                    return Err(SseError::TooLarge(self.max));
                }
                return Ok(None);
            };
            let (from, to) = (self.start, end);
            let first_eol = self.first_eol.take();
            self.start = end;
            if to - from > self.max {
                return Err(SseError::TooLarge(self.max));
            }
            let data = match first_eol {
                // One `data:` line and the empty line: what servers send, read without a
                // second pass over the event.
                Some(eol)
                    if self.buf[from..eol].starts_with(b"data:")
                        && self.buf[eol..to].iter().all(|&b| b == b'\n' || b == b'\r') =>
                {
                    let a = from + 5 + usize::from(self.buf.get(from + 5) == Some(&b' '));
                    if a < eol {
                        Data::Borrowed(a - from, eol - from)
                    } else {
                        Data::None
                    }
                }
                _ => data_of(&self.buf[from..to], &mut self.joined),
            };
            match data {
                Data::None => continue,
                Data::Borrowed(a, b) => {
                    let bytes = &self.buf[from + a..from + b];
                    return simdutf8::basic::from_utf8(bytes)
                        .map(Some)
                        .map_err(|_| SseError::NotUtf8);
                }
                Data::Joined => {
                    return simdutf8::basic::from_utf8(&self.joined)
                        .map(Some)
                        .map_err(|_| SseError::NotUtf8);
                }
            }
        }
    }

    /// One past the empty line that ends the open event, if it has arrived.
    fn find_end(&mut self) -> Option<usize> {
        let mut from = self.scanned;
        while let Some(off) = memchr::memchr2(b'\n', b'\r', &self.buf[from..]) {
            let at = from + off;
            if at > from {
                // Text between line endings: the line is not empty.
                self.at_line_start = false;
                self.after_cr = false;
            }
            from = at + 1;
            let byte = self.buf[at];
            if byte == b'\n' && self.after_cr {
                // CRLF: one line ending, already counted at the CR.
                self.after_cr = false;
                continue;
            }
            let blank = self.at_line_start;
            self.at_line_start = true;
            self.after_cr = byte == b'\r';
            if !blank && self.first_eol.is_none() {
                self.first_eol = Some(at);
            }
            if blank {
                self.scanned = from;
                return Some(from);
            }
        }
        if from < self.buf.len() {
            self.at_line_start = false;
            self.after_cr = false;
        }
        self.scanned = self.buf.len();
        None
    }
}

enum Data {
    None,
    /// The one `data:` line's value, as offsets into the event.
    Borrowed(usize, usize),
    /// Several lines' values, joined with LF into the scratch buffer.
    Joined,
}

/// The data of one complete event (its bytes up to and including the empty line).
fn data_of(event: &[u8], joined: &mut Vec<u8>) -> Data {
    let mut found: Option<(usize, usize)> = None;
    let mut many = false;
    let mut at = 0;
    while at < event.len() {
        let end = memchr::memchr2(b'\n', b'\r', &event[at..]).map_or(event.len(), |o| at + o);
        let line = &event[at..end];
        let line_at = at;
        at = end + 1;
        if line.is_empty() || line[0] == b':' {
            continue;
        }
        let (name, value_at) = match memchr::memchr(b':', line) {
            Some(c) if line.get(c + 1) == Some(&b' ') => (&line[..c], c + 2),
            Some(c) => (&line[..c], c + 1),
            None => (line, line.len()),
        };
        if name != b"data" {
            continue;
        }
        let value = (line_at + value_at, line_at + line.len());
        match found {
            None if !many => found = Some(value),
            _ => {
                if let Some((a, b)) = found.take() {
                    joined.clear();
                    joined.extend_from_slice(&event[a..b]);
                    many = true;
                }
                joined.push(b'\n');
                joined.extend_from_slice(&event[value.0..value.1]);
            }
        }
    }
    match found {
        Some((a, b)) if a < b => Data::Borrowed(a, b),
        Some(_) => Data::None,
        None if many => Data::Joined,
        None => Data::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The data of every event in `reads`, fed in order, and how the stream stopped.
    fn events(reads: &[&[u8]], max: usize) -> (Vec<String>, Option<SseError>) {
        let mut e = Events::new(max);
        let mut out = Vec::new();
        for r in reads {
            e.push(r);
            loop {
                match e.next_data() {
                    Ok(Some(d)) => out.push(d.to_string()),
                    Ok(None) => break,
                    Err(err) => return (out, Some(err)),
                }
            }
        }
        (out, None)
    }

    #[test]
    fn an_empty_line_ends_the_event_whatever_the_line_endings() {
        let (d, _) = events(&[b"data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\n"], 100);
        assert_eq!(d, ["a", "b", "c", "d"]);
        // A CRLF split across reads is one line ending, not an empty line.
        let (d, _) = events(&[b"data: a\r", b"\ndata: b\r\n", b"\r\n"], 100);
        assert_eq!(d, ["a\nb"]);
        let (d, _) = events(&[b"data: a\r\n", b"\r\n", b"data: b\n", b"\n"], 100);
        assert_eq!(d, ["a", "b"]);
    }

    #[test]
    fn comments_other_fields_and_empty_data_are_not_events() {
        let (d, _) = events(
            &[b": ping\n\nevent: x\n\ndata:\n\nid: 3\ndata:{\"a\":1}\nretry: 5\n\n\n\n"],
            100,
        );
        assert_eq!(d, ["{\"a\":1}"]);
    }

    #[test]
    fn several_data_lines_are_joined() {
        let (d, _) = events(&[b"data: a\ndata\ndata: c\n\n"], 100);
        assert_eq!(d, ["a\n\nc"]);
    }

    #[test]
    fn an_event_that_never_ends_fails_past_the_cap() {
        let line = vec![b'x'; 40];
        let (d, err) = events(&[b"data: ok\n\ndata: ", &line, &line, &line], 100);
        assert_eq!(d, ["ok"]);
        assert_eq!(err, Some(SseError::TooLarge(100)));
        // Single line endings inside the event do not end it.
        let (_, err) = events(&[b"data: a\n", &line, b"\n", &line, b"\n", &line], 100);
        assert_eq!(err, Some(SseError::TooLarge(100)));
    }

    #[test]
    fn data_that_is_not_utf8_is_an_error() {
        let (_, err) = events(&[b"data: \xff\xfe\n\n"], 100);
        assert_eq!(err, Some(SseError::NotUtf8));
    }

    #[test]
    fn bytes_split_anywhere_give_the_same_events() {
        let body = b"data: {\"x\":1}\r\n\r\n: c\ndata: two\ndata: lines\n\ndata: [DONE]\n\n";
        let (whole, _) = events(&[body], 1000);
        for cut in 0..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(events(&[a, b], 1000).0, whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(events(&bytes, 1000).0, whole);
    }

    /// A reference decoder: the whole body at once, line by line, as the specification reads.
    fn reference(body: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut data: Option<Vec<u8>> = None;
        let mut i = 0;
        let mut lines = Vec::new();
        let mut start = 0;
        while i < body.len() {
            match body[i] {
                b'\n' => {
                    lines.push(&body[start..i]);
                    start = i + 1;
                }
                b'\r' => {
                    lines.push(&body[start..i]);
                    if body.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        for line in lines {
            if line.is_empty() {
                if let Some(d) = data.take().filter(|d| !d.is_empty()) {
                    out.push(d);
                }
                continue;
            }
            if line[0] == b':' {
                continue;
            }
            let (name, value) = match line.iter().position(|&b| b == b':') {
                Some(c) => {
                    let v = &line[c + 1..];
                    (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
                }
                None => (line, &[][..]),
            };
            if name == b"data" {
                match &mut data {
                    Some(d) => {
                        d.push(b'\n');
                        d.extend_from_slice(value);
                    }
                    None => data = Some(value.to_vec()),
                }
            }
        }
        out
    }

    use proptest::prelude::*;

    /// SSE-ish bodies: fields, comments, values with colons and spaces, all three line endings.
    fn body() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"data: ".to_vec()),
            Just(b"data:".to_vec()),
            Just(b"data".to_vec()),
            Just(b": c".to_vec()),
            Just(b"event: e".to_vec()),
            Just(b"{\"a\":\" x \"}".to_vec()),
            Just(b"[DONE]".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\n\n".to_vec()),
            "[a-z :]{0,6}".prop_map(String::into_bytes),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|p| p.concat())
    }

    proptest! {
        #[test]
        fn any_split_gives_the_reference_events(body in body(), cuts in proptest::collection::vec(0usize..400, 0..6)) {
            let mut at: Vec<usize> = cuts.into_iter().map(|c| c.min(body.len())).collect();
            at.push(0);
            at.push(body.len());
            at.sort_unstable();
            let reads: Vec<&[u8]> = at.windows(2).map(|w| &body[w[0]..w[1]]).collect();
            let (got, err) = events(&reads, 1 << 20);
            prop_assert_eq!(err, None);
            let want: Vec<String> = reference(&body)
                .into_iter()
                .map(|d| String::from_utf8(d).unwrap())
                .collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_stay_capped(reads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16)) {
            let mut e = Events::new(100);
            for r in &reads {
                e.push(r);
                loop {
                    match e.next_data() {
                        Ok(Some(d)) => prop_assert!(d.len() <= 100),
                        Ok(None) => break,
                        Err(_) => return Ok(()),
                    }
                }
                prop_assert!(e.buf.len() - e.start <= 100);
            }
        }
    }
}
