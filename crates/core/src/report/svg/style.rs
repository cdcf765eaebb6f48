//! Colours, markers and dashes: the Okabe–Ito palette (told apart by readers with any common
//! colour-vision deficiency), each colour paired with its own marker and dash pattern so that
//! the series stay apart in greyscale print too.

/// A point marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    None,
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
}

/// How a series or a reference line is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Style {
    pub color: &'static str,
    /// SVG `stroke-dasharray`; empty for solid.
    pub dash: &'static str,
    pub marker: Marker,
    pub width: f64,
    /// Filled markers (a comparison's current run) or hollow (its baseline).
    pub filled: bool,
}

impl Style {
    pub fn stroke_attrs(self) -> String {
        let dash = if self.dash.is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{}\"", self.dash)
        };
        format!(
            "stroke=\"{}\" stroke-width=\"{:.1}\"{dash}",
            self.color, self.width
        )
    }

    /// The same series as a comparison's baseline: hollow markers, dashed, thinner.
    pub fn as_baseline(self) -> Style {
        Style {
            dash: "7 4",
            filled: false,
            width: (self.width - 0.5).max(1.0),
            ..self
        }
    }
}

/// Okabe–Ito, without yellow (too pale on white): blue, vermillion, bluish green, reddish
/// purple, orange, sky blue, black.
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];
const MARKERS: [Marker; 6] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Cross,
    Marker::Circle,
];
const DASHES: [&str; 4] = ["", "6 3", "2 3", "8 3 2 3"];

/// The `i`-th series' style: colour, marker and dash all change with `i`.
pub fn series(i: usize) -> Style {
    Style {
        color: PALETTE[i % PALETTE.len()],
        dash: DASHES[i % DASHES.len()],
        marker: MARKERS[i % MARKERS.len()],
        width: 2.0,
        filled: true,
    }
}

/// An SLA threshold: vermillion, dashed.
pub const THRESHOLD: Style = Style {
    color: "#D55E00",
    dash: "5 3",
    marker: Marker::None,
    width: 1.5,
    filled: true,
};

/// A marker line that is not a limit (the knee, where sending stopped): black, dotted.
pub const NOTE: Style = Style {
    color: "#333333",
    dash: "2 3",
    marker: Marker::None,
    width: 1.5,
    filled: true,
};

/// The SLA-compliant maximum: bluish green, dash-dot.
pub const SLA_MAX: Style = Style {
    color: "#007A5A",
    dash: "8 3 2 3",
    marker: Marker::None,
    width: 1.5,
    filled: true,
};

/// A guide such as "achieved = offered": grey, thin.
pub const GUIDE: Style = Style {
    color: "#999999",
    dash: "3 3",
    marker: Marker::None,
    width: 1.0,
    filled: true,
};
