//! `infermeter validate FILE...`: checks each scenario as far as it can without the network —
//! parsed, then compiled into its plan (so data set files are read, hooks compiled, params
//! resolved; the report's baseline read and its template tried) — and prints `ok` or its
//! diagnostics.

use std::path::PathBuf;

use clap::Args;

use super::common::print_error;
use super::values::parse_param;
use crate::app;
use crate::error::Error;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scenario files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Override a declared param, e.g. `--param rate=40` (repeatable).
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
}

/// Checks every file and prints each verdict; the last invalid file's error is returned (the
/// others are printed as they are found).
pub fn run(args: ValidateArgs) -> Result<(), Error> {
    super::signals::exit_on_signals();
    let mut last: Option<Error> = None;
    for file in &args.files {
        match app::validate(file, &args.params) {
            Ok(v) => {
                outln!(
                    "ok  {}  ({} datasets, {} stages)",
                    file.display(),
                    v.datasets,
                    v.stages
                );
                for line in &v.sweeps {
                    outln!("sweep  {}", crate::escape::terminal(line));
                }
                out!("{}", v.needs);
                for url in &v.servers {
                    outln!("{}", needs_server(url));
                }
                print_server(v.starts.as_deref(), v.restarts, &v.server_configs);
                if let Some((line, short)) = &v.mlperf {
                    outln!("{line}");
                    if let Some(why) = short {
                        errln!("warning: {}: {why}", file.display());
                    }
                }
                for row in v.needs.short() {
                    errln!("warning: {}: {}", file.display(), app::need_warning(row));
                }
                if let Some(b) = v.missing_baseline {
                    errln!(
                        "note: {}: its baseline {} does not exist yet (`run` needs it)",
                        file.display(),
                        b.display()
                    );
                }
            }
            Err(e) => {
                if let Some(earlier) = last.replace(e) {
                    print_error(&earlier);
                }
            }
        }
    }
    last.map_or(Ok(()), Err)
}

/// The server `run` starts: its command, or with configurations each one's instead (the
/// base command itself never runs then). Escaped: params and environment reach it.
fn print_server(starts: Option<&[String]>, restarts: bool, configs: &[(String, Vec<String>)]) {
    let shown = |c: &[String]| crate::escape::terminal(&c.join(" "));
    let how = if restarts {
        "restarted elsewhere by the run's program"
    } else {
        "started by the run"
    };
    match starts {
        Some(command) if configs.is_empty() => {
            outln!("server  {how}: {}", shown(command));
        }
        Some(_) => outln!("server  {how}, once per configuration ({}):", configs.len()),
        None => {}
    }
    for (name, command) in configs {
        outln!(
            "        config {}: {}",
            crate::escape::terminal(name),
            shown(command)
        );
    }
}

/// What to start before `run`: the server at `url` (masked already), and the simulator that
/// stands in for it on the same address.
fn needs_server(url: &str) -> String {
    let shown = crate::escape::terminal(url);
    let stand_in = url::Url::parse(url).ok().and_then(|u| {
        let host = u.host_str()?.to_string();
        Some(format!("{host}:{}", u.port_or_known_default()?))
    });
    match stand_in {
        Some(listen) => format!(
            "needs  a server at {shown}: start it first (`infermeter sim --listen {}` stands in \
             for a try), then `infermeter wait {shown}`",
            crate::escape::terminal(&listen)
        ),
        None => format!("needs  a server at {shown}: start it first"),
    }
}
