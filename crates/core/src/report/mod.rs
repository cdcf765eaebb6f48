//! Output rendered from a run's [`Results`](crate::results::Results): Markdown reports
//! through minijinja, the terminal summary, JUnit, SVG plots, and baseline comparison.

mod agreement;
mod attribution;
mod compare;
mod compare_change;
mod compare_render;
mod compare_spec;
mod compare_urls;
mod configs;
mod csv;
mod distribution;
mod error;
mod flagged;
mod frontier;
mod groups;
mod headline;
mod html;
mod junit;
mod llmd;
mod markdown;
mod mlperf;
mod names;
mod network;
mod numbers;
mod outputs;
mod plots;
mod profile;
mod profile_compare;
mod profile_group;
mod profile_quality;
mod quality;
#[cfg(feature = "parquet")]
mod requests_parquet;
mod spec;
mod summary;
mod svg;
mod telemetry;
mod templates;
mod timeline;
mod urls;
mod view;
mod view_rows;
mod workload;
mod write;

pub use agreement::{p_value, render_agreement_markdown, render_agreement_text};
pub use attribution::AttributionRow;
pub use compare::*;
pub use compare_change::{Change, CompareOptions, ERROR_RATE_NOISE_PP, MetricChange, Tolerances};
pub use compare_render::{render_compare_markdown, render_compare_text};
pub use compare_urls::{UrlComparison, UrlFigure, compare_urls};
pub use configs::{CONFIGS_PLOT, ConfigViewRow, ConfigsView, configs_svg, configs_view};
pub use csv::stages_csv;
pub use distribution::{DISTRIBUTION_METRICS, distribution_svg};
pub use error::*;
pub use flagged::Flagged;
pub use frontier::{FrontierView, frontier_file_name, frontier_line, frontier_svg, frontier_views};
pub use headline::{Headline, absence, headline, mark, mark_word};
pub use html::{HTML_TEMPLATE, HtmlBaseline, render_html};
pub use junit::*;
pub use llmd::{LLMD_REPORT_VERSION, llmd_report};
pub use markdown::*;
pub use mlperf::{MlperfRuleRow, MlperfView, mlperf_view};
pub use names::{
    Plot, cdf_file_name, profile_file_name, server_timeline_file_name, stage_slug,
    timeline_file_name,
};
pub use numbers::{num, short};
pub use outputs::{
    ANSWERS_FILE, CSV_FILE, HTML_FILE, JUNIT_FILE, LLMD_FILE, OUTPUTS, Output, OutputFile,
    PARQUET_FILE, PR_COMMENT_FILE, REPORT_FILE, REQUESTS_FILE, Rendering, Stale, Writer,
    is_plot_file, plot_files, report_formats,
};
pub use plots::*;
pub use profile::{profile_svg, profiles};
pub use profile_compare::{compare_plot_path, compare_profile_svgs, compare_svgs};
pub use profile_group::{ProfileGroup, ProfileRow, RowAccuracy};
pub use profile_quality::{quality_file_name, quality_svg};
#[cfg(feature = "parquet")]
pub use requests_parquet::{ROWS_PER_GROUP, requests_parquet};

/// `requests.parquet` in a build without the `parquet` feature: refused, naming the feature.
#[cfg(not(feature = "parquet"))]
pub fn requests_parquet(
    _results: &crate::results::Results,
    _rows: &std::path::Path,
    out: &std::path::Path,
) -> Result<(), ReportError> {
    Err(ReportError::NotBuilt {
        path: out.to_path_buf(),
        feature: "parquet",
    })
}
pub use summary::{render_summary_text, render_summary_text_with};
pub use telemetry::{
    GpuRow, ServerRow, TelemetryView, ThrottledRow, render_telemetry, telemetry_view,
    write_telemetry_plots,
};
pub use templates::{TELEMETRY_TEMPLATE, TELEMETRY_TEMPLATE_NAME, TEMPLATE_FUEL};
pub use timeline::timeline_svg;
pub use view::*;
pub use view_rows::{KeyValue, LatencyRow, TurnRow};
pub use write::*;
