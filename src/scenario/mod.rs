//! KDL scenario file → typed, validated [`Scenario`] with source spans.
//!
//! Entry point: [`load`]. All problems in a file are reported at once, each with a span and a
//! hint, as one [`ScenarioError`] (a `miette::Diagnostic`).

mod model;

pub use model::*;
