//! What a request header written in a scenario may hold: a name that is an HTTP token and a
//! value on one line of printable ASCII. The client would refuse anything else when the run
//! starts; refused here, a CR or LF in a value can never reach the wire as a second header
//! (header injection), and `validate` says so before any run.

/// Why `name` cannot be sent as a header name, or `None` when it can.
pub fn header_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the header name is empty".into());
    }
    name.chars().find(|&c| !is_token_char(c)).map(|c| {
        format!(
            "the header name has {}; a name is letters, digits and !#$%&'*+-.^_`|~",
            describe(c)
        )
    })
}

/// Why `value` cannot be sent as a header value, or `None` when it can.
pub fn header_value_problem(value: &str) -> Option<String> {
    value
        .chars()
        .find(|&c| !(c == '\t' || (' '..='~').contains(&c)))
        .map(|c| {
            format!(
                "the value has {}; a header value is one line of printable ASCII",
                describe(c)
            )
        })
}

/// RFC 9110's `tchar`.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// A character as an error can show it without printing it: a control character by name.
fn describe(c: char) -> String {
    match c {
        '\r' => "a carriage return (CR)".into(),
        '\n' => "a line feed (LF)".into(),
        ' ' => "a space".into(),
        c if c.is_control() => format!("a control character (U+{:04X})", u32::from(c)),
        c if !c.is_ascii() => format!("a non-ASCII character (U+{:04X})", u32::from(c)),
        c => format!("`{c}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_tokens_and_values_one_printable_line() {
        assert_eq!(header_name_problem("X-Team"), None);
        assert_eq!(header_value_problem("perf\tq=1 ~!"), None);
        assert_eq!(header_value_problem(""), None);
        for (name, value, says) in [
            ("", "v", "empty"),
            ("X Team", "v", "a space"),
            ("X:Team", "v", "`:`"),
            ("X-A", "b\r\nEvil: 1", "carriage return"),
            ("X-A", "b\nEvil: 1", "line feed"),
            ("X-A", "b\u{0}", "U+0000"),
            ("X-A", "b\u{7f}", "U+007F"),
            ("X-A", "caf\u{e9}", "non-ASCII"),
        ] {
            let p = header_name_problem(name)
                .or_else(|| header_value_problem(value))
                .unwrap_or_default();
            assert!(p.contains(says), "{name:?} {value:?}: {p}");
        }
    }
}
