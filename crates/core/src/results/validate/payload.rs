//! The validator's rules for a stage's payload figures (`payload`, schema 3): every sum a
//! count a run can reach, and the images measured for vision tokens a part of those sent. A
//! result past them would have merges and rounds add numbers near the end of `u64` (the sums
//! saturate, but a figure read back must be one a run produced).

use super::Checker;
use crate::metrics::StageSummary;

impl Checker {
    pub(super) fn payload(&mut self, at: &str, s: &StageSummary) {
        let Some(p) = &s.payload else { return };
        let at = format!("{at}.payload");
        for (name, n) in [
            ("requests", p.requests),
            ("request_bytes", p.request_bytes),
            ("images", p.images),
            ("image_pixels", p.image_pixels),
            ("image_bytes", p.image_bytes),
            ("vision_requests", p.vision_requests),
            ("vision_images", p.vision_images),
            ("vision_tokens", p.vision_tokens),
        ] {
            self.count(&format!("{at}.{name}"), n);
        }
        self.non_negative(&format!("{at}.request_bytes_mean"), p.request_bytes_mean);
        self.at_most(
            &format!("{at}.vision_images"),
            p.vision_images,
            p.images,
            "the images",
        );
        if let Some(v) = p.vision_tokens_per_image {
            self.non_negative(&format!("{at}.vision_tokens_per_image"), v);
        }
    }
}
