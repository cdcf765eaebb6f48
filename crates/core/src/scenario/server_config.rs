//! `config "NAME" { args "--flag" "VALUE"…; env "NAME" "VALUE"; }` inside `server { … }`: one
//! configuration of the server, which every stage runs on once (docs/server.md, "Server
//! settings as an axis"), with `clients=N` linking the closed loops' clients to it; and the
//! `env` line, which the block and its configurations share.

use super::ctx::{Ctx, NodeReader};
use super::settings::{Entries, Setting, read_children};
use crate::server::{EnvSetting, EnvValue, ServerConfig, ServerSpec};

const SETTINGS: &[Setting<Entries<ServerSpec>>] =
    &[Setting::once("args", args), Setting::many("env", env)];

/// Reads one `config` line into `s.configs`.
pub(super) fn config(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, s: &mut ServerSpec) {
    // Taken first, so that a configuration refused below is not also told it has children.
    let children = r.children();
    let Some(v) = r.arg(ctx, 0) else {
        ctx.error(
            ctx.name_span(r.node),
            "`config` needs a name",
            "missing name",
            Some("write e.g. config \"mns64\" { args \"--max-num-seqs\" \"64\"; }".into()),
        );
        return;
    };
    let Some(name) = ctx.name_string(&v, "config") else {
        return;
    };
    // The name becomes part of stage names (`steady@NAME`), file names and report headings.
    let fits = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || !name.chars().all(fits) {
        ctx.error(
            v.span,
            format!("invalid server configuration name `{name}`"),
            "use letters, digits, -, _ and . only",
            None,
        );
        return;
    }
    if s.configs.iter().any(|c| c.name == name) {
        ctx.error(
            v.span,
            format!("the server configuration `{name}` is given twice"),
            "names must differ",
            None,
        );
        return;
    }
    // `Some(None)`: given and invalid (reported).
    let clients = r
        .prop(ctx, "clients")
        .map(|v| ctx.u32_at_least(&v, "clients", 1));
    let mut scratch = ServerSpec {
        configs: Vec::new(),
        command: Vec::new(),
        env: Vec::new(),
        ..s.clone()
    };
    read_children(ctx, children, "`config`", &[SETTINGS], &mut scratch);
    let Some(clients) = clients.map_or(Some(None), |c| c.map(Some)) else {
        return;
    };
    s.configs.push(ServerConfig {
        name,
        args: scratch.command,
        env: scratch.env,
        clients,
    });
}

/// `args "--flag" "VALUE"…`: each its own string, as in `command`.
fn args(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, s: &mut ServerSpec) {
    let vals = r.args_from(ctx, 0);
    if vals.is_empty() {
        ctx.error(
            ctx.name_span(r.node),
            "`args` needs at least one argument",
            "missing arguments",
            Some("write e.g. args \"--max-num-seqs\" \"64\"".into()),
        );
        return;
    }
    let words: Vec<String> = vals.iter().filter_map(|v| ctx.string(v, "args")).collect();
    if words.len() == vals.len() {
        s.command = words;
    }
}

/// `env "NAME" "VALUE"` or `env "NAME" env="VARIABLE"` (a secret, by reference).
pub(super) fn env(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, s: &mut ServerSpec) {
    let name = r.arg(ctx, 0).and_then(|v| {
        let n = ctx.name_string(&v, "env")?;
        if valid_var(&n) {
            return Some((n, v.span));
        }
        ctx.error(
            v.span,
            "invalid environment variable name",
            "use letters, digits and _ only",
            None,
        );
        None
    });
    let literal = r.arg(ctx, 1);
    let by_ref = r.prop(ctx, "env");
    let Some((name, span)) = name else {
        if r.arg_count() == 0 {
            ctx.error(
                ctx.name_span(r.node),
                "`env` needs a variable name",
                "missing name",
                Some("write env \"HF_HOME\" \"/data\" or env \"HF_TOKEN\" env=\"HF_TOKEN\"".into()),
            );
        }
        return;
    };
    let value = match (literal, by_ref) {
        (Some(v), None) => {
            if crate::redact::is_secret_name(&name) {
                ctx.error(
                    v.span,
                    format!("`{name}` looks like a secret: pass it by reference, not its value"),
                    "a secret does not belong in a scenario file",
                    Some(format!(
                        "write env \"{name}\" env=\"{name}\": the value comes from \
                         infermeter's own environment"
                    )),
                );
                return;
            }
            ctx.string(&v, "env").map(EnvValue::Value)
        }
        (None, Some(v)) => ctx
            .name_string(&v, "env")
            .filter(|var| valid_var(var))
            .map(EnvValue::FromEnv),
        (Some(v), Some(_)) => {
            ctx.error(v.span, "`env` has both a value and env=", "give one", None);
            None
        }
        (None, None) => {
            ctx.error(
                span,
                format!("`env \"{name}\"` has no value"),
                "missing value",
                Some(format!(
                    "write env \"{name}\" \"VALUE\", or env \"{name}\" env=\"VARIABLE\" to pass \
                     infermeter's own"
                )),
            );
            None
        }
    };
    if let Some(value) = value {
        s.env.push(EnvSetting { name, value });
    }
}

fn valid_var(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `best.` assertions rank the server's configurations: refused in a scenario without
/// `config` lines (there is nothing to rank), with a baseline threshold, or with
/// `abort-on-fail` (the ranking is known only after the last stage).
pub(crate) fn check_best_assertions(ctx: &mut Ctx<'_>, s: &super::model::Scenario) {
    let configs = s.server.as_ref().is_some_and(|v| !v.configs.is_empty());
    for a in s.sla.iter().filter(|a| a.expr.value.best) {
        let metric = a.expr.value.metric;
        if !configs {
            ctx.error(
                a.expr.span,
                format!("`best.{metric}` ranks the server's configurations"),
                "the scenario has no `config` lines",
                Some("add `config` lines to the `server` block (docs/server.md)".into()),
            );
        }
        if let crate::sla::Threshold::Baseline { .. } = a.expr.value.threshold {
            ctx.error(
                a.expr.span,
                format!("`best.{metric}` takes a fixed threshold"),
                "not a baseline",
                Some(format!(
                    "write e.g. `best.{metric} > {}`",
                    metric.def().example
                )),
            );
        }
        if a.abort_on_fail {
            ctx.error(
                a.expr.span,
                format!("`best.{metric}` cannot abort a run"),
                "the configurations are ranked once every stage has run",
                Some("drop abort-on-fail".into()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    fn parse(server: &str) -> Result<crate::scenario::Scenario, String> {
        let text = format!(
            "target \"http://127.0.0.1:8000/v1\"\nserver {{\ncommand \"sh\" \"-c\" \"x\" \
             \"--n\" \"1\"\n{server}\n}}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 8; output-tokens 4; }} }}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"poisson\" rate=1; requests 1; }}\n"
        );
        crate::scenario::parse_str(std::path::Path::new("s.kdl"), &text, &[])
            .map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn server_best_assertions_need_configs_and_a_fixed_threshold() {
        let with = |configs: &str, sla: &str| {
            let text = format!(
                "target \"http://127.0.0.1:8000/v1\"\nserver {{\ncommand \"sh\"\n{configs}\n}}\n\
                 dataset \"d\" {{ synthetic {{ input-tokens 8; output-tokens 4; }} }}\n\
                 stage \"s\" {{ dataset \"d\"; arrival \"poisson\" rate=1; requests 1; }}\nsla {{ {sla} }}\n"
            );
            crate::scenario::parse_str(std::path::Path::new("s.kdl"), &text, &[])
                .map_err(|e| format!("{e:?}"))
        };
        let err = with("", "assert \"best.goodput_rate > 1/s\"").unwrap_err();
        assert!(err.contains("ranks the server's configurations"), "{err}");
        let two = "config \"a\"\nconfig \"b\"";
        with(two, "assert \"best.goodput_rate > 1/s\" stage=\"s\"").unwrap();
        let err = with(two, "assert \"best.goodput_rate > baseline\"").unwrap_err();
        assert!(err.contains("fixed threshold"), "{err}");
        let err = with(two, "assert \"best.ttft.p95 < 1s\"").unwrap_err();
        assert!(err.contains("not a figure"), "{err}");
    }

    #[test]
    fn server_configs_are_read_and_applied() {
        let s = parse(
            "config \"one\" { args \"--n\" \"2\"; env \"A\" \"x\"; }\nconfig \"two\" clients=4\n\
             config \"three\" { env \"T_TOKEN\" env=\"MY_TOKEN\"; }",
        )
        .unwrap();
        let spec = s.server.unwrap();
        let names: Vec<&str> = spec.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["one", "two", "three"]);
        let one = spec.configured(Some("one"));
        assert_eq!(one.command, ["sh", "-c", "x", "--n", "2"]);
        assert_eq!(one.env.len(), 1);
        assert!(one.configs.is_empty());
        assert_eq!(spec.configured(Some("two")).command, spec.command);
        assert_eq!(spec.configs[1].clients, Some(4));
        assert_eq!(spec.configs[0].clients, None);
    }

    #[test]
    fn server_configs_refuse_bad_names_and_secrets() {
        for (server, said) in [
            ("config \"a b\"", "invalid server configuration name"),
            ("config \"a\"\nconfig \"a\"", "given twice"),
            ("config", "needs a name"),
            ("config \"a\" { args; }", "needs at least one argument"),
            (
                "config \"a\" { env \"HF_TOKEN\" \"v\"; }",
                "looks like a secret",
            ),
            ("config \"a\" { port 1; }", "port"),
            ("config \"a\" clients=0", "clients"),
        ] {
            let e = parse(server).unwrap_err();
            assert!(e.contains(said), "{server}: {e}");
        }
    }
}
