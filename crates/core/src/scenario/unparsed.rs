//! Why kdl gave no document, as problems: its syntax diagnostics (narrowed to the value
//! they are about, overlaps dropped), or why the text was not parsed at all.

use miette::SourceSpan;

use super::ctx::Ctx;
use super::syntax::Unparsed;

/// Why the text gave no document, as problems.
pub(super) fn unparsed_errors(ctx: &mut Ctx<'_>, unparsed: Unparsed) {
    const RIGHT_FILE: &str =
        "a scenario is a few kilobytes with a few levels (`stage { … }`); is this the right file?";
    match unparsed {
        Unparsed::Syntax(e) => syntax_errors(ctx, e),
        Unparsed::TooDeep(at) => ctx.error(
            at,
            format!(
                "blocks nest more than {} levels deep",
                super::depth::MAX_DEPTH
            ),
            "one level too many",
            Some(RIGHT_FILE.into()),
        ),
        Unparsed::TooLarge { needed } => ctx.error(
            SourceSpan::new(0.into(), 0),
            format!(
                "the scenario is too large to parse safely: its {} bytes could need {} MiB of stack, more than the {} MiB allowed",
                ctx.text.len(),
                needed >> 20,
                super::syntax::MAX_PARSE_STACK >> 20
            ),
            "here",
            Some(RIGHT_FILE.into()),
        ),
        Unparsed::NoStack { needed, source } => ctx.error(
            SourceSpan::new(0.into(), 0),
            format!(
                "cannot parse the scenario: a thread with {} MiB of stack could not be started ({source})",
                needed >> 20
            ),
            "here",
            Some(RIGHT_FILE.into()),
        ),
    }
}

/// kdl's recovery can add a second diagnostic overlapping the first: keep the first only.
fn syntax_errors(ctx: &mut Ctx<'_>, e: kdl::KdlError) {
    let mut diags = e.diagnostics;
    diags.sort_by_key(|d| d.span.offset());
    let mut covered_to = None;
    for d in diags {
        let (start, end) = (d.span.offset(), d.span.offset() + d.span.len());
        if covered_to.is_some_and(|c| start < c || (start == c && d.span.is_empty())) {
            continue;
        }
        covered_to = Some(end.max(start + 1));
        let message = d.message.unwrap_or_else(|| "invalid KDL syntax".into());
        let span = narrow(ctx.text, start, end, d.label.as_deref());
        let label = d.label.unwrap_or_else(|| "here".into());
        let label = match label.strip_prefix("not ") {
            Some(what) => format!("expected {what}"),
            None => label,
        };
        ctx.error(
            span,
            message,
            label,
            Some(d.help.unwrap_or_else(|| {
                "see https://kdl.dev for KDL 2 syntax (booleans are #true/#false)".into()
            })),
        );
    }
    if ctx.problems.is_empty() {
        ctx.error(
            SourceSpan::new(0.into(), 0),
            "invalid KDL syntax",
            "here",
            None,
        );
    }
}

/// For a bad property value kdl spans from an earlier point (the node, or even the document
/// start) to the value; point at the value itself.
fn narrow(text: &str, start: usize, end: usize, label: Option<&str>) -> SourceSpan {
    let start = start.min(text.len());
    let end = end.min(text.len()).max(start);
    if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return SourceSpan::new(start.into(), end - start);
    }
    if label == Some("not property value") {
        let line_start = text[..end].rfind('\n').map_or(0, |i| i + 1).max(start);
        let value_start = text[line_start..end]
            .rfind('=')
            .map_or(end, |i| line_start + i + 1);
        let rest = &text[value_start..];
        let token = rest
            .find(|c: char| c.is_whitespace() || c == ';' || c == '}')
            .unwrap_or(rest.len());
        if token > 0 {
            return SourceSpan::new(value_start.into(), token);
        }
        let eq = value_start.saturating_sub(1).max(start);
        return SourceSpan::new(eq.into(), value_start - eq);
    }
    let first_line = text[start..end].split('\n').next().unwrap_or("");
    SourceSpan::new(start.into(), first_line.len())
}
