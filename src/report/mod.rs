//! Output rendered from a run's [`Results`](crate::results::Results): Markdown reports
//! through minijinja, the terminal summary, JUnit, SVG plots, and baseline comparison.

mod attribution;
mod compare;
mod error;
mod headline;
mod junit;
mod markdown;
mod plots;
mod profile;
mod profile_compare;
mod summary;
mod telemetry;
mod view;
mod write;

pub use attribution::AttributionRow;
pub use compare::*;
pub use error::*;
pub use headline::{Headline, headline, mark};
pub use junit::*;
pub use markdown::*;
pub use plots::*;
pub use profile::{
    KNEE_MIN_GAIN, KNEE_TTFT_FACTOR, ProfileGroup, ProfileRow, knee, profile_file_name,
    profile_svg, profiles,
};
pub use profile_compare::{compare_plot_path, compare_profile_svgs};
pub use summary::render_summary_text;
pub use telemetry::{server_timeline_file_name, telemetry_markdown, write_telemetry_plots};
pub use view::*;
pub use write::*;
