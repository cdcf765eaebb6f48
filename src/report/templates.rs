//! The minijinja environment every Markdown template renders in (the house settings, the fuel
//! that bounds a render) and the built-in section any template may include.

use minijinja::{Environment, UndefinedBehavior, syntax::SyntaxConfig};

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
/// tags on their own lines leave no blank lines behind, the file's final newline kept, no
/// auto-escaping (the output is Markdown, not HTML), [`TEMPLATE_FUEL`] per render, and the
/// built-in sections a template may include (`telemetry.md.j2`).
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
    // Every report template may include the built-in sections.
    let _ = env.add_template(TELEMETRY_TEMPLATE_NAME, TELEMETRY_TEMPLATE);
}
