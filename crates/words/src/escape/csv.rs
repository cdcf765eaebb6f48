//! A CSV text cell (RFC 4180), safe to open in a spreadsheet: a cell that begins with `=`,
//! `+`, `-`, `@`, a tab or a carriage return would be read as a formula (formula injection,
//! OWASP's "CSV Injection"), so it starts with `'`; a cell with a comma, quote or line break
//! is quoted. Only text cells go through here: numbers are written as numbers, so a negative
//! latency change stays a number.

use super::hidden::{is_hidden, shown};

/// `s` (secrets masked) as one CSV text cell.
pub fn csv_cell(s: &str) -> String {
    let s = crate::redact::secrets(s);
    let mut cell = String::with_capacity(s.len() + 2);
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        cell.push('\'');
    }
    for c in s.chars() {
        match c {
            '\t' | '\n' | '\r' => cell.push(c),
            c if is_hidden(c) => shown(&mut cell, c),
            c => cell.push(c),
        }
    }
    if cell.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_text() {
        assert_eq!(
            csv_cell("=HYPERLINK(\"http://x\")"),
            "\"'=HYPERLINK(\"\"http://x\"\")\""
        );
        assert_eq!(csv_cell("+1"), "'+1");
        assert_eq!(csv_cell("-2+3"), "'-2+3");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_cell("\t=1"), "'\t=1");
        assert_eq!(csv_cell("\r=1"), "\"'\r=1\"");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a\u{1b}b"), "a\\u{1b}b");
    }
}
