//! `server { … }`: the server infermeter starts before the run and stops after it
//! (docs/server.md). What can be known without starting it is checked here, where each line's
//! span is: that the program exists (an executable path, `infermeter` itself, or a name on
//! `PATH`), that `cwd` is a directory, that durations and sizes parse, that a secret-named
//! variable is passed by reference, and (in [`check`]) that the target is a URL to wait on.

use kdl::{KdlNode, KdlValue};

use super::ctx::{Ctx, NodeReader, one_arg};
use super::model::{Endpoint, Scenario};
use super::settings::{Entries, Setting, read_children, with_reader};
use crate::server::{
    DEFAULT_GRACE, DEFAULT_LOG_MAX, DEFAULT_TIMEOUT, Readiness, ServerSpec, StopSignal, StopSpec,
    resolve_program,
};
use crate::units::Duration;

const SETTINGS: &[Setting<Entries<ServerSpec>>] = &[
    Setting::once("command", command),
    Setting::once("restart", |ctx, r, s| {
        command(ctx, r, s);
        s.remote = true;
    }),
    Setting::once("cwd", cwd),
    Setting::many("env", super::server_config::env),
    Setting::once("ready", ready),
    Setting::once("timeout", |ctx, r, s| {
        if let Some(v) = one_arg(ctx, r, "a duration like \"300s\"")
            && let Some(d) = ctx.positive_duration(&v, "timeout")
        {
            s.timeout = d;
        }
    }),
    Setting::once("stop", stop),
    Setting::once("log", log),
    Setting::many("config", super::server_config::config),
];

/// The smallest `log max`: room for a start-up banner and the last lines of an error.
const MIN_LOG: u64 = 4 * 1024;

pub(super) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<ServerSpec> {
    let mut spec = ServerSpec {
        command: Vec::new(),
        remote: false,
        cwd: None,
        env: Vec::new(),
        ready: Readiness::Models,
        timeout: Duration(DEFAULT_TIMEOUT),
        stop: StopSpec {
            signal: StopSignal::Sigterm,
            grace: Duration(DEFAULT_GRACE),
        },
        log_max: DEFAULT_LOG_MAX,
        configs: Vec::new(),
    };
    let before = ctx.problems.len();
    with_reader(ctx, node, |ctx, r| {
        let children = r.children();
        read_children(ctx, children, "`server`", &[SETTINGS], &mut spec);
        either_command(ctx, node, children);
    });
    (ctx.problems.len() == before).then_some(spec)
}

/// Exactly one of `command` (the server itself) and `restart` (a program that restarts a server
/// running elsewhere); `stop` only with `command`, as there is nothing of ours to stop.
fn either_command(ctx: &mut Ctx<'_>, node: &KdlNode, children: &[KdlNode]) {
    let named = |n: &str| children.iter().find(|c| c.name().value() == n);
    match (named("command"), named("restart")) {
        (None, None) => ctx.error(
            ctx.name_span(node),
            "`server` needs a `command`",
            "no command",
            Some(
                "write e.g. server { command \"vllm\" \"serve\" \"Qwen/Qwen2.5-0.5B-Instruct\" \
                 \"--port\" \"8000\"; } (or `restart` for a server that runs elsewhere)"
                    .into(),
            ),
        ),
        (Some(_), Some(r)) => ctx.error(
            ctx.name_span(r),
            "`restart` and `command` both given",
            "one or the other",
            Some(
                "`command` starts the server here and stops it after the run; `restart` runs a \
                 program that restarts a server elsewhere: keep one"
                    .into(),
            ),
        ),
        (None, Some(_)) => {
            if let Some(stop) = named("stop") {
                ctx.error(
                    ctx.name_span(stop),
                    "`stop` does not apply to `restart`",
                    "nothing of the run's to stop",
                    Some(
                        "a server restarted elsewhere is left running after the run: remove \
                         `stop`"
                            .into(),
                    ),
                );
            }
        }
        (Some(_), None) => {}
    }
}

/// `command "PROGRAM" "ARG"…`: a program and its arguments, each its own string.
fn command(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, s: &mut ServerSpec) {
    let args = r.args_from(ctx, 0);
    let Some(first) = args.first() else {
        ctx.error(
            ctx.name_span(r.node),
            "`command` needs a program",
            "missing program",
            Some("write e.g. command \"vllm\" \"serve\" \"MODEL\"".into()),
        );
        return;
    };
    let words: Vec<String> = args
        .iter()
        .filter_map(|v| ctx.string(v, "command"))
        .collect();
    if words.len() != args.len() {
        return;
    }
    let program = &words[0];
    let base = ctx.base_dir.clone();
    let found = base
        .as_deref()
        .map(|dir| resolve_program(program, dir).is_some());
    // A program path may hold a space; a whole command line in one string is told as such.
    if program.contains(char::is_whitespace) && found != Some(true) {
        ctx.error(
            first.span,
            "`command` takes the program and each argument as its own string",
            "a whole command line in one string",
            Some(format!(
                "write command {} (no shell runs it)",
                program
                    .split_whitespace()
                    .map(|w| format!("{w:?}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
        );
        return;
    }
    if found == Some(false) {
        ctx.error(
            first.span,
            format!("the server's program `{program}` is not found"),
            "not an executable file, nor on PATH",
            Some(
                "install it or put it on PATH, or give its path (relative to the scenario's \
                 directory)"
                    .into(),
            ),
        );
    }
    s.command = words;
}

/// `cwd "DIR"`: relative to the scenario's directory; it must be one.
fn cwd(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, s: &mut ServerSpec) {
    let Some(v) = one_arg(ctx, r, "a directory") else {
        return;
    };
    let Some(dir) = ctx.name_string(&v, "cwd") else {
        return;
    };
    if let Some(base) = &ctx.base_dir
        && !base.join(&dir).is_dir()
    {
        ctx.error(
            v.span,
            format!("`cwd` `{dir}` is not a directory"),
            "no such directory",
            Some("a relative `cwd` is from the scenario's directory".into()),
        );
        return;
    }
    s.cwd = Some(dir.into());
}

/// `ready "models"`, `ready path="/health"` or `ready log="TEXT"`.
fn ready(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, s: &mut ServerSpec) {
    let kind = r.arg(ctx, 0);
    let path = r.prop(ctx, "path");
    let log = r.prop(ctx, "log");
    let help =
        Some("write ready \"models\", ready path=\"/health\" or ready log=\"TEXT\"".to_string());
    match (kind, path, log) {
        (Some(v), None, None) => match &v.value {
            KdlValue::String(k) if k == "models" => s.ready = Readiness::Models,
            _ => ctx.error(v.span, "unknown readiness", "expected \"models\"", help),
        },
        (None, Some(v), None) => {
            if let Some(p) = ctx.name_string(&v, "path") {
                if p.starts_with('/') {
                    s.ready = Readiness::Path(p);
                } else {
                    ctx.error(
                        v.span,
                        "`path` starts with /",
                        "a path at the server's root",
                        Some(format!("write path=\"/{p}\"")),
                    );
                }
            }
        }
        (None, None, Some(v)) => {
            if let Some(t) = ctx.name_string(&v, "log") {
                s.ready = Readiness::Log(t);
            }
        }
        _ => ctx.error(
            ctx.name_span(r.node),
            "`ready` takes one way to know the server is ready",
            "none, or more than one",
            help,
        ),
    }
}

/// `stop signal="SIGTERM" grace="10s"`.
fn stop(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, s: &mut ServerSpec) {
    if let Some(v) = r.prop(ctx, "signal")
        && let Some(name) = ctx.name_string(&v, "signal")
    {
        match StopSignal::named(&name) {
            Some(sig) => s.stop.signal = sig,
            None => {
                let known: Vec<&str> = StopSignal::ALL.iter().map(|(_, n)| *n).collect();
                ctx.error(
                    v.span,
                    format!("unknown stop signal `{name}`"),
                    format!("expected {}", known.join(", ")),
                    Some("SIGKILL follows the grace period anyway".into()),
                );
            }
        }
    }
    if let Some(v) = r.prop(ctx, "grace")
        && let Some(d) = ctx.duration(&v, "grace")
    {
        s.stop.grace = d;
    }
}

/// `log max="1MiB"`.
fn log(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, s: &mut ServerSpec) {
    let Some(v) = r.prop(ctx, "max") else {
        ctx.error(
            ctx.name_span(r.node),
            "`log` needs max=",
            "missing max=",
            Some("write log max=\"1MiB\"".into()),
        );
        return;
    };
    let parsed = match &v.value {
        KdlValue::Integer(i) => u64::try_from(*i).ok(),
        KdlValue::String(t) => super::target::parse_size(t).ok(),
        _ => None,
    };
    match parsed {
        Some(n) if n >= MIN_LOG => s.log_max = n,
        _ => ctx.error(
            v.span,
            "invalid `log max`",
            "a size of at least 4KiB",
            Some("write e.g. log max=\"1MiB\" (B, KB, KiB, MB, MiB, GB, GiB)".into()),
        ),
    }
}

/// A `server` block waits on the target: it must be a URL (where the server listens), not
/// the embedded simulator.
pub(super) fn check(ctx: &mut Ctx<'_>, nodes: &[KdlNode], s: &Scenario) {
    let Some(node) = nodes.iter().find(|n| n.name().value() == "server") else {
        return;
    };
    if matches!(s.target.endpoint, Endpoint::Sim(_)) {
        ctx.error(
            ctx.name_span(node),
            "`server` needs a target URL",
            "the target is the embedded simulator",
            Some(
                "write the URL the server will listen on: target \"http://127.0.0.1:8000/v1\""
                    .into(),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::server::{EnvValue, Readiness, StopSignal};

    fn parse(server: &str) -> Result<crate::scenario::Scenario, String> {
        let text = format!(
            "target \"http://127.0.0.1:8000/v1\"\nserver {{\n{server}\n}}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 8; output-tokens 4; }} }}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"poisson\" rate=1; requests 1; }}\n"
        );
        crate::scenario::parse_str(std::path::Path::new("s.kdl"), &text, &[])
            .map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn server_block_reads_every_setting() {
        let s = parse(
            "command \"sh\" \"-c\" \"exec sleep 1\"\ncwd \".\"\nenv \"HF_HOME\" \"/data\"\n\
             env \"HF_TOKEN\" env=\"MY_TOKEN\"\nready log=\"Application startup complete\"\n\
             timeout \"90s\"\nstop signal=\"INT\" grace=\"2s\"\nlog max=\"64KiB\"",
        )
        .unwrap();
        let spec = s.server.unwrap();
        assert_eq!(spec.command, ["sh", "-c", "exec sleep 1"]);
        assert_eq!(spec.env.len(), 2);
        assert_eq!(spec.env[1].value, EnvValue::FromEnv("MY_TOKEN".into()));
        assert_eq!(
            spec.ready,
            Readiness::Log("Application startup complete".into())
        );
        assert_eq!(spec.timeout.as_std().as_secs(), 90);
        assert_eq!(spec.stop.signal, StopSignal::Sigint);
        assert_eq!(spec.stop.grace.as_std().as_secs(), 2);
        assert_eq!(spec.log_max, 64 * 1024);
    }

    #[test]
    fn server_block_defaults_wait_for_the_model_list() {
        let spec = parse("command \"infermeter\" \"sim\"")
            .unwrap()
            .server
            .unwrap();
        assert_eq!(spec.ready, Readiness::Models);
        assert_eq!(spec.stop.signal, StopSignal::Sigterm);
        assert_eq!(spec.timeout.as_std(), crate::server::DEFAULT_TIMEOUT);
        assert_eq!(spec.log_max, crate::server::DEFAULT_LOG_MAX);
    }

    #[test]
    fn server_block_refuses_what_it_cannot_start() {
        for (server, said) in [
            ("cwd \".\"", "needs a `command`"),
            ("command \"sh\"\nready \"soon\"", "unknown readiness"),
            ("command \"sh\"\nready path=\"health\"", "starts with /"),
            ("command \"sh\"\nlog max=\"1KB\"", "invalid `log max`"),
            ("command \"sh\"\nenv \"A\"", "has no value"),
            (
                "command \"sh\"\ncwd \"no-such-dir-here\"",
                "is not a directory",
            ),
            ("command \"./no-such-script.sh\"", "is not found"),
        ] {
            let e = parse(server).unwrap_err();
            assert!(e.contains(said), "{server}: {e}");
        }
    }
}
