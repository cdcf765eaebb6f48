//! Text infermeter did not write, made safe for the place it goes. The server's `server`
//! header and self-description, the model ids it lists, its error bodies, the scenario's and
//! stages' names, params, tags, data set names, a hook's messages, a results file given to
//! `compare`: each reaches a reader through one of these sinks, and only through the
//! function for that sink.
//!
//! | sink | function | what it does |
//! | --- | --- | --- |
//! | GitHub-flavoured Markdown (report.md, report.pr.md, the step summary, `compare --format markdown`) | [`markdown`], [`markdown_code`] | no raw HTML (`<`, `>`, `&` as entities), no link, image, emphasis or table syntax (backslash escapes), no live `@mention`, `#123` reference, autolink or `javascript:`/`data:` text (a zero-width joiner breaks them), no line break (a table cell stays one) |
//! | HTML (report.html) | [`html`] | `&`, `<`, `>`, `"`, `'` as entities |
//! | XML 1.0 (junit.xml, the SVG plots, inline SVG) | [`xml`] | as HTML, `'` as `&apos;`; the characters XML forbids replaced |
//! | CSV (stages.csv) | [`csv_cell`] | a text cell beginning with `=`, `+`, `-`, `@`, a tab or a CR starts with `'` (no formula); quoted when needed (RFC 4180) |
//! | the terminal and CI logs | [`terminal`] for one value, [`console`] for all that is printed | control characters and bidi overrides shown escaped (`\u{1b}`); a line that would be a GitHub workflow command (`::…`) starts with `\` |
//!
//! Every sink but the terminal's also shows control characters and bidi overrides escaped
//! (`\u{202e}`), so none can reorder or hide what a reader sees. Each function masks secrets
//! first ([`crate::redact::secrets`]), because escaping changes how a secret looks and the
//! scrub of the finished file could then miss it.
//!
//! A vocabulary module like `redact.rs`, below every stage: reports, the console, the app and
//! the readiness probe all import it; it imports only `redact`.

mod csv;
mod hidden;
mod markdown;
mod markup;
mod terminal;

pub use csv::csv_cell;
pub use markdown::{markdown, markdown_code};
pub use markup::{html, xml};
pub use terminal::{console, terminal};
