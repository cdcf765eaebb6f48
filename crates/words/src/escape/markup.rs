//! HTML and XML 1.0 text and attribute values: `&`, `<`, `>`, `"` and `'` as entities, and
//! what XML 1.0 forbids even escaped (C0 controls but tab, line feed and carriage return,
//! U+FFFE, U+FFFF) shown as an escape instead, with the other control characters and the
//! bidi overrides, so the document stays well-formed and reads as it was written.

use super::hidden::{is_hidden, shown};

/// `s` (secrets masked) for HTML text or a quoted attribute value.
pub fn html(s: &str) -> String {
    escape(s, "&#39;")
}

/// `s` (secrets masked) for XML 1.0 text or a quoted attribute value: junit.xml and SVG.
pub fn xml(s: &str) -> String {
    escape(s, "&apos;")
}

fn escape(s: &str, apos: &str) -> String {
    let s = crate::redact::secrets(s);
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str(apos),
            '\t' | '\n' | '\r' => out.push(c),
            c if is_hidden(c) => shown(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_forbidden_characters() {
        assert_eq!(
            html("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        let x = xml("a\u{1}b\u{fffe}c\u{ffff}d\u{1b}e\u{202e}f\tg");
        assert_eq!(x, "a\\u{1}b\\u{fffe}c\\u{ffff}d\\u{1b}e\\u{202e}f\tg");
        let doc = format!(
            "<r a=\"{}\">{}</r>",
            xml("x'\"<&\u{0}"),
            xml("\u{8}\u{b}\u{c}")
        );
        roxmltree::Document::parse(&doc).unwrap();
    }
}
