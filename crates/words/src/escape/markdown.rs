//! GitHub-flavoured Markdown: a value safe anywhere inline, a table cell included. What a
//! hostile value could do there, and what stops it:
//!
//! - raw HTML (`<img src=x onerror=…>`, `<script>`, `</details>`): `<`, `>` and `&` become
//!   entities, which GitHub shows as the characters;
//! - links, images, emphasis, strike-through, code, math, a table cell's end: `\`, `` ` ``,
//!   `*`, `_`, `[`, `]`, `|`, `~`, `$` are backslash-escaped;
//! - a line break (a new table row, a heading, a block quote): line breaks and tabs become
//!   spaces, and a value that would begin a list or a thematic break has its first mark
//!   escaped;
//! - `@someone` and `@org/team` (a notification), `#123` and `GH-123` (a cross-reference),
//!   `http://…` and `www.…` (an autolink), `javascript:` / `data:` / `vbscript:` text: a zero
//!   width joiner (U+200D) goes after the `@` or `#`, inside `://` and `www.` and before the
//!   scheme's `:`, so the text reads the same and GitHub finds nothing to link;
//! - control characters and bidi overrides: shown escaped (`\u{202e}`).

use super::hidden::{is_hidden, shown};

/// The zero width joiner that breaks a mention, reference or autolink.
const ZWJ: char = '\u{200d}';

/// Schemes whose text is made inert (the only dangerous link targets; `http` is an autolink).
const SCHEMES: [&str; 4] = ["javascript", "vbscript", "data", "file"];

/// `s` (secrets masked) escaped as inline GitHub-flavoured Markdown.
pub fn markdown(s: &str) -> String {
    let s = crate::redact::secrets(s);
    let mut out = String::with_capacity(s.len() + 8);
    let chars: Vec<char> = s.chars().collect();
    if starts_block(&s) {
        out.push('\\');
    }
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\n' | '\r' | '\t' | '\u{85}' | '\u{2028}' | '\u{2029}' => out.push(' '),
            c if is_hidden(c) => shown(&mut out, c),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '@' | '#' => {
                out.push(c);
                out.push(ZWJ);
            }
            ':' if ends_scheme(&chars[..i]) => {
                out.push(ZWJ);
                out.push(':');
            }
            ':' if chars[i + 1..].starts_with(&['/', '/']) => {
                out.push(':');
                out.push(ZWJ);
            }
            '-' if i >= 2
                && chars[i - 2..i]
                    .iter()
                    .collect::<String>()
                    .eq_ignore_ascii_case("gh") =>
            {
                out.push(ZWJ);
                out.push('-');
            }
            '.' if i >= 3
                && chars[i - 3..i]
                    .iter()
                    .collect::<String>()
                    .eq_ignore_ascii_case("www") =>
            {
                out.push(ZWJ);
                out.push('.');
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether `before` ends with a dangerous scheme's name (`…javascript` before a `:`).
fn ends_scheme(before: &[char]) -> bool {
    SCHEMES.iter().any(|scheme| {
        let n = scheme.len();
        before.len() >= n
            && before[before.len() - n..]
                .iter()
                .collect::<String>()
                .eq_ignore_ascii_case(scheme)
    })
}

/// Whether `s` would begin a block where it began a line: a list item (`- `, `+ `, `1. `),
/// or a thematic break or setext underline (`---`, `===`). (`#`, `>` and `*` are escaped
/// wherever they stand.)
fn starts_block(s: &str) -> bool {
    let t = s.trim_start();
    let mut chars = t.chars();
    match chars.next() {
        Some('-' | '+' | '=') => {
            let rest = chars.as_str();
            rest.is_empty()
                || rest.starts_with([' ', '\t'])
                || t.chars().all(|c| "-=+ ".contains(c))
        }
        Some(c) if c.is_ascii_digit() => {
            let after = t.trim_start_matches(|c: char| c.is_ascii_digit());
            (after.starts_with(". ") || after.starts_with(") ")) && t.len() - after.len() <= 9
        }
        _ => false,
    }
}

/// `s` as code: a code span when it can be one — its text is then shown literally (no tag,
/// entity, link, mention or escape is read inside a code span) — that is, when it holds no
/// backtick, no `|` (which ends a table cell even there), no control character or bidi
/// override; otherwise `<code>` around its [`markdown`] escape, which GitHub shows the same.
pub fn markdown_code(s: &str) -> String {
    let s = crate::redact::secrets(s);
    if is_inert(&s) {
        return format!("`{s}`");
    }
    format!("<code>{}</code>", markdown(&s))
}

fn is_inert(s: &str) -> bool {
    !s.trim().is_empty() && !s.chars().any(|c| matches!(c, '`' | '|') || is_hidden(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            markdown("<img src=x onerror=alert(1)>"),
            "&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(markdown("a|b"), "a\\|b");
        assert_eq!(
            markdown("[x](javascript:alert(1))"),
            "\\[x\\](javascript\u{200d}:alert(1))"
        );
        assert_eq!(
            markdown("**bold** _x_ `c` ~~s~~ $m$"),
            "\\*\\*bold\\*\\* \\_x\\_ \\`c\\` \\~\\~s\\~\\~ \\$m\\$"
        );
        assert_eq!(markdown("a\nb\r\n# c"), "a b  #\u{200d} c");
    }

    #[test]
    fn mentions_references_and_autolinks_are_broken() {
        assert_eq!(markdown("@octocat"), "@\u{200d}octocat");
        assert_eq!(markdown("#123 GH-45"), "#\u{200d}123 GH\u{200d}-45");
        assert_eq!(
            markdown("https://evil.example"),
            "https:\u{200d}//evil.example"
        );
        assert_eq!(markdown("www.evil.example"), "www\u{200d}.evil.example");
        assert_eq!(markdown("DATA:text/html"), "DATA\u{200d}:text/html");
    }

    #[test]
    fn block_starts_are_escaped_and_numbers_are_not() {
        assert_eq!(markdown("- item"), "\\- item");
        assert_eq!(markdown("---"), "\\---");
        assert_eq!(markdown("1. first"), "\\1. first");
        assert_eq!(markdown("-1.5"), "-1.5");
        assert_eq!(markdown("12.5 ms"), "12.5 ms");
    }

    #[test]
    fn controls_and_bidi_are_shown() {
        assert_eq!(
            markdown("a\u{1b}[31mb\u{202e}c"),
            "a\\u{1b}\\[31mb\\u{202e}c"
        );
    }

    #[test]
    fn code_is_a_span_when_inert_and_a_tag_otherwise() {
        assert_eq!(markdown_code("ttft.p95 < 200ms"), "`ttft.p95 < 200ms`");
        assert_eq!(markdown_code("a_b <script> x@y"), "`a_b <script> x@y`");
        assert_eq!(markdown_code("a`b"), "<code>a\\`b</code>");
        assert_eq!(markdown_code("a|<b>"), "<code>a\\|&lt;b&gt;</code>");
        assert_eq!(markdown_code("a\nb"), "<code>a b</code>");
        assert_eq!(markdown_code("- x"), "`- x`");
    }
}
