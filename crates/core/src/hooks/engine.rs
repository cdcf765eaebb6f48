//! The compiled hook script and its sandboxed engine. One [`Hooks`] is compiled per stage and
//! shared by all its request tasks (`Send + Sync`); each call gets a fresh scope.

use std::sync::{Arc, Mutex};

use rhai::module_resolvers::DummyModuleResolver;
use rhai::{AST, Array, Dynamic, Engine, EvalAltResult, ImmutableString, Map, Scope};

use crate::dataset::{ChatMessage, Prompt};

/// The sandbox's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_operations: u64,
    pub max_call_levels: usize,
    pub max_string_size: usize,
    pub max_array_size: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_operations: 1_000_000,
            max_call_levels: 32,
            max_string_size: 4 << 20,
            max_array_size: 100_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HookError {
    #[error("{path}:{line}:{column}: {message}")]
    Compile {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("hook `{hook}` in {path}: {message}")]
    Runtime {
        hook: &'static str,
        path: String,
        message: String,
    },
}

/// What a hook call knows about its request.
#[derive(Debug, Clone)]
pub struct HookCtx<'a> {
    pub index: u64,
    pub stage: &'a str,
    pub item: u64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Seeds `ctx.rng`: equal seeds give equal draws.
    pub seed: u64,
}

/// A seeded generator scripts reach as `ctx.rng`: `ctx.rng.int(lo, hi)` (inclusive),
/// `ctx.rng.float()` in [0, 1), `ctx.rng.pick(array)`.
#[derive(Debug, Clone)]
struct Rng(Arc<Mutex<u64>>);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

pub struct Hooks {
    engine: Engine,
    ast: AST,
    path: String,
    limits: Limits,
    pub has_mutate: bool,
    pub has_validate: bool,
    pub has_request: bool,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks").field("path", &self.path).finish()
    }
}

fn sandbox(limits: &Limits) -> Engine {
    let mut e = Engine::new();
    e.set_module_resolver(DummyModuleResolver::new());
    e.disable_symbol("eval");
    // Scripts must not write to the terminal the progress display uses.
    e.on_print(|_| {});
    e.on_debug(|_, _, _| {});
    e.set_max_operations(limits.max_operations);
    e.set_max_call_levels(limits.max_call_levels);
    e.set_max_expr_depths(64, 32);
    e.set_max_string_size(limits.max_string_size);
    e.set_max_array_size(limits.max_array_size);
    e.set_max_map_size(limits.max_array_size);
    e.set_max_variables(1_000);
    e.set_max_functions(256);
    e.set_max_modules(0);
    e.register_type_with_name::<Rng>("Rng")
        .register_fn("int", |r: &mut Rng, lo: i64, hi: i64| {
            if hi <= lo {
                return lo;
            }
            let span = (hi - lo) as u64 + 1;
            lo + (r.next() % span) as i64
        })
        .register_fn("float", |r: &mut Rng| {
            (r.next() >> 11) as f64 / (1u64 << 53) as f64
        })
        .register_fn("pick", |r: &mut Rng, a: Array| {
            if a.is_empty() {
                return Dynamic::UNIT;
            }
            let i = (r.next() % a.len() as u64) as usize;
            a[i].clone()
        });
    e
}

impl Hooks {
    /// Compiles `source` (shown as `path` in errors) under the default limits.
    pub fn compile(source: &str, path: &str) -> Result<Hooks, HookError> {
        Hooks::compile_with(source, path, Limits::default())
    }

    pub fn compile_with(source: &str, path: &str, limits: Limits) -> Result<Hooks, HookError> {
        let engine = sandbox(&limits);
        let ast = engine.compile(source).map_err(|e| {
            let pos = e.position();
            HookError::Compile {
                path: path.to_string(),
                line: pos.line().unwrap_or(0),
                column: pos.position().unwrap_or(0),
                message: e.err_type().to_string(),
            }
        })?;
        let has = |name: &str, arity: usize| {
            ast.iter_functions()
                .any(|f| f.name == name && f.params.len() == arity)
        };
        let (has_mutate, has_validate, has_request) =
            (has("mutate", 2), has("validate", 2), has("request", 2));
        Ok(Hooks {
            engine,
            ast,
            path: path.to_string(),
            limits,
            has_mutate,
            has_validate,
            has_request,
        })
    }

    fn ctx_map(ctx: &HookCtx<'_>) -> Map {
        let mut m = Map::new();
        m.insert("index".into(), Dynamic::from(ctx.index as i64));
        m.insert("stage".into(), Dynamic::from(ctx.stage.to_string()));
        m.insert("item".into(), Dynamic::from(ctx.item as i64));
        m.insert(
            "input_tokens".into(),
            Dynamic::from(i64::from(ctx.input_tokens)),
        );
        m.insert(
            "output_tokens".into(),
            Dynamic::from(i64::from(ctx.output_tokens)),
        );
        m.insert(
            "rng".into(),
            Dynamic::from(Rng(Arc::new(Mutex::new(ctx.seed)))),
        );
        m
    }

    fn call(
        &self,
        hook: &'static str,
        arg: Dynamic,
        ctx: &HookCtx<'_>,
    ) -> Result<Dynamic, HookError> {
        let mut scope = Scope::new();
        self.engine
            .call_fn::<Dynamic>(&mut scope, &self.ast, hook, (arg, Self::ctx_map(ctx)))
            .map_err(|e| self.runtime(hook, &e))
    }

    fn runtime(&self, hook: &'static str, e: &EvalAltResult) -> HookError {
        let l = &self.limits;
        let message = match e {
            EvalAltResult::ErrorTooManyOperations(_) => format!(
                "exceeded the limit of {} operations (an endless loop?)",
                l.max_operations
            ),
            EvalAltResult::ErrorStackOverflow(_) => {
                format!("exceeded the limit of {} nested calls", l.max_call_levels)
            }
            EvalAltResult::ErrorDataTooLarge(what, _) => format!(
                "{what} exceeds its limit (strings {} bytes, arrays and maps {} items)",
                l.max_string_size, l.max_array_size
            ),
            other => other.to_string(),
        };
        HookError::Runtime {
            hook,
            path: self.path.clone(),
            message,
        }
    }

    fn bad(&self, hook: &'static str, message: String) -> HookError {
        HookError::Runtime {
            hook,
            path: self.path.clone(),
            message,
        }
    }

    /// `mutate(prompt, ctx)`: a string in, a string or an array of `#{role, content}` out.
    pub fn mutate(&self, prompt: Prompt, ctx: &HookCtx<'_>) -> Result<Prompt, HookError> {
        if !self.has_mutate {
            return Ok(prompt);
        }
        let arg = match &prompt {
            Prompt::Text(t) => Dynamic::from(t.clone()),
            Prompt::Messages(ms) => Dynamic::from_array(
                ms.iter()
                    .map(|m| {
                        let mut map = Map::new();
                        map.insert("role".into(), Dynamic::from(m.role.clone()));
                        map.insert("content".into(), Dynamic::from(m.content.clone()));
                        // Opaque to the script: a message it hands back keeps its tool call
                        // or result (and so its `tool_call_id`); one it builds has none.
                        if let Some(tool) = &m.tool {
                            map.insert("tool".into(), Dynamic::from(tool.clone()));
                        }
                        Dynamic::from_map(map)
                    })
                    .collect(),
            ),
        };
        let out = self.call("mutate", arg, ctx)?;
        if out.is_string() {
            return Ok(Prompt::Text(out.into_string().unwrap_or_default()));
        }
        if out.is_array() {
            let arr = out.into_array().unwrap_or_default();
            let mut ms = Vec::with_capacity(arr.len());
            for m in arr {
                let map = m.try_cast::<Map>().ok_or_else(|| {
                    self.bad("mutate", "messages must be maps #{role, content}".into())
                })?;
                let field = |k: &str| {
                    map.get(k)
                        .and_then(|v| v.clone().into_immutable_string().ok())
                        .map(|s: ImmutableString| s.to_string())
                };
                match (field("role"), field("content")) {
                    (Some(role), Some(content)) => ms.push(ChatMessage {
                        role,
                        content,
                        tool: map
                            .get("tool")
                            .and_then(|v| v.clone().try_cast::<crate::protocol::ToolPart>()),
                    }),
                    _ => {
                        return Err(self.bad(
                            "mutate",
                            "each message needs string `role` and `content`".into(),
                        ));
                    }
                }
            }
            return Ok(Prompt::Messages(ms));
        }
        Err(self.bad(
            "mutate",
            format!(
                "returned {}, expected a string or an array of messages",
                out.type_name()
            ),
        ))
    }

    /// `validate(response, ctx)`: `None` when valid, else why not (`false` or a message).
    pub fn validate(&self, response: &str, ctx: &HookCtx<'_>) -> Result<Option<String>, HookError> {
        if !self.has_validate {
            return Ok(None);
        }
        let out = self.call("validate", Dynamic::from(response.to_string()), ctx)?;
        if let Ok(b) = out.as_bool() {
            return Ok((!b).then(|| "validate returned false".to_string()));
        }
        if out.is_unit() {
            return Ok(None);
        }
        if out.is_string() {
            return Ok(Some(out.into_string().unwrap_or_default()));
        }
        Err(self.bad(
            "validate",
            format!(
                "returned {}, expected true, false or a message",
                out.type_name()
            ),
        ))
    }

    /// `request(body, ctx)`: the request JSON as a map in, the map to send out.
    pub fn request(
        &self,
        body: serde_json::Value,
        ctx: &HookCtx<'_>,
    ) -> Result<serde_json::Value, HookError> {
        if !self.has_request {
            return Ok(body);
        }
        let arg = rhai::serde::to_dynamic(&body).map_err(|e| self.bad("request", e.to_string()))?;
        let out = self.call("request", arg, ctx)?;
        if !out.is_map() {
            return Err(self.bad(
                "request",
                format!("returned {}, expected the body map", out.type_name()),
            ));
        }
        rhai::serde::from_dynamic(&out).map_err(|e| self.bad("request", e.to_string()))
    }
}
