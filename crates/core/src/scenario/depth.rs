//! How deeply a scenario's children blocks (`{ … }`) nest, measured on the raw text before the
//! kdl parser sees it, so that a file nested too deep gets a diagnostic at the `{` that goes
//! one level too far rather than kdl's errors.
//!
//! A small KDL 2 lexer: braces inside strings (quoted, multi-line, raw with any number of `#`)
//! and comments (`//` and nested `/* */`) do not count. Slashdashed blocks (`/- { … }`) do,
//! since kdl parses them too. On a malformed file (an unterminated string, say) it may read
//! differently from kdl's error recovery, so it is not what keeps the parser within its
//! stack: [`super::syntax`] is.

/// The deepest nesting a scenario may have. Real scenarios use three or four levels
/// (`stage { arrival … { … } }`); the parser's stack would take several hundred.
pub const MAX_DEPTH: usize = 64;

/// The byte offset of the first `{` that opens a block deeper than [`MAX_DEPTH`], if any.
pub fn too_deep(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i);
                }
                i += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = line_end(b, i);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = block_comment_end(b, i);
            }
            b'"' => {
                i = quoted_end(b, i);
            }
            b'#' => {
                let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                i = if b.get(i + hashes) == Some(&b'"') {
                    raw_end(b, i + hashes, hashes)
                } else {
                    // A keyword (`#true`, `#null`, `#inf`…).
                    i + hashes
                };
            }
            _ => i += 1,
        }
    }
    None
}

/// Past the end of the line at `i` (KDL's newlines: `\n`, `\r`, form feed, NEL, LS, PS).
fn line_end(b: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'\n' | b'\r' | 0x0C => return j + 1,
            // U+0085 (C2 85), U+2028 and U+2029 (E2 80 A8/A9).
            0xC2 if b.get(j + 1) == Some(&0x85) => return j + 2,
            0xE2 if b.get(j + 1) == Some(&0x80) && matches!(b.get(j + 2), Some(0xA8 | 0xA9)) => {
                return j + 3;
            }
            _ => j += 1,
        }
    }
    b.len()
}

/// Past the `*/` closing the block comment opened at `i`; block comments nest.
fn block_comment_end(b: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j + 1 < b.len() {
        match (b[j], b[j + 1]) {
            (b'/', b'*') => {
                depth += 1;
                j += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    return j;
                }
            }
            _ => j += 1,
        }
    }
    b.len()
}

/// Past the string opened by the `"` at `i`: `"…"` or `"""…"""`, backslash escapes skipped.
fn quoted_end(b: &[u8], i: usize) -> usize {
    let multi = b[i..].starts_with(b"\"\"\"");
    let mut j = if multi { i + 3 } else { i + 1 };
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' if !multi => return j + 1,
            b'"' if b[j..].starts_with(b"\"\"\"") => return j + 3,
            _ => j += 1,
        }
    }
    b.len()
}

/// Past the raw string whose opening `"` (after `hashes` `#`) is at `q`: it ends at a `"`
/// followed by as many `#`; no escapes.
fn raw_end(b: &[u8], q: usize, hashes: usize) -> usize {
    let multi = b[q..].starts_with(b"\"\"\"");
    let mut j = if multi { q + 3 } else { q + 1 };
    while j < b.len() {
        let close = if multi {
            b[j..].starts_with(b"\"\"\"")
        } else {
            b[j] == b'"'
        };
        let quote_len = if multi { 3 } else { 1 };
        if close
            && b[j + quote_len..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == b'#')
                .count()
                == hashes
        {
            return j + quote_len + hashes;
        }
        j += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("stage \"a\" {}{}", "{ x ".repeat(n), "}".repeat(n))
    }

    #[test]
    fn counts_blocks_and_stops_at_the_first_too_deep() {
        assert_eq!(too_deep(&nested(MAX_DEPTH)), None);
        let deep = nested(MAX_DEPTH + 1);
        let at = too_deep(&deep).unwrap();
        assert_eq!(&deep[at..at + 1], "{");
        assert_eq!(deep[..at].matches('{').count(), MAX_DEPTH);
    }

    #[test]
    fn braces_in_strings_and_comments_do_not_count() {
        let many = "{".repeat(MAX_DEPTH * 2);
        for text in [
            format!("a \"{many}\""),
            format!("a \"\\\"{many}\""),
            format!("a \"\"\"\n\"{many}\n\"\"\""),
            format!("a #\"\"{many}\"#"),
            format!("a ##\"\"#{many}\"##"),
            format!("a #\"\"\"\n\"\"\"{many}\n\"\"\"#"),
            format!("// {many}\na"),
            format!("/* /* */ {many} */ a"),
        ] {
            assert_eq!(too_deep(&text), None, "{text}");
        }
        // After the string or comment ends, braces count again.
        assert!(too_deep(&format!("a \"x\" {many}")).is_some());
        assert!(too_deep(&format!("/* x */ {many}")).is_some());
        assert!(too_deep(&format!("a #true {many}")).is_some());
    }
}
