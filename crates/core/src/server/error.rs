//! What goes wrong with a server infermeter starts. Every variant that the server itself
//! caused carries its last log lines (secrets masked), so the error says why in the server's
//! own words.

use std::path::PathBuf;

/// A started server's failure.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot start the server `{program}`")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the server's program `{program}` is not an executable file nor on PATH")]
    NotFound { program: String },
    #[error(
        "something already answers at {address} before the server was started (another server \
         on that port?); stop it, or give the server and the target another port"
    )]
    PortInUse { address: String },
    #[error("cannot write the server's log {}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the server's restart program failed ({status}){}", lines(last))]
    RestartFailed { status: String, last: Vec<String> },
    #[error("the server exited ({status}) before it was ready{}", lines(last))]
    ExitedEarly { status: String, last: Vec<String> },
    #[error("the server was not ready after {}s ({why}){}", waited.as_secs(), lines(last))]
    NotReady {
        waited: std::time::Duration,
        why: String,
        last: Vec<String>,
    },
    #[error("the server exited ({status}) during the run{}", lines(last))]
    Died { status: String, last: Vec<String> },
    #[error("interrupted while waiting for the server to be ready")]
    Interrupted,
}

/// `; its last lines:` and the lines, one per line; nothing when there are none.
fn lines(last: &[String]) -> String {
    if last.is_empty() {
        return "; it wrote nothing".into();
    }
    let mut out = String::from("; its last lines:");
    for l in last {
        out.push_str("\n  | ");
        out.push_str(l);
    }
    out
}
