//! Output: `results.json` (the versioned contract), Markdown reports through minijinja,
//! JUnit, SVG plots, and baseline comparison.

mod results;

pub use results::*;
