//! infermeter as a library: [`run_scenario`] runs a scenario file end to end — load, compile,
//! run, evaluate the SLAs, write `results.json`, the report, plots and JUnit — and returns a
//! typed [`RunReport`]; everything `infermeter run` does except parsing arguments and
//! printing. Progress goes to the caller's [`Observer`](crate::runner::Observer); every failure
//! is one [`Error`], whose exit code is chosen in [`crate::exit`] alone.
//!
//! ```no_run
//! use std::sync::Arc;
//! use infermeter::app::{RunSettings, run_scenario};
//!
//! let settings = RunSettings::new("scenarios/quickstart.kdl");
//! let report = run_scenario(&settings, Arc::new(())).expect("the run could be carried out");
//! println!("passed: {}, exit code {}", report.results.passed, report.exit_code());
//! ```

mod inputs;
mod load;
mod outcome;
mod outputs;
mod provenance;
mod run;
mod settings;

pub use crate::error::Error;
pub use inputs::ReportInputs;
pub use load::{TargetOverride, load_scenario};
pub use outcome::{Outcome, RunReport};
pub use provenance::{BUILD_COMMIT, redact_args};
pub use run::run_scenario;
pub use settings::RunSettings;
