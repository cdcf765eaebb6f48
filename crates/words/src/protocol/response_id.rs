//! A response's id, as the Responses API's server names it (`response.id` in the stream's
//! `response.created` and `response.completed` events, or a whole answer's `id`), judged once
//! per response before a later turn sends it back as `previous_response_id`
//! (`session state="previous-response-id"`); and the two fields such a turn adds to its body.
//!
//! The id is the server's text, sent back to the server and never written to a report: a
//! hostile server may send none, a huge one, or one holding control characters or markup. One
//! longer than [`MAX_ID_BYTES`] is not believed (nor kept: nothing of its size is allocated);
//! one holding anything but printable ASCII is refused (every server known, OpenAI, vLLM and
//! SGLang, names responses `resp_` and letters, digits, `-` or `_`). A missing or refused id
//! fails the turn that brought it when a later turn needs it (`response_id_missing`,
//! `response_id_too_long`, `response_id_unprintable` in `requests.errors`).

use bytes::Bytes;

use super::body::json_str;
use super::chunk::JsonStr;
pub use super::responses::MAX_ID_BYTES;

/// A response's id, judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseId {
    /// An id a later turn may send back.
    Usable(Box<str>),
    /// Longer than [`MAX_ID_BYTES`]: its length in bytes (as the server escaped it).
    TooLong(usize),
    /// Empty, or holding a character other than printable ASCII (a control character, a
    /// space, anything beyond ASCII).
    Unprintable,
}

impl ResponseId {
    /// Judges the id as a stream's event carried it: its length before decoding (an escape
    /// is at most 6 bytes for one decoded byte), then its decoded text. Allocates only the
    /// usable id, once.
    pub fn judge_json(s: &JsonStr<'_>) -> ResponseId {
        if let Some(raw) = s.raw()
            && raw.len() > 6 * MAX_ID_BYTES
        {
            return ResponseId::TooLong(raw.len());
        }
        ResponseId::judge(&s.decode())
    }

    /// Judges a decoded id.
    pub fn judge(id: &str) -> ResponseId {
        if id.len() > MAX_ID_BYTES {
            ResponseId::TooLong(id.len())
        } else if id.is_empty() || !id.bytes().all(|b| b.is_ascii_graphic()) {
            ResponseId::Unprintable
        } else {
            ResponseId::Usable(id.into())
        }
    }

    /// The id, when a later turn may send it back.
    pub fn usable(&self) -> Option<&str> {
        match self {
            ResponseId::Usable(id) => Some(id),
            _ => None,
        }
    }
}

/// `body` (a JSON object) with `"store":true` and, when given, `"previous_response_id"`
/// added before its closing brace: a turn of a session the server keeps. A body that is not
/// an object (a `request` hook's doing) is left as it is.
pub fn continued_body(body: Bytes, previous: Option<&str>) -> Bytes {
    let Some(head) = body.strip_suffix(b"}") else {
        return body;
    };
    let mut out = Vec::with_capacity(body.len() + 48 + previous.map_or(0, str::len));
    out.extend_from_slice(head);
    // `{}` has no member before ours.
    if head.trim_ascii_end() != b"{" {
        out.push(b',');
    }
    out.extend_from_slice(b"\"store\":true");
    if let Some(id) = previous {
        out.extend_from_slice(b",\"previous_response_id\":");
        json_str(&mut out, id);
    }
    out.push(b'}');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_judged_by_length_and_characters() {
        assert_eq!(
            ResponseId::judge("resp_abc-12_3"),
            ResponseId::Usable("resp_abc-12_3".into())
        );
        let long = "r".repeat(MAX_ID_BYTES + 1);
        assert_eq!(
            ResponseId::judge(&long),
            ResponseId::TooLong(MAX_ID_BYTES + 1)
        );
        assert_eq!(
            ResponseId::judge(&"r".repeat(MAX_ID_BYTES))
                .usable()
                .map(str::len),
            Some(MAX_ID_BYTES)
        );
        for bad in [
            "",
            "resp\u{1b}[2J",
            "resp 1",
            "resp\n",
            "résp",
            "resp\u{202e}",
        ] {
            assert_eq!(ResponseId::judge(bad), ResponseId::Unprintable, "{bad:?}");
        }
        // Markup is printable: kept, and only ever written back as a JSON string.
        assert!(ResponseId::judge("<script>").usable().is_some());
    }

    #[test]
    fn a_continued_body_carries_store_and_the_previous_id() {
        let body = Bytes::from_static(br#"{"model":"m","input":"hi"}"#);
        let out = continued_body(body.clone(), Some("resp_\"1"));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["store"], true);
        assert_eq!(v["previous_response_id"], "resp_\"1");
        assert_eq!(v["input"], "hi");
        let first: serde_json::Value = serde_json::from_slice(&continued_body(body, None)).unwrap();
        assert_eq!(first["store"], true);
        assert!(first.get("previous_response_id").is_none());
        let empty: serde_json::Value =
            serde_json::from_slice(&continued_body(Bytes::from_static(b"{}"), None)).unwrap();
        assert_eq!(empty["store"], true);
        assert_eq!(
            &continued_body(Bytes::from_static(b"[1]"), None)[..],
            b"[1]"
        );
    }
}
