//! rhai hooks: a dataset's script may define `mutate(prompt, ctx)`, `validate(response, ctx)`
//! and `request(body, ctx)`. Scripts run sandboxed (no file, network or process access, no
//! `eval`, no `import`) under operation, call-depth and size limits.

mod engine;

pub use engine::{HookCtx, HookError, Hooks, Limits};
