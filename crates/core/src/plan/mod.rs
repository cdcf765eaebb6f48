//! [`Scenario`](crate::scenario::Scenario) → deterministic, hashed [`Plan`].
//!
//! Entry point: [`compile`]. Then [`Plan::request`] draws any request's recipe on demand,
//! [`render_text`] prints the plan for `infermeter plan`, and [`write_json`] streams it out.

mod compile;
mod data_file;
mod error;
mod estimate;
mod groups;
mod hash;
mod hooks;
mod json;
mod load;
mod model;
mod profile;
mod recipe;
mod render;
mod seed;
mod server_axis;
mod session;
mod slice;
mod stage;

pub use compile::compile;
pub use error::PlanError;
pub use estimate::sweep_lines;
pub use hash::plan_hash;
pub use hooks::HookPlan;
pub use json::write_json;
pub use model::*;
pub use profile::{point_name, probe_stage, shape_group};
pub use render::render_text;
pub use session::SessionRecipe;
pub use slice::Slice;

#[cfg(test)]
mod prompt_tests;
#[cfg(test)]
pub(crate) mod tests;
