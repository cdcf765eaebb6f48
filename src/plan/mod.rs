//! [`Scenario`](crate::scenario::Scenario) → deterministic, hashed [`Plan`].
//!
//! Entry point: [`compile`].

mod model;

pub use model::*;
