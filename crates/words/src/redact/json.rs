//! Secrets out of JSON without breaking it: each string literal is decoded, scrubbed with
//! [`super::secrets`] and written again, so a mask never lands inside an escape sequence or
//! outside a string (a secret that happens to read `true` or `1234` leaves numbers and
//! keywords alone). An object's keys are strings too: a key made of a secret, or of a
//! secret-shaped string, is masked like any other string. [`json_strings`] does the same to
//! a parsed value.

use std::borrow::Cow;

use serde_json::Value;

use super::scrub::secrets;

/// `text` (JSON, or JSON lines) with every string literal scrubbed. Text that is not JSON is
/// scrubbed string by string all the same: only what lies between double quotes is touched.
pub fn json(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut out = String::new();
    let mut last = 0;
    let mut i = 0;
    while let Some(open) = memchr::memchr(b'"', &b[i..]).map(|p| i + p) {
        let Some(close) = string_end(b, open + 1) else {
            break;
        };
        let literal = &text[open..=close];
        if let Some(scrubbed) = scrub_literal(literal) {
            out.push_str(&text[last..open]);
            out.push_str(&scrubbed);
            last = close + 1;
        }
        i = close + 1;
    }
    if last == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// The index of the `"` that closes the string whose contents start at `from`.
fn string_end(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The literal (quotes included) written again with its secrets masked; `None` when it has
/// none.
fn scrub_literal(literal: &str) -> Option<String> {
    let decoded: String = serde_json::from_str(literal).ok()?;
    match secrets(&decoded) {
        Cow::Borrowed(_) => None,
        Cow::Owned(s) => serde_json::to_string(&s).ok(),
    }
}

/// Scrubs every string of `v` (keys and values) in place: registered secrets, URL
/// credentials and secret-shaped strings. Field names are not judged: this is for JSON whose
/// names are the tool's own (a plan), where `session_gap` names no secret.
pub fn json_strings(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Cow::Owned(masked) = secrets(s) {
                *s = masked;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(json_strings),
        Value::Object(map) => {
            map.values_mut().for_each(json_strings);
            let secret_keys: Vec<String> = map
                .keys()
                .filter(|k| matches!(secrets(k), Cow::Owned(_)))
                .cloned()
                .collect();
            for k in secret_keys {
                if let Some(item) = map.remove(&k) {
                    map.insert(secrets(&k).into_owned(), item);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_scrubbed_and_the_json_stays_valid() {
        super::super::register("tr\"ue\\n-secret");
        let v = serde_json::json!({
            "a": "x tr\"ue\\n-secret y",
            "url": "http://u:p@h/v1",
            "n": 1234,
            "k": true,
        });
        let text = serde_json::to_string_pretty(&v).unwrap();
        let got = json(&text);
        let back: Value = serde_json::from_str(&got).unwrap();
        assert_eq!(back["a"], "x *** y");
        assert_eq!(back["url"], "http://***@h/v1");
        assert_eq!(back["n"], 1234);
        assert_eq!(back["k"], true);
    }

    #[test]
    fn a_secret_after_an_escape_does_not_split_it() {
        super::super::register("nabcdef-99");
        let text = r#"{"a":"x\nabcdef-99"}"#;
        let got = json(text);
        let back: Value = serde_json::from_str(&got).unwrap();
        assert_eq!(back["a"], "x\nabcdef-99", "the escape is not the secret");
        let text = r#"{"a":"xnabcdef-99"}"#;
        let back: Value = serde_json::from_str(&json(text)).unwrap();
        assert_eq!(back["a"], "x***");
    }

    #[test]
    fn strings_and_keys_are_scrubbed_and_names_not_judged() {
        let mut v = serde_json::json!({
            "session_gap": "5s",
            "list": ["sk-abcdefghijkl"],
            "sk-abcdefghijkl": 3,
            "n": 3,
        });
        json_strings(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"session_gap": "5s", "list": ["***"], "***": 3, "n": 3})
        );
    }

    #[test]
    fn text_without_strings_to_scrub_is_borrowed() {
        assert!(matches!(
            json(r#"{"a": "b", "n": [1, 2]}"#),
            Cow::Borrowed(_)
        ));
        assert!(matches!(json("not json \"unterminated"), Cow::Borrowed(_)));
    }
}
