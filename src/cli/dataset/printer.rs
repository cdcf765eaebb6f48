//! `dataset fetch`'s progress on stderr, and sizes as people read them.

use std::time::Instant;

use crate::app::FetchEvent;

/// Progress on stderr: a line when the download starts, every few seconds, on a retry.
pub(super) struct Printer {
    last: Option<Instant>,
    started: Instant,
}

impl Printer {
    pub(super) fn new() -> Self {
        Printer {
            last: None,
            started: Instant::now(),
        }
    }

    pub(super) fn event(&mut self, e: FetchEvent) {
        match e {
            FetchEvent::Start { url, size, from } => {
                if from > 0 {
                    errln!("resuming {url} at {} of {}", mb(from), mb(size));
                } else {
                    errln!("downloading {url} ({})", mb(size));
                }
            }
            FetchEvent::Progress { done, total } => {
                let now = Instant::now();
                if self
                    .last
                    .is_none_or(|t| now.duration_since(t).as_secs() >= 2)
                    || done == total
                {
                    self.last = Some(now);
                    let pct = if total == 0 {
                        100.0
                    } else {
                        done as f64 * 100.0 / total as f64
                    };
                    errln!(
                        "  {} of {} ({pct:.0}%, {:.0}s)",
                        mb(done),
                        mb(total),
                        self.started.elapsed().as_secs_f64()
                    );
                }
            }
            FetchEvent::Retry {
                from,
                attempt,
                reason,
            } => errln!(
                "  connection broke ({reason}); retry {attempt} from {}",
                mb(from)
            ),
            FetchEvent::Verifying => errln!("  computing sha256…"),
        }
    }
}

pub(super) fn mb(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{bytes} bytes")
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}
