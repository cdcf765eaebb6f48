//! Running the kdl parser where it cannot overflow its stack. kdl 6 recurses once per block
//! level (`{`), once per token inside a `/* */` comment (and per nested comment), and once per
//! place where it gives up on the rest of the document and resumes after one character — so a
//! few kilobytes of stray `}`, of `*` in a comment, or of blocks behind an unterminated string
//! (which [`super::depth`]'s lexer reads differently from kdl) would abort the process.
//!
//! No lexer can agree with kdl's error recovery about what is nested, so the bound here does
//! not try: every recursion consumes at least one byte, every block level a `{` and every
//! comment level a `*` or `/` (or a run of other bytes between two of them), so the stack a
//! parse can need is at most [`stack_bound`]'s sum over the text's bytes, braces, stars and
//! slashes, each at the most one level has been measured to take (with margin, in the build
//! that takes the most). The parse runs on a thread with that much stack, reserved, not
//! committed: pages are touched only as deep as the parser really goes. A text whose bound
//! passes [`MAX_PARSE_STACK`] is refused unparsed. The document it returns is then measured
//! without recursion, and one nested deeper than [`MAX_DEPTH`] is dropped on that thread and
//! refused, so the decoding after it (which recurses too) never sees more than that.

use kdl::{KdlDocument, KdlError};
use miette::SourceSpan;

use super::depth::MAX_DEPTH;

/// Why [`parse`] returns no document.
pub enum Unparsed {
    /// kdl's diagnostics.
    Syntax(KdlError),
    /// A block deeper than [`MAX_DEPTH`], at this node.
    TooDeep(SourceSpan),
    /// The text could need more than [`MAX_PARSE_STACK`] bytes of stack.
    TooLarge { needed: usize },
    /// The parser's thread could not be started with the stack it needs.
    NoStack {
        needed: usize,
        source: std::io::Error,
    },
}

/// The most stack a parse may reserve. A 3 KB scenario needs some 25 MiB in a debug build and
/// 10 MiB in a release build; this allows texts of some 80 KiB in a debug build and 250 KiB in
/// a release build (the largest example scenario is 2.5 KB). kdl takes about 20 µs and 1.5 KB
/// per resumption, so the worst such text is refused within seconds and some 400 MB.
pub const MAX_PARSE_STACK: usize = 512 << 20;

/// Stack per byte of text, per `{`, and per `*` or `/`, each about twice the most one level
/// was measured to take with kdl 6.7 on x86_64: unoptimised (a library user's debug build),
/// or optimised under AddressSanitizer (`cargo fuzz`), 33 KB per block level, 3.3 KB per
/// resumption and 4.6 KB per `*` or `/` in a comment. Release builds (optimised dependencies,
/// as this crate's own dev profile has too) measure 6.7 KB, 0.65 KB and 1.2 KB.
#[cfg(any(debug_assertions, fuzzing))]
const PER: Per = Per {
    byte: 6 << 10,
    brace: 64 << 10,
    comment: 8 << 10,
};
#[cfg(not(any(debug_assertions, fuzzing)))]
const PER: Per = Per {
    byte: 2 << 10,
    brace: 16 << 10,
    comment: 3 << 10,
};

/// What the thread needs besides the parser's recursion.
const BASE_STACK: usize = 2 << 20;

struct Per {
    byte: usize,
    brace: usize,
    comment: usize,
}

/// The most stack kdl can need to parse `text` (see the module's documentation).
pub fn stack_bound(text: &str) -> usize {
    let b = text.as_bytes();
    let count = |f: fn(&u8) -> bool| b.iter().filter(|c| f(c)).count();
    let braces = count(|&c| c == b'{');
    let comment = count(|&c| c == b'*' || c == b'/');
    BASE_STACK
        .saturating_add(b.len().saturating_mul(PER.byte))
        .saturating_add(braces.saturating_mul(PER.brace))
        .saturating_add(comment.saturating_mul(PER.comment))
}

/// `text` parsed as KDL 2 on a thread with the stack it may need.
pub fn parse(text: &str) -> Result<KdlDocument, Unparsed> {
    let needed = stack_bound(text);
    if needed > MAX_PARSE_STACK {
        return Err(Unparsed::TooLarge { needed });
    }
    std::thread::scope(|s| {
        let parser = std::thread::Builder::new()
            .name("scenario-parser".into())
            .stack_size(needed)
            .spawn_scoped(s, || {
                let doc = KdlDocument::parse_v2(text).map_err(Unparsed::Syntax)?;
                // Dropped here, on this stack, when too deep: dropping recurses too.
                match too_deep(&doc) {
                    Some(at) => Err(Unparsed::TooDeep(at)),
                    None => Ok(doc),
                }
            })
            .map_err(|source| Unparsed::NoStack { needed, source })?;
        parser
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The first node whose block lies deeper than [`MAX_DEPTH`], found without recursion.
fn too_deep(doc: &KdlDocument) -> Option<SourceSpan> {
    let mut open = vec![(doc, 0usize)];
    while let Some((d, depth)) = open.pop() {
        for node in d.nodes() {
            if let Some(children) = node.children() {
                if depth >= MAX_DEPTH {
                    return Some(node.span());
                }
                open.push((children, depth + 1));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_kdl_recurses_into_parses_on_a_stack_large_enough() {
        // Each of these aborted the process on the main thread's 8 MiB.
        for text in [
            "}".repeat(30_000),
            "=".repeat(30_000),
            format!("/*{}*/", "*a".repeat(20_000)),
            format!("{}{}", "/*".repeat(8_000), "*/".repeat(8_000)),
            format!("a \"\n{}{}", "b {".repeat(3_000), "}".repeat(3_000)),
        ] {
            // Parsed (a comment alone is a valid document), not refused unparsed.
            assert!(
                !matches!(
                    parse(&text),
                    Err(Unparsed::TooLarge { .. } | Unparsed::NoStack { .. })
                ),
                "{}",
                &text[..40]
            );
        }
    }

    #[test]
    fn a_document_deeper_than_the_bound_is_refused_at_its_node() {
        let nested = |n| format!("stage \"a\" {}{}", "{ x ".repeat(n), "}".repeat(n));
        assert!(parse(&nested(MAX_DEPTH - 1)).is_ok());
        let deep = nested(MAX_DEPTH + 5);
        let Err(Unparsed::TooDeep(at)) = parse(&deep) else {
            panic!("not refused")
        };
        assert!(deep[at.offset()..].starts_with('x'));
    }

    #[test]
    fn a_text_whose_bound_passes_the_cap_is_not_parsed() {
        let huge = "a ".repeat(MAX_PARSE_STACK / PER.byte);
        assert!(matches!(parse(&huge), Err(Unparsed::TooLarge { .. })));
        assert!(stack_bound("stage \"s\" { }") < 4 << 20);
    }
}
