//! The characters that must never reach a reader as they are, and how each sink shows them
//! instead (`\u{1b}`): every escaper of `escape/` uses these two.

use std::fmt::Write as _;

/// Whether `c` must never reach a reader as it is: a control character (C0, DEL, C1), a
/// bidirectional override or isolate (which reorder what is shown), or one of the two
/// non-characters XML forbids.
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{fffe}'
                | '\u{ffff}'
        )
}

/// `c` shown as an escape: `\n`, `\r`, `\t`, or `\u{1b}`.
pub(crate) fn shown(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters() {
        for c in [
            '\u{1b}', '\u{7}', '\u{0}', '\u{7f}', '\u{9b}', '\u{202e}', '\u{2066}', '\u{fffe}',
        ] {
            assert!(is_hidden(c), "{c:?}");
        }
        for c in ['a', ' ', 'é', '中', '\u{200d}', '✅'] {
            assert!(!is_hidden(c), "{c:?}");
        }
        let mut s = String::new();
        shown(&mut s, '\u{1b}');
        shown(&mut s, '\n');
        assert_eq!(s, "\\u{1b}\\n");
    }
}
