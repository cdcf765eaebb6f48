//! `infermeter sim`: serves the embedded simulator until Ctrl-C or SIGTERM (what a `server`
//! block's stop, `docker stop` or Kubernetes send), then shuts down gracefully.

mod args;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use args::SimArgs;

use crate::app::{SimConfig, TraceOptions};
use crate::error::Error;

/// Runs `infermeter sim` until Ctrl-C or SIGTERM.
pub fn run(args: SimArgs) -> Result<(), Error> {
    let config = args.resolve()?;
    let runtime = tokio::runtime::Runtime::new().map_err(Error::Runtime)?;
    runtime.block_on(serve(config, args.listen, args.trace))
}

async fn serve(config: SimConfig, listen: SocketAddr, trace: Option<PathBuf>) -> Result<(), Error> {
    // Before the address is printed: a SIGTERM sent as soon as it is ready must find the watch.
    let mut term = Terminate::watch();
    let model = config.model.clone();
    let options = TraceOptions {
        file: trace,
        record: false,
    };
    let handle = crate::app::start_sim(config, listen, options).await?;
    outln!(
        "infermeter sim listening on {} (model {model}); Ctrl-C to stop",
        handle.base_url()
    );
    let name = tokio::select! {
        r = tokio::signal::ctrl_c() => match r {
            Ok(()) => "Ctrl-C",
            Err(e) => {
                errln!("error: failed to wait for Ctrl-C: {e}");
                "an error"
            }
        },
        () = term.next() => "SIGTERM",
    };
    errln!("shutting down on {name} (waiting for in-flight responses; Ctrl-C again to quit now)");
    tokio::select! {
        r = handle.shutdown() => Ok(r?),
        _ = tokio::signal::ctrl_c() => Ok(()),
        () = term.next() => Ok(()),
    }
}

/// SIGTERM, as a stream of its arrivals; never arrives when it cannot be watched (Ctrl-C
/// still works then), nor when it was ignored when the simulator started (as `nohup` and
/// `trap '' TERM` leave it: a program keeps an inherited ignored signal ignored).
struct Terminate(Option<tokio::signal::unix::Signal>);

impl Terminate {
    fn watch() -> Terminate {
        use tokio::signal::unix::{SignalKind, signal};
        if ignored(libc::SIGTERM) {
            return Terminate(None);
        }
        match signal(SignalKind::terminate()) {
            Ok(s) => Terminate(Some(s)),
            Err(e) => {
                errln!("warning: cannot watch for SIGTERM ({e}); Ctrl-C stops the simulator");
                Terminate(None)
            }
        }
    }

    async fn next(&mut self) {
        match &mut self.0 {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
}

/// Whether `sig` is ignored now (inherited so from the parent).
fn ignored(sig: i32) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter, and sigaction(2) with a null new
    // action only reads the current disposition into it.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn resolve(args: &[&str]) -> SimConfig {
        let cli = Cli::try_parse_from(std::iter::once("sim").chain(args.iter().copied()))
            .expect("flags parse");
        cli.sim.resolve().expect("valid settings")
    }

    #[test]
    fn real_server_behaviour_flags() {
        assert_eq!(resolve(&[]), SimConfig::default());
        let c = resolve(&[
            "--close-after-stream",
            "--prefix-cache",
            "--prefix-cache-capacity",
            "1000",
            "--prefix-cache-block",
            "128",
            "--timings",
            "true",
            "--metrics-histograms",
        ]);
        assert!(c.close_after_stream && c.prefix_cache && c.timings && c.metrics_histograms);
        assert_eq!((c.prefix_cache_capacity, c.prefix_cache_block), (1000, 128));
        assert!(!resolve(&["--timings", "false"]).timings);
        let bad = Cli::try_parse_from(["sim", "--prefix-cache-block", "0"])
            .unwrap()
            .sim
            .resolve();
        assert!(bad.unwrap_err().to_string().contains("prefix-cache-block"));
    }
}
