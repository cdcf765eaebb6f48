//! The SVG writer behind every plot: axes with ticks that never overlap (`axis`), a document
//! of panels, series and labelled reference lines (`canvas`), and the colour-blind-safe
//! styles (`style`).

pub mod axis;
pub mod canvas;
pub mod style;

pub use axis::{Scale, Tick};
pub use canvas::{Axis, Doc, LegendEntry, Orient, Rect};
