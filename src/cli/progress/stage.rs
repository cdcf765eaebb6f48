//! One stage's progress on stderr: a bar on a terminal, a plain line every few seconds
//! otherwise, with the elapsed time and, when the stage's size is known, an ETA.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::mode::ProgressMode;
use crate::app::StageProgress;

pub(super) struct Progress {
    name: String,
    total: Option<u64>,
    /// How long the plan says the stage sends, when it says.
    sending: Option<Duration>,
    bar: Option<ProgressBar>,
    lines: bool,
    start: Instant,
    last_line: Instant,
    /// The latest counts, for the closing line.
    last: Option<(u64, String)>,
}

const LINE_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    fn line(&self, done: u64, msg: &str) {
        let of = self.total.map(|t| format!("/{t}")).unwrap_or_default();
        errln!("[{}] {done}{of} done, {msg}", self.name);
    }

    /// `elapsed 12s, ETA 8s`: while the plan's sending time runs, the ETA is what is left of
    /// it (the first seconds' completions say little: the first answers are still coming);
    /// after it, or without one, from the rate so far when the total is known.
    fn timing(&self, done: u64) -> String {
        let elapsed = self.start.elapsed().as_secs_f64();
        let mut s = format!("elapsed {}", clock(elapsed));
        let planned_left = self
            .sending
            .map(|d| d.as_secs_f64() - elapsed)
            .filter(|left| *left > 0.0);
        if let Some(left) = planned_left {
            s.push_str(&format!(", ETA {}", clock(left)));
        } else if let Some(total) = self.total
            && done > 0
            && done < total
        {
            let eta = elapsed / done as f64 * (total - done) as f64;
            s.push_str(&format!(", ETA {}", clock(eta)));
        }
        s
    }

    pub(super) fn new(
        mode: ProgressMode,
        name: &str,
        total: Option<u64>,
        sending: Option<Duration>,
    ) -> Self {
        let tty = std::io::stderr().is_terminal();
        let bar = (mode == ProgressMode::Auto && tty).then(|| {
            let bar = match total {
                Some(n) => ProgressBar::new(n),
                None => ProgressBar::new_spinner(),
            };
            let template = if total.is_some() {
                "{prefix:>12} [{bar:30}] {pos}/{len} {msg}"
            } else {
                "{prefix:>12} {spinner} {pos} done {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(crate::escape::terminal(name));
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let now = Instant::now();
        Progress {
            // A stage name is the scenario's text: one line, no escape sequence.
            name: crate::escape::terminal(name),
            total,
            sending,
            bar,
            lines: mode == ProgressMode::Lines || (mode == ProgressMode::Auto && !tty),
            start: now,
            last_line: now,
            last: None,
        }
    }
}

impl StageProgress for Progress {
    fn update(&mut self, done: u64, failed: u64, (label, p50_ms): (&'static str, f64)) {
        // `--quiet`: nothing is shown, so nothing is formatted (100 times a second).
        if !self.shows() {
            return;
        }
        let elapsed = self.start.elapsed().as_secs_f64().max(1e-3);
        let msg = format!(
            "{:.1} req/s, {label} p50 {:.1} ms, {} error(s), {}",
            done as f64 / elapsed,
            p50_ms,
            failed,
            self.timing(done)
        );
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            bar.set_message(msg);
        } else if self.lines {
            if self.last_line.elapsed() >= LINE_EVERY {
                self.last_line = Instant::now();
                self.line(done, &msg);
            }
            self.last = Some((done, msg));
        }
    }

    fn shows(&self) -> bool {
        self.bar.is_some() || self.lines
    }

    /// Clears the bar; in line mode, prints the stage's closing counts.
    fn finish(self: Box<Self>) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        } else if let Some((done, msg)) = &self.last {
            self.line(*done, msg);
        }
    }
}

/// `42s`, `3m05s`, `1h02m`.
fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
#[path = "stage_tests.rs"]
mod tests;
