//! What a stage's requests carried besides their text: the request bodies' size (what was
//! sent, bytes) and their images (count, pixels, encoded bytes), and the vision tokens the
//! server counted for those images — its prompt count (`usage.prompt_tokens`) less the text
//! tokens the plan counted — so that a vision-language model's image cost shows per stage.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record::{RequestRecord, TokenSource};

/// A stage's payload figures. *Added in schema 3.*
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Payload {
    /// Request bodies sent (every request whose body was built, failed ones included).
    pub requests: u64,
    /// Their bytes, summed.
    pub request_bytes: u64,
    /// `request_bytes` over `requests`.
    pub request_bytes_mean: f64,
    /// Images sent, their pixels and their encoded bytes (before base64), summed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub images: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub image_pixels: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub image_bytes: u64,
    /// Ok requests with images whose prompt count came from the server's usage: those the
    /// vision tokens are measured on.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vision_requests: u64,
    /// Over those: the server's prompt tokens less the plan's text tokens, summed (the
    /// images' tokens, plus the chat template's few).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vision_tokens: u64,
    /// `vision_tokens` per image of those requests; absent when none was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision_tokens_per_image: Option<f64>,
    /// Images of the `vision_requests` (the denominator of `vision_tokens_per_image`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vision_images: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Payload {
    /// Adds one request's figures. Every sum saturates: a request's pixels and bytes come
    /// from image headers and files, and a sum that wrapped would report a small number.
    pub fn record(&mut self, r: &RequestRecord) {
        if r.request_bytes > 0 {
            self.requests = self.requests.saturating_add(1);
            self.request_bytes = self.request_bytes.saturating_add(r.request_bytes);
        }
        self.images = self.images.saturating_add(u64::from(r.images));
        self.image_pixels = self.image_pixels.saturating_add(r.image_pixels);
        self.image_bytes = self.image_bytes.saturating_add(r.image_bytes);
        // The record's input count is the server's only when its usage said so.
        if r.ok() && r.images > 0 && r.token_source == TokenSource::Usage {
            self.vision_requests = self.vision_requests.saturating_add(1);
            self.vision_images = self.vision_images.saturating_add(u64::from(r.images));
            let vision = r.input_tokens.saturating_sub(r.planned_input_tokens);
            self.vision_tokens = self.vision_tokens.saturating_add(u64::from(vision));
        }
        self.derive();
    }

    /// Adds another summary's figures (the rounds of a stage, the shards of a run), saturating
    /// (the results files merged are validated, but a sum of many must still not wrap).
    pub fn add(&mut self, o: &Payload) {
        let sum = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        sum(&mut self.requests, o.requests);
        sum(&mut self.request_bytes, o.request_bytes);
        sum(&mut self.images, o.images);
        sum(&mut self.image_pixels, o.image_pixels);
        sum(&mut self.image_bytes, o.image_bytes);
        sum(&mut self.vision_requests, o.vision_requests);
        sum(&mut self.vision_images, o.vision_images);
        sum(&mut self.vision_tokens, o.vision_tokens);
        self.derive();
    }

    fn derive(&mut self) {
        self.request_bytes_mean = self.request_bytes as f64 / self.requests.max(1) as f64;
        self.vision_tokens_per_image =
            (self.vision_images > 0).then(|| self.vision_tokens as f64 / self.vision_images as f64);
    }

    /// Several summaries' figures added (rounds, shards); absent when none has any.
    pub fn sum<'a>(parts: impl Iterator<Item = Option<&'a Payload>>) -> Option<Payload> {
        let mut total: Option<Payload> = None;
        for p in parts.flatten() {
            total.get_or_insert_with(Payload::default).add(p);
        }
        total
    }

    /// The figures, when any request body was sent.
    pub fn finish(&self) -> Option<Payload> {
        (self.requests > 0).then(|| self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ErrorKind;

    #[test]
    fn vision_tokens_are_the_servers_count_less_the_texts() {
        let mut p = Payload::default();
        let with_images = |input, planned, error| RequestRecord {
            request_bytes: 1000,
            images: 2,
            image_pixels: 2 * 64 * 64,
            image_bytes: 900,
            input_tokens: input,
            planned_input_tokens: planned,
            error,
            ..RequestRecord::default()
        };
        p.record(&with_images(150, 20, None));
        p.record(&with_images(20, 20, Some(ErrorKind::Http(500))));
        let mut estimated = with_images(500, 20, None);
        estimated.token_source = TokenSource::Tokenizer;
        p.record(&estimated);
        p.record(&RequestRecord {
            request_bytes: 100,
            ..RequestRecord::default()
        });
        assert_eq!(p.requests, 4);
        assert_eq!(p.request_bytes, 3100);
        assert_eq!(p.request_bytes_mean, 775.0);
        assert_eq!((p.images, p.image_bytes), (6, 2700));
        assert_eq!((p.vision_requests, p.vision_tokens), (1, 130));
        assert_eq!(p.vision_tokens_per_image, Some(65.0));
        let mut twice = p.clone();
        twice.add(&p);
        assert_eq!(twice.vision_tokens_per_image, Some(65.0));
        assert_eq!(twice.request_bytes, 6200);
        assert!(Payload::default().finish().is_none());
    }
}
