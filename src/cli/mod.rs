//! The command line: one file per subcommand; [`main`] parses arguments, runs the command and
//! returns the process exit code (see [`crate::exit`]).

use clap::{Parser, Subcommand};

/// Benchmark-as-code for LLM inference servers.
///
/// Write a KDL scenario, check it into git, and run it: infermeter compiles it into a
/// deterministic plan, drives an OpenAI-compatible server (or its embedded simulator), measures
/// every token, checks the SLAs, writes a report, and exits non-zero when an SLA fails.
#[derive(Debug, Parser)]
#[command(name = "infermeter", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {}

/// Parses the command line, runs the command, and returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                crate::exit::INVALID
            } else {
                crate::exit::OK
            };
        }
    };
    match cli.command {}
}
