//! The terminal and CI logs. A value printed there could move the cursor, rewrite the line,
//! set the window title or a hyperlink (ESC and the other control characters), reorder what
//! is shown (bidi overrides), or, read by GitHub Actions, run a workflow command (a line
//! beginning with `::`, such as `::add-mask::`, `::stop-commands::` or `::error::`; the old
//! form `##[…]` too). So every value from outside is shown with its control characters and
//! bidi overrides escaped ([`terminal`]), and everything printed goes through [`console`],
//! which does the same to whole text (keeping its line breaks, tabs and, when colour is on,
//! the colour codes infermeter writes itself) and starts any line that would be a workflow
//! command with a `\`.

use super::hidden::{is_hidden, shown};

/// One value from outside (a server's string, a name from a scenario or a results file),
/// secrets masked and every control character and bidi override shown escaped (`\u{1b}`,
/// `\n`): printed, it stays on its line and shows exactly what it holds.
pub fn terminal(s: &str) -> String {
    let s = crate::redact::secrets(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_hidden(c) {
            shown(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Text to print as it is (a summary, an error, a progress line), secrets masked, control
/// characters other than line breaks and tabs shown escaped (colour codes — `ESC [ … m` —
/// kept when `styled`), and every line that GitHub Actions would read as a workflow command
/// (`::…` or `##[…`, after leading spaces) started with `\`.
pub fn console(text: &str, styled: bool) -> String {
    let text = crate::redact::secrets(text);
    let mut out = String::with_capacity(text.len() + 8);
    let mut line_start = true;
    let mut rest = text.as_ref();
    while let Some(c) = rest.chars().next() {
        if line_start {
            let t = rest.trim_start_matches([' ', '\t']);
            if t.starts_with("::") || t.starts_with("##[") {
                out.push('\\');
            }
            line_start = false;
        }
        let len = if c == '\u{1b}' && styled {
            sgr_len(rest)
        } else {
            0
        };
        if len > 0 {
            out.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        }
        match c {
            '\n' => {
                out.push('\n');
                line_start = true;
            }
            '\t' => out.push('\t'),
            c if is_hidden(c) => shown(&mut out, c),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The length of a colour code (`ESC [ digits and ; m`) at the start of `s`, 0 if none.
fn sgr_len(s: &str) -> usize {
    let Some(body) = s.strip_prefix("\u{1b}[") else {
        return 0;
    };
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    if body.as_bytes().get(params) == Some(&b'm') && params <= 16 {
        2 + params + 1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_stays_on_its_line() {
        assert_eq!(
            terminal("vllm\u{1b}]0;pwned\u{7}\n::error::x\u{202e}"),
            "vllm\\u{1b}]0;pwned\\u{7}\\n::error::x\\u{202e}"
        );
    }

    #[test]
    fn workflow_commands_are_neutralised_and_colour_kept_when_asked() {
        let text = "ok\n::add-mask::x\n  ::error::y\n##[group]z\n\u{1b}[1;32mPASSED\u{1b}[0m \u{1b}[2J\r\n";
        assert_eq!(
            console(text, true),
            "ok\n\\::add-mask::x\n\\  ::error::y\n\\##[group]z\n\u{1b}[1;32mPASSED\u{1b}[0m \\u{1b}[2J\\r\n"
        );
        assert_eq!(console("\u{1b}[31mx", false), "\\u{1b}[31mx");
        assert_eq!(console("a: b :: c\n", false), "a: b :: c\n");
    }
}
