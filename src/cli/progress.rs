//! The console [`Observer`] of `infermeter run`: live progress per stage — a bar on a
//! terminal, a plain line every few seconds otherwise (CI logs), nothing with `--quiet`, each
//! with the elapsed time and, when the stage's size is known, an ETA — and warnings on
//! stderr. Driven by each stage's collector thread, never by request tasks. Also the
//! `--color` choice (with `NO_COLOR` respected).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::runner::{Observer, StageProgress};

/// `--color`: whether the summary's outcome words are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set (to anything but empty).
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour output going to a terminal (`tty`) or not.
    pub fn enabled(self, tty: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, periodic lines otherwise.
    Auto,
    Lines,
    Quiet,
}

/// Progress bars or lines on stderr, and warnings.
pub struct ConsoleObserver {
    mode: ProgressMode,
}

impl ConsoleObserver {
    pub fn new(mode: ProgressMode) -> Self {
        ConsoleObserver { mode }
    }
}

impl Observer for ConsoleObserver {
    fn stage_started(&self, name: &str, total: Option<u64>) -> Box<dyn StageProgress> {
        Box::new(Progress::new(self.mode, name, total))
    }

    fn warning(&self, message: &str) {
        eprintln!("warning: {}", crate::redact::secrets(message));
    }
}

struct Progress {
    name: String,
    total: Option<u64>,
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
        eprintln!("[{}] {done}{of} done, {msg}", self.name);
    }

    /// `elapsed 12s, ETA 8s`: the ETA from the rate so far, when the total is known.
    fn timing(&self, done: u64) -> String {
        let elapsed = self.start.elapsed().as_secs_f64();
        let mut s = format!("elapsed {}", clock(elapsed));
        if let Some(total) = self.total
            && done > 0
            && done < total
        {
            let eta = elapsed / done as f64 * (total - done) as f64;
            s.push_str(&format!(", ETA {}", clock(eta)));
        }
        s
    }

    fn new(mode: ProgressMode, name: &str, total: Option<u64>) -> Self {
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
            bar.set_prefix(name.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let now = Instant::now();
        Progress {
            name: name.to_string(),
            total,
            bar,
            lines: mode == ProgressMode::Lines || (mode == ProgressMode::Auto && !tty),
            start: now,
            last_line: now,
            last: None,
        }
    }
}

impl StageProgress for Progress {
    fn update(&mut self, done: u64, failed: u64, ttft_p50_ms: f64) {
        let elapsed = self.start.elapsed().as_secs_f64().max(1e-3);
        let msg = format!(
            "{:.1} req/s, TTFT p50 {:.1} ms, {} error(s), {}",
            done as f64 / elapsed,
            ttft_p50_ms,
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
mod tests {
    use super::*;

    #[test]
    fn clocks_read_at_a_glance() {
        assert_eq!(clock(4.4), "4s");
        assert_eq!(clock(185.0), "3m05s");
        assert_eq!(clock(3720.0), "1h02m");
    }

    #[test]
    fn colour_is_off_unless_asked_for_or_on_a_terminal() {
        assert!(ColorChoice::Always.enabled(false));
        assert!(!ColorChoice::Never.enabled(true));
        assert!(!ColorChoice::Auto.enabled(false));
    }
}
