//! A small SVG writer for the report's plots: a document of panels, each with two axes,
//! line series with markers and dashes, labelled reference lines, and a legend that sits
//! above the panels (never over the data).
//!
//! Every element that tests and the HTML report look for is marked: the root carries
//! `class="infermeter-plot"` and `data-kind`, each panel `data-title`, each axis its scale and
//! bounds, each tick `data-value`, each series `data-name` (and `data-run` in comparisons),
//! each reference line `data-value`. Coordinates are printed with one decimal, so the same
//! results always give the same bytes.

use std::fmt::Write as _;

use super::axis::{Scale, Tick};
use super::style::{Marker, Style};

pub const FONT: f64 = 12.0;
const SMALL: f64 = 11.0;

/// Width of `text` in pixels at `size`, as a sans-serif font sets it on average (no font is
/// measured: the plot must come out the same everywhere).
pub fn text_px(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.58
}

/// Text from outside (stage names, titles) for SVG text and attributes: XML 1.0, see
/// [`crate::escape::xml`].
pub fn esc(s: &str) -> String {
    crate::escape::xml(s)
}

/// A pixel rectangle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// An axis: its scale, title, and ticks (computed to fit unless given).
#[derive(Debug, Clone)]
pub struct Axis {
    pub scale: Scale,
    pub title: String,
    pub ticks: Option<Vec<Tick>>,
}

impl Axis {
    pub fn new(scale: Scale, title: impl Into<String>) -> Axis {
        Axis {
            scale,
            title: title.into(),
            ticks: None,
        }
    }

    pub fn with_ticks(mut self, ticks: Vec<Tick>) -> Axis {
        self.ticks = Some(ticks);
        self
    }
}

/// Where data lands in a panel: the plot area and both scales.
#[derive(Debug, Clone, Copy)]
pub struct Panel {
    pub area: Rect,
    pub x: Scale,
    pub y: Scale,
}

impl Panel {
    pub fn px(&self, v: f64) -> f64 {
        (self.area.x + self.x.frac(v).clamp(0.0, 1.0) * self.area.w).clamp(0.0, 1e6)
    }

    pub fn py(&self, v: f64) -> f64 {
        (self.area.y + self.area.h - self.y.frac(v).clamp(0.0, 1.0) * self.area.h).clamp(0.0, 1e6)
    }
}

/// One entry of the legend.
#[derive(Debug, Clone)]
pub struct LegendEntry {
    pub label: String,
    pub style: Style,
}

/// Which way a reference line runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orient {
    /// At an x value, top to bottom.
    Vertical,
    /// At a y value, left to right.
    Horizontal,
}

/// An SVG document being written.
pub struct Doc {
    w: f64,
    h: f64,
    kind: String,
    title: String,
    body: String,
    /// Labels of vertical reference lines already placed per panel, to stagger the next.
    ref_labels: Vec<(f64, f64, f64)>,
}

impl Doc {
    /// A `w`×`h` plot of `kind` (`latency-distribution`, `profile`, `timeline`…) titled
    /// `title` (also its accessible name).
    pub fn new(kind: &str, title: &str, w: f64, h: f64) -> Doc {
        Doc {
            w,
            h,
            kind: kind.to_string(),
            title: title.to_string(),
            body: String::new(),
            ref_labels: Vec::new(),
        }
    }

    /// Sets the height (known once the legend and panels are laid out).
    pub fn set_height(&mut self, h: f64) {
        self.h = h;
    }

    /// The legend as rows of entries from `top`, wrapped to the document's width; returns
    /// the y below it.
    pub fn legend(&mut self, top: f64, entries: &[LegendEntry]) -> f64 {
        if entries.is_empty() {
            return top;
        }
        let row_h = 18.0;
        let (left, right) = (16.0, self.w - 16.0);
        let mut rows: Vec<Vec<&LegendEntry>> = vec![Vec::new()];
        let mut x = left;
        for e in entries {
            let w = 34.0 + text_px(&e.label, SMALL) + 16.0;
            if x + w > right && !rows.last().is_some_and(Vec::is_empty) {
                rows.push(Vec::new());
                x = left;
            }
            x += w;
            if let Some(r) = rows.last_mut() {
                r.push(e);
            }
        }
        self.body.push_str("<g class=\"legend\">\n");
        for (i, row) in rows.iter().enumerate() {
            let total: f64 = row
                .iter()
                .map(|e| 34.0 + text_px(&e.label, SMALL) + 16.0)
                .sum();
            let mut x = (self.w - total) / 2.0;
            let y = top + i as f64 * row_h + 9.0;
            for e in row {
                let _ = write!(
                    self.body,
                    "<g class=\"legend-entry\" data-name=\"{}\">",
                    esc(&e.label)
                );
                let _ = write!(
                    self.body,
                    "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" {}/>",
                    x,
                    x + 28.0,
                    e.style.stroke_attrs()
                );
                marker(&mut self.body, e.style, x + 14.0, y);
                let _ = writeln!(
                    self.body,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{SMALL:.0}\">{}</text></g>",
                    x + 34.0,
                    y + 4.0,
                    esc(&e.label)
                );
                x += 34.0 + text_px(&e.label, SMALL) + 16.0;
            }
        }
        self.body.push_str("</g>\n");
        top + rows.len() as f64 * row_h + 4.0
    }

    /// Draws a panel's frame, grid, ticks and axis titles in `outer` (room for the tick
    /// labels and titles is taken from it) and returns where its data goes.
    pub fn panel(&mut self, title: &str, outer: Rect, x: &Axis, y: &Axis) -> Panel {
        let area = Rect {
            x: outer.x + 62.0,
            y: outer.y + if title.is_empty() { 6.0 } else { 22.0 },
            w: (outer.w - 62.0 - 14.0).max(10.0),
            h: (outer.h - 44.0 - if title.is_empty() { 6.0 } else { 22.0 }).max(10.0),
        };
        let p = Panel {
            area,
            x: x.scale,
            y: y.scale,
        };
        let _ = writeln!(
            self.body,
            "<g class=\"panel\" data-title=\"{}\">",
            esc(title)
        );
        if !title.is_empty() {
            let _ = writeln!(
                self.body,
                "<text class=\"panel-title\" x=\"{:.1}\" y=\"{:.1}\" font-weight=\"bold\">{}</text>",
                area.x,
                area.y - 7.0,
                esc(title)
            );
        }
        let _ = writeln!(
            self.body,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#fbfbfb\" \
             stroke=\"#888888\" stroke-width=\"1\"/>",
            area.x, area.y, area.w, area.h
        );
        let xt = x
            .ticks
            .clone()
            .unwrap_or_else(|| x.scale.ticks(area.w, |s| text_px(s, SMALL)));
        let yt = y
            .ticks
            .clone()
            .unwrap_or_else(|| y.scale.ticks(area.h, |_| SMALL + 2.0));
        self.axis("x", &p, x, &xt);
        self.axis("y", &p, y, &yt);
        p
    }

    fn axis(&mut self, which: &str, p: &Panel, axis: &Axis, ticks: &[Tick]) {
        let (lo, hi) = axis.scale.bounds();
        let _ = writeln!(
            self.body,
            "<g class=\"axis {which}\" data-scale=\"{}\" data-min=\"{}\" data-max=\"{}\">",
            if axis.scale.is_log() { "log" } else { "linear" },
            num(lo),
            num(hi)
        );
        let a = p.area;
        for t in ticks {
            let _ = write!(
                self.body,
                "<g class=\"tick\" data-value=\"{}\">",
                num(t.value)
            );
            if which == "x" {
                let x = p.px(t.value);
                let _ = write!(
                    self.body,
                    "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#dddddd\"/>\
                     <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"{SMALL:.0}\">{}</text>",
                    a.y,
                    a.y + a.h + 4.0,
                    a.y + a.h + 16.0,
                    esc(&t.label)
                );
            } else {
                let y = p.py(t.value);
                let _ = write!(
                    self.body,
                    "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#dddddd\"/>\
                     <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"{SMALL:.0}\">{}</text>",
                    a.x - 4.0,
                    a.x + a.w,
                    a.x - 6.0,
                    y + 4.0,
                    esc(&t.label)
                );
            }
            self.body.push_str("</g>\n");
        }
        if which == "x" {
            let _ = writeln!(
                self.body,
                "<text class=\"axis-title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                a.x + a.w / 2.0,
                a.y + a.h + 34.0,
                esc(&axis.title)
            );
        } else {
            let (x, y) = (a.x - 48.0, a.y + a.h / 2.0);
            let _ = writeln!(
                self.body,
                "<text class=\"axis-title\" x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" \
                 transform=\"rotate(-90 {x:.1} {y:.1})\">{}</text>",
                esc(&axis.title)
            );
        }
        self.body.push_str("</g>\n");
    }

    /// A line through `points` (data coordinates) in `style`, with a marker on every
    /// `marker_every`-th point (0: none; the last point always gets one when any does).
    /// `run` names the run in a comparison (empty otherwise).
    pub fn series(
        &mut self,
        p: &Panel,
        name: &str,
        run: &str,
        style: Style,
        points: &[(f64, f64)],
        marker_every: usize,
    ) {
        let pts: Vec<(f64, f64)> = points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|&(x, y)| (p.px(x), p.py(y)))
            .collect();
        let _ = write!(
            self.body,
            "<g class=\"series\" data-name=\"{}\"{} data-points=\"{}\">",
            esc(name),
            if run.is_empty() {
                String::new()
            } else {
                format!(" data-run=\"{}\"", esc(run))
            },
            pts.len()
        );
        if pts.len() > 1 {
            let mut d = String::with_capacity(pts.len() * 14);
            for (i, (x, y)) in pts.iter().enumerate() {
                let _ = write!(d, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { " L" });
            }
            let _ = write!(
                self.body,
                "<path d=\"{d}\" fill=\"none\" {}/>",
                style.stroke_attrs()
            );
        }
        if marker_every > 0 || pts.len() == 1 {
            let every = marker_every.max(1);
            for (i, &(x, y)) in pts.iter().enumerate() {
                if i % every == 0 || i + 1 == pts.len() {
                    marker(&mut self.body, style, x, y);
                }
            }
        }
        self.body.push_str("</g>\n");
    }

    /// A labelled reference line at `value` (an SLA threshold, the knee, where sending
    /// stopped); `kind` says which (`data-kind`). Labels of lines in the same panel are
    /// staggered so they never overlap.
    pub fn reference(
        &mut self,
        p: &Panel,
        orient: Orient,
        kind: &str,
        value: f64,
        label: &str,
        style: Style,
    ) {
        let a = p.area;
        let _ = write!(
            self.body,
            "<g class=\"ref\" data-kind=\"{}\" data-axis=\"{}\" data-value=\"{}\">",
            esc(kind),
            if orient == Orient::Vertical { "x" } else { "y" },
            num(value)
        );
        let tw = text_px(label, SMALL);
        match orient {
            Orient::Vertical => {
                let x = p.px(value);
                let _ = write!(
                    self.body,
                    "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" {}/>",
                    a.y,
                    a.y + a.h,
                    style.stroke_attrs()
                );
                // Right of the line unless that leaves the panel; below earlier labels that
                // would overlap.
                let (lx, anchor) = if x + 4.0 + tw <= a.x + a.w {
                    (x + 4.0, "start")
                } else {
                    (x - 4.0, "end")
                };
                let (l0, l1) = if anchor == "start" {
                    (lx, lx + tw)
                } else {
                    (lx - tw, lx)
                };
                let mut row = 0;
                while self.ref_labels.iter().any(|&(y, s, e)| {
                    (y - (a.y + 13.0 + row as f64 * 14.0)).abs() < 1.0
                        && s < l1 + 4.0
                        && l0 < e + 4.0
                }) {
                    row += 1;
                }
                let ly = a.y + 13.0 + row as f64 * 14.0;
                self.ref_labels.push((ly, l0, l1));
                label_text(&mut self.body, lx, ly, anchor, style.color, label);
            }
            Orient::Horizontal => {
                let y = p.py(value);
                let _ = write!(
                    self.body,
                    "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" {}/>",
                    a.x,
                    a.x + a.w,
                    style.stroke_attrs()
                );
                // Above the line at the right, unless that leaves the panel.
                let ly = if y - 4.0 - SMALL >= a.y {
                    y - 4.0
                } else {
                    y + 13.0
                };
                label_text(
                    &mut self.body,
                    a.x + a.w - 4.0,
                    ly,
                    "end",
                    style.color,
                    label,
                );
            }
        }
        self.body.push_str("</g>\n");
    }

    /// A note in small grey text at (`x`, `y`).
    pub fn note(&mut self, x: f64, y: f64, anchor: &str, text: &str) {
        let _ = writeln!(
            self.body,
            "<text class=\"note\" x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" \
             font-size=\"{SMALL:.0}\" fill=\"#555555\">{}</text>",
            esc(text)
        );
    }

    /// Text in a series' colour next to a data point (an offered load beside its marker).
    pub fn point_label(&mut self, p: &Panel, x: f64, y: f64, text: &str, color: &str) {
        let _ = writeln!(
            self.body,
            "<text class=\"point-label\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{color}\">{}</text>",
            p.px(x) + 6.0,
            p.py(y) - 6.0,
            esc(text)
        );
    }

    /// Closes the panel opened last.
    pub fn end_panel(&mut self) {
        self.ref_labels.clear();
        self.body.push_str("</g>\n");
    }

    /// The finished document.
    pub fn finish(self) -> String {
        let (w, h) = (self.w, self.h);
        let mut out = String::with_capacity(self.body.len() + 600);
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" \
             viewBox=\"0 0 {w:.0} {h:.0}\" role=\"img\" class=\"infermeter-plot\" \
             data-kind=\"{}\" font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\" \
             font-size=\"{FONT:.0}\">\n<title>{}</title>\n\
             <rect width=\"{w:.0}\" height=\"{h:.0}\" fill=\"#ffffff\"/>\n\
             <text class=\"caption\" x=\"{:.1}\" y=\"22\" text-anchor=\"middle\" \
             font-size=\"16\" font-weight=\"bold\">{}</text>\n",
            esc(&self.kind),
            esc(&self.title),
            w / 2.0,
            esc(&self.title)
        );
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        out
    }
}

/// A label on a white halo so grid lines and curves do not run through it.
fn label_text(out: &mut String, x: f64, y: f64, anchor: &str, color: &str, text: &str) {
    let _ = write!(
        out,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" font-size=\"{SMALL:.0}\" \
         fill=\"{color}\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">{}</text>",
        esc(text)
    );
}

fn marker(out: &mut String, style: Style, x: f64, y: f64) {
    let r = 3.5;
    let fill = if style.filled { style.color } else { "#ffffff" };
    let common = format!(
        "fill=\"{fill}\" stroke=\"{}\" stroke-width=\"1.5\" class=\"marker\"",
        style.color
    );
    let _ = match style.marker {
        Marker::None => Ok(()),
        Marker::Circle => write!(
            out,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r:.1}\" {common}/>"
        ),
        Marker::Square => write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" {common}/>",
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        Marker::Triangle => write!(
            out,
            "<path d=\"M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z\" {common}/>",
            y - r - 1.0,
            x + r + 0.5,
            y + r,
            x - r - 0.5,
            y + r
        ),
        Marker::Diamond => write!(
            out,
            "<path d=\"M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z\" {common}/>",
            y - r - 1.0,
            x + r + 1.0,
            y + r + 1.0,
            x - r - 1.0
        ),
        Marker::Cross => write!(
            out,
            "<path d=\"M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}\" fill=\"none\" \
             stroke=\"{}\" stroke-width=\"2\" class=\"marker\"/>",
            x - r,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r,
            x + r,
            y - r,
            style.color
        ),
    };
}

/// A data value in an attribute: shortest exact-enough form.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    if s == "-0" { "0".into() } else { s }
}
