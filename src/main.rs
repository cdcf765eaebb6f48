//! The `infermeter` command: parses the command line, calls the library (`infermeter-core`),
//! renders what it returns, and maps its errors to exit codes (see `cli::main`).

// Every command returns the library's `Error`, once per process and never on a hot path; its
// size is the library's public API, which clippy leaves alone there (avoid-breaking-exported-
// api) and would flag here only because the command line is a binary.
#![allow(clippy::result_large_err)]

// mimalloc returns freed pages to the OS within milliseconds, so a burst of requests in flight
// (a server stall) does not leave the client's resident memory raised for the rest of the run,
// as glibc's malloc does; it is also cheaper per allocation on the request path.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

// The library's modules, under the names the command line's modules use.
use infermeter_core::{app, error, escape, exit, files, protocol, redact, units};

fn main() -> std::process::ExitCode {
    app::set_build_commit(env!("INFERMETER_COMMIT"));
    let code = cli::main();
    // Exit codes are 0–4 (`exit`); anything else would be a bug, reported as 3 (the run could
    // not be carried out) rather than wrapped.
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(exit::RUN_ERROR as u8))
}
