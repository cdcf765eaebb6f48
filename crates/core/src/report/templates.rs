//! The minijinja environment every Markdown template renders in (the house settings, the fuel
//! that bounds a render, the escaping of every value printed) and the built-in section any
//! template may include. Names, ids and messages come from the scenario, the server and
//! results files, and report.md is posted as a pull-request comment: each value is escaped
//! through [`crate::escape`].

use minijinja::{Environment, UndefinedBehavior, Value, syntax::SyntaxConfig};

/// The work one render may do (minijinja fuel: about one unit per instruction and per 64
/// bytes of data made, so this also bounds a render's memory to some 640 MiB). The built-in
/// template uses under 1 % of it for a large sweep; a template that loops without end fails
/// within a second or two with `engine ran out of fuel`.
pub const TEMPLATE_FUEL: u64 = 10_000_000;

/// The built-in telemetry section, included by `templates/report.md.j2` (and by any report
/// template as `{% include "telemetry.md.j2" %}`).
pub const TELEMETRY_TEMPLATE: &str = include_str!("../../templates/telemetry.md.j2");

/// The name report templates include the section by.
pub const TELEMETRY_TEMPLATE_NAME: &str = "telemetry.md.j2";

/// An environment with the house settings (see [`configure`]).
pub(crate) fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    configure(&mut env);
    env
}

/// The house settings: strict undefined, errors that name the undefined expression, block
/// tags on their own lines leave no blank lines behind, the file's final newline kept, every
/// value printed escaped for GitHub-flavoured Markdown ([`view_text`]; `|code` prints one as
/// code, `|safe` as it is), [`TEMPLATE_FUEL`] per render, and the built-in sections a
/// template may include (`telemetry.md.j2`).
pub(crate) fn configure(env: &mut Environment<'_>) {
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // minijinja names what was undefined (`nosuch` is undefined, at `nosuch`) only in debug
    // mode, which it turns on by itself in debug builds only: a release build said "undefined
    // value" and the line, not which name.
    env.set_debug(true);
    env.set_fuel(Some(TEMPLATE_FUEL));
    if let Ok(syntax) = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
    {
        env.set_syntax(syntax);
    }
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    // Not HTML's escaping but Markdown's, for every value printed (see `view_text`).
    env.set_formatter(|out, _state, value| {
        let text = match value.as_str() {
            Some(s) if value.is_safe() => return out.write_str(s).map_err(Into::into),
            Some(s) => view_text(s),
            // Numbers as they are; a list or map prints its strings, escaped all the same.
            None => view_text(&value.to_string()),
        };
        out.write_str(&text).map_err(Into::into)
    });
    env.add_filter("code", |s: String| {
        Value::from_safe_string(crate::escape::markdown_code(&s))
    });
    // Every report template may include the built-in sections.
    let _ = env.add_template(TELEMETRY_TEMPLATE_NAME, TELEMETRY_TEMPLATE);
}

/// `s` escaped for GitHub-flavoured Markdown, keeping the little markup the view's own
/// strings use — `` `code` `` spans, `**strong**`, `<sub>` — with what lies inside them
/// escaped in turn (a code span's text with [`crate::escape::markdown_code`]). A value from
/// outside that holds such marks gets a harmless span or emphasis at most: nothing in it can
/// open a tag, a link, a mention or a new table cell.
pub(crate) fn view_text(s: &str) -> String {
    const MARKS: [&str; 4] = ["`", "**", "<sub>", "</sub>"];
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while !rest.is_empty() {
        let next = MARKS
            .iter()
            .filter_map(|m| rest.find(m).map(|at| (at, *m)))
            .min();
        let Some((at, mark)) = next else {
            out.push_str(&crate::escape::markdown(rest));
            break;
        };
        out.push_str(&crate::escape::markdown(&rest[..at]));
        rest = &rest[at + mark.len()..];
        if mark != "`" {
            out.push_str(mark);
            continue;
        }
        let end = rest.find('`').unwrap_or(rest.len());
        out.push_str(&crate::escape::markdown_code(&rest[..end]));
        rest = rest.get(end + 1..).unwrap_or_default();
    }
    out
}
