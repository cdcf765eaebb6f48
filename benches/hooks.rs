//! Cost of rhai hooks per request: `validate` on a ~200-token response, `mutate` on a prompt,
//! `request` on a body. The compiled script is shared, each call gets a fresh scope.
//!
//! `cargo bench --bench hooks` (env: HOOK_BENCH_CALLS).

use std::hint::black_box;
use std::time::Instant;

use infermeter_core::dataset::Prompt;
use infermeter_core::hooks::{HookCtx, Hooks};

const SCRIPT: &str = r#"
fn validate(response, ctx) {
    if response.len() == 0 { return "empty response"; }
    response.contains("answer")
}
fn mutate(prompt, ctx) { ctx.rng.pick(["Please answer: ", "Quick question: "]) + prompt }
fn request(body, ctx) { body.priority = ctx.index % 2; body }
"#;

fn main() {
    let calls: u64 = std::env::var("HOOK_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let hooks = Hooks::compile(SCRIPT, "bench.rhai").expect("bench script compiles");
    let response = "the answer is ".repeat(70);
    let prompt = "word ".repeat(200);
    let body = serde_json::json!({"model": "m", "max_tokens": 64, "stream": true,
        "messages": [{"role": "user", "content": prompt}]});
    let ctx = |i: u64| HookCtx {
        index: i,
        stage: "bench",
        item: i,
        input_tokens: 200,
        output_tokens: 200,
        seed: i,
    };
    let time = |name: &str, n: u64, f: &dyn Fn(u64)| {
        let t = Instant::now();
        for i in 0..n {
            f(i);
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("{name:<10} {us:>8.2} µs/call  ({n} calls)");
    };
    time("validate", calls, &|i| {
        black_box(hooks.validate(&response, &ctx(i)).ok());
    });
    time("mutate", calls / 4, &|i| {
        black_box(hooks.mutate(Prompt::Text(prompt.clone()), &ctx(i)).ok());
    });
    time("request", calls / 4, &|i| {
        black_box(hooks.request(body.clone(), &ctx(i)).ok());
    });
}
