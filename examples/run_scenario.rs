//! infermeter as a library: run a scenario from your own program (or your own tests), watch
//! its progress, and read the typed outcome.
//!
//!     cargo run --release --example run_scenario -- scenarios/quickstart.kdl
//!
//! Prints one line per finished stage, then each SLA verdict and the exit code `infermeter run`
//! would have used.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use infermeter_core::app::{Outcome, RunSettings, run_scenario};
use infermeter_core::runner::{Observer, StageProgress};

/// Counts what every stage finished, and prints it when the stage ends.
struct Lines;

struct StageLine {
    name: String,
    done: Arc<AtomicU64>,
}

impl Observer for Lines {
    fn stage_started(&self, name: &str, total: Option<u64>) -> Box<dyn StageProgress> {
        match total {
            Some(t) => println!("stage {name}: sending {t} requests"),
            None => println!("stage {name}: sending"),
        }
        Box::new(StageLine {
            name: name.to_string(),
            done: Arc::default(),
        })
    }

    fn warning(&self, message: &str) {
        eprintln!("warning: {message}");
    }
}

impl StageProgress for StageLine {
    fn update(&mut self, done: u64, _failed: u64, _p50: (&'static str, f64)) {
        self.done.store(done, Ordering::Relaxed);
    }

    fn finish(self: Box<Self>) {
        println!(
            "stage {}: {} requests done",
            self.name,
            self.done.load(Ordering::Relaxed)
        );
    }
}

fn main() {
    let scenario = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "scenarios/quickstart.kdl".into());
    let out = std::env::temp_dir().join("infermeter-example");
    let settings = RunSettings {
        out_dir: Some(out),
        plots: false,
        ..RunSettings::new(scenario)
    };
    let report = match run_scenario(&settings, Arc::new(Lines)) {
        Ok(r) => r,
        Err(e) => {
            // The same error `infermeter run` would print, and its exit code.
            eprintln!("error: {}", e.chain());
            std::process::exit(e.exit_code());
        }
    };
    for v in &report.results.sla {
        let stage = v.stage.as_deref().unwrap_or("all");
        let verdict = if v.passed { "pass" } else { "FAIL" };
        println!(
            "{verdict}  {} on {stage}: {:.2} {}",
            v.assertion,
            v.observed,
            v.unit()
        );
    }
    match &report.outcome {
        Outcome::Completed => println!("completed"),
        Outcome::Interrupted => println!("interrupted"),
        Outcome::Aborted(why) => println!("{why}"),
        Outcome::Failed(causes) => println!("{} problem(s) on the way", causes.len()),
    }
    println!(
        "results in {}; exit code {}",
        report.out_dir.display(),
        report.exit_code()
    );
}
