//! Signals during `infermeter run`: SIGINT (Ctrl-C), SIGTERM (CI cancellation, `timeout`,
//! `docker stop`, Kubernetes) and SIGHUP (a closed terminal) all mean "stop sending, let
//! in-flight requests finish briefly, write an interrupted result". A second signal means
//! "now": the process exits at once with the run-error code. `validate` and `plan`, which have
//! nothing to wind down, exit with that code at the first signal ([`exit_on_signals`]).

use tokio_util::sync::CancellationToken;

/// A token cancelled on the first SIGINT, SIGTERM or SIGHUP, watched by a thread of its own
/// for the rest of the process (so it works in every phase, report writing included).
pub fn interrupt_on_signals() -> CancellationToken {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let token = CancellationToken::new();
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            errln!("warning: cannot watch for signals ({e}); Ctrl-C will end the run abruptly");
            return token;
        }
    };
    let cancel = token.clone();
    // A read of a FIFO or terminal (a scenario given as `/dev/stdin`) now waits beside the
    // signals instead of blocking the process past them.
    crate::files::signals_handled();
    let spawned = std::thread::Builder::new()
        .name("infermeter-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let name = match signal {
                    SIGTERM => "SIGTERM",
                    SIGHUP => "SIGHUP",
                    _ => "Ctrl-C",
                };
                if cancel.is_cancelled() {
                    errln!("interrupted again ({name}): exiting now");
                    // An exit runs no destructors: the run's own server is killed here.
                    crate::app::kill_started_servers();
                    std::process::exit(crate::error::Error::Interrupted.exit_code());
                }
                errln!("interrupted ({name}): stopping, waiting briefly for in-flight requests…");
                cancel.cancel();
                crate::files::interrupt_waiting_reads();
            }
        });
    if let Err(e) = spawned {
        errln!("warning: cannot watch for signals ({e}); Ctrl-C will end the run abruptly");
    }
    token
}

/// For commands with nothing to wind down (`validate`, `plan`): the first SIGINT, SIGTERM or
/// SIGHUP ends the process at once with the interrupted exit code, whatever it is doing —
/// waiting for a FIFO nobody writes to, compiling a large data set. Without a thread to watch
/// them, the signals keep their default action (the process still ends, by the signal).
pub fn exit_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    // A read of a FIFO or terminal waits on a thread of its own, as in `run`.
    crate::files::signals_handled();
    let _ = std::thread::Builder::new()
        .name("infermeter-signals".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                errln!("interrupted");
                std::process::exit(crate::error::Error::Interrupted.exit_code());
            }
        });
}
