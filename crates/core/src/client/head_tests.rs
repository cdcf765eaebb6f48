use super::*;

fn head(text: &[u8]) -> Result<Option<Head>, BadHead> {
    parse(text)
}

fn ok(text: &[u8]) -> Head {
    head(text).unwrap().expect("a complete head")
}

#[test]
fn a_plain_head_its_framing_and_where_the_body_starts() {
    let text =
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nx-infermeter-sim-id: 7\r\n\r\n5\r\n";
    let h = ok(text);
    assert_eq!(h.status, 200);
    assert_eq!(h.framing, Framing::chunked());
    assert!(h.keep_alive && h.reusable());
    assert_eq!(h.sim_id, Some(7));
    assert_eq!(&text[h.len..], b"5\r\n");
    let h = ok(b"HTTP/1.1 429 Too Many\r\nContent-Length: 12\r\n\r\n");
    assert_eq!((h.status, h.framing), (429, Framing::Length(12)));
    // Every prefix is "not yet".
    for cut in 0..text.len() - 3 {
        assert_eq!(head(&text[..cut]), Ok(None), "cut {cut}");
    }
}

#[test]
fn interim_responses_are_skipped_within_a_bound() {
    let mut text =
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: x\r\n\r\n".to_vec();
    text.extend_from_slice(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx");
    let h = ok(&text);
    assert_eq!(h.status, 200);
    assert_eq!(&text[h.len..], b"x");
    let flood = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_INTERIM + 1);
    assert_eq!(head(&flood), Err(BadHead::TooManyInterim));
    assert_eq!(head(&flood[..flood.len() - 1]), Ok(None));
}

#[test]
fn what_the_client_cannot_read_is_refused() {
    let line = format!("HTTP/1.1 200 OK\r\nx: {}\r\n\r\n", "a".repeat(MAX_HEAD));
    assert_eq!(head(line.as_bytes()), Err(BadHead::TooLarge));
    // Refused as soon as the cap is passed, not when the line ends.
    assert_eq!(
        head(&line.as_bytes()[..MAX_HEAD + 1]),
        Err(BadHead::TooLarge)
    );
    let many: String = (0..10_000).map(|i| format!("x-{i}: 1\r\n")).collect();
    let many = format!("HTTP/1.1 200 OK\r\n{many}\r\n");
    assert_eq!(head(many.as_bytes()), Err(BadHead::TooManyHeaders));
    // An HTTP/2 server's SETTINGS frame, as one answers an HTTP/1.1 request on a
    // prior-knowledge h2 port.
    let settings =
        b"\x00\x00\x12\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64\x00\x04\x00\x01\x00\x00";
    assert_eq!(head(settings), Err(BadHead::Http2));
    assert!(matches!(
        head(b"\x16\x03\x01 garbage"),
        Err(BadHead::Unparsable(_))
    ));
    assert!(matches!(
        head(b"HTTP/2 200\r\n\r\n"),
        Err(BadHead::Unparsable(_))
    ));
    for status in [b"101", b"099", b"600", b"000"] {
        let mut text = b"HTTP/1.1 ".to_vec();
        text.extend_from_slice(status);
        text.extend_from_slice(b" X\r\n\r\n");
        assert!(
            matches!(head(&text), Err(BadHead::BadStatus(_))),
            "{status:?}"
        );
    }
}

#[test]
fn lengths_must_agree_and_be_plain_digits() {
    let h = ok(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nContent-Length: 5, 5\r\n\r\n");
    assert_eq!(h.framing, Framing::Length(5));
    for bad in [
        &b"content-length: 5\r\ncontent-length: 6"[..],
        b"content-length: 5, 6",
        b"content-length: 6\r\ncontent-length: 5",
    ] {
        let text = [b"HTTP/1.1 200 OK\r\n", bad, b"\r\n\r\n"].concat();
        assert_eq!(head(&text), Err(BadHead::ConflictingLength), "{bad:?}");
    }
    for bad in ["+5", "-1", "5 5", "0x5", "", "18446744073709551616", "５"] {
        let text = format!("HTTP/1.1 200 OK\r\ncontent-length: {bad}\r\n\r\n");
        assert_eq!(head(text.as_bytes()), Err(BadHead::BadLength), "{bad:?}");
    }
}

#[test]
fn transfer_encoding_follows_rfc_9112() {
    let te = |v: &str| {
        head(format!("HTTP/1.1 200 OK\r\ntransfer-encoding: {v}\r\n\r\n").as_bytes())
            .map(|h| h.map(|h| h.framing))
    };
    assert_eq!(te("Chunked"), Ok(Some(Framing::chunked())));
    assert_eq!(te("gzip, chunked"), Ok(Some(Framing::chunked())));
    // Another coding last: the body ends at the close.
    assert_eq!(te("gzip"), Ok(Some(Framing::Close)));
    assert_eq!(te("chunked, gzip"), Err(BadHead::BadTransferEncoding));
    assert_eq!(te("chunked, chunked"), Err(BadHead::BadTransferEncoding));
    assert_eq!(te("notchunked"), Ok(Some(Framing::Close)));
    let both = b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n";
    assert_eq!(head(both), Err(BadHead::LengthAndTransferEncoding));
    let old = b"HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
    assert_eq!(head(old), Err(BadHead::BadTransferEncoding));
    let split = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntransfer-encoding: gzip\r\n\r\n";
    assert_eq!(head(split), Err(BadHead::BadTransferEncoding));
}

#[test]
fn which_connections_may_carry_another_request() {
    let reusable = |text: &[u8]| ok(text).reusable();
    assert!(reusable(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"));
    assert!(reusable(
        b"HTTP/1.1 200 OK\r\nconnection: keep-alive\r\ntransfer-encoding: chunked\r\n\r\n"
    ));
    // Said to close, HTTP/1.0, no delimited end, or no body to check the end of.
    assert!(!reusable(
        b"HTTP/1.1 200 OK\r\nconnection: keep-alive, Close\r\ncontent-length: 2\r\n\r\n"
    ));
    assert!(!reusable(b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n"));
    assert!(!reusable(b"HTTP/1.1 200 OK\r\n\r\n"));
    assert!(!reusable(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"));
    assert!(!reusable(
        b"HTTP/1.1 304 Not Modified\r\ncontent-length: 20\r\n\r\n"
    ));
    let h = ok(b"HTTP/1.1 204 No Content\r\ntransfer-encoding: chunked\r\n\r\n");
    assert_eq!(h.framing, Framing::Length(0));
    assert!(!h.reusable());
}
