//! Image content parts (`{"type":"image_url","image_url":{"url":…}}`) as a vision-language
//! model counts them: a `data:` URI's PNG or JPEG is read as far as its header, and the image
//! costs one token per 28×28-pixel patch, rounded up on each side (Qwen2-VL's 14-pixel patches
//! merged two by two; 512×512 is 361 tokens). A URL the simulator cannot fetch (`http…`)
//! costs [`REMOTE_IMAGE_TOKENS`]. A `data:` URI that is not a PNG or JPEG, or whose base64 is
//! broken, fails the request with a 400, as vLLM's does.

use base64::Engine as _;
use serde::Deserialize;

use crate::protocol::{MAX_HEADER_PIXELS, header_pixels, image_size};

/// The side of one image token's patch, in pixels.
pub(crate) const PATCH: u64 = 28;
/// What an image given by URL costs (the simulator fetches nothing).
pub(crate) const REMOTE_IMAGE_TOKENS: u64 = 256;
/// The most base64 text one image may take (64 MiB decoded, about): more is refused.
const MAX_DATA_URI: usize = 96 << 20;

/// One image part: the tokens it costs and a key that tells images apart (their prompt ids,
/// and so the prefix cache, differ with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawImageUrl")]
pub(crate) struct ImageRef {
    pub tokens: u64,
    pub key: u64,
}

#[derive(Deserialize)]
struct RawImageUrl {
    url: String,
}

/// Why an image part is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum VisionError {
    #[error("image data URI is not base64 (`data:image/…;base64,…`)")]
    NotBase64,
    #[error("image data URI is larger than {MAX_DATA_URI} bytes")]
    TooLarge,
    #[error("image data is not valid base64")]
    BadBase64,
    #[error("image is neither a PNG nor a JPEG with a readable size")]
    UnknownFormat,
    #[error("image has a side of 0 pixels")]
    Empty,
    #[error(
        "image header says {width}x{height} pixels, more than the {MAX_HEADER_PIXELS} an image may have"
    )]
    TooManyPixels { width: u64, height: u64 },
    #[error("image URL must be a data: URI or an http(s) URL")]
    BadUrl,
}

impl TryFrom<RawImageUrl> for ImageRef {
    type Error = VisionError;
    fn try_from(raw: RawImageUrl) -> Result<ImageRef, VisionError> {
        let url = raw.url;
        let key = fnv(url.as_bytes());
        if url.starts_with("http://") || url.starts_with("https://") {
            return Ok(ImageRef {
                tokens: REMOTE_IMAGE_TOKENS,
                key,
            });
        }
        let Some(rest) = url.strip_prefix("data:") else {
            return Err(VisionError::BadUrl);
        };
        let (_, b64) = rest.split_once(";base64,").ok_or(VisionError::NotBase64)?;
        if b64.len() > MAX_DATA_URI {
            return Err(VisionError::TooLarge);
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| VisionError::BadBase64)?;
        let (w, h) = image_size(&bytes).ok_or(VisionError::UnknownFormat)?;
        if w == 0 || h == 0 {
            return Err(VisionError::Empty);
        }
        // Refused as vLLM's image loader refuses a decompression bomb; and a header's sides
        // must not reach the token count unbounded.
        if header_pixels(w, h).is_none() {
            return Err(VisionError::TooManyPixels {
                width: w,
                height: h,
            });
        }
        Ok(ImageRef {
            tokens: patches(w, h),
            key,
        })
    }
}

/// Tokens of a `w`×`h` image.
pub(crate) fn patches(w: u64, h: u64) -> u64 {
    w.div_ceil(PATCH).saturating_mul(h.div_ceil(PATCH))
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use base64::Engine;

    use super::*;

    /// A real `w`×`h` image encoded as `format` (the encoders the data sets use), as a data
    /// URI: the simulator reads only its header, so the pixels are plain grey.
    fn image(format: &str, w: u32, h: u32) -> String {
        let rgb = vec![128u8; (w * h * 3) as usize];
        let mut file = Vec::new();
        if format == "png" {
            let mut enc = png::Encoder::new(&mut file, w, h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut writer = enc.write_header().unwrap();
            writer.write_image_data(&rgb).unwrap();
            writer.finish().unwrap();
        } else {
            jpeg_encoder::Encoder::new(&mut file, 85)
                .encode(&rgb, w as u16, h as u16, jpeg_encoder::ColorType::Rgb)
                .unwrap();
        }
        let b64 = base64::engine::general_purpose::STANDARD.encode(&file);
        format!("data:image/{format};base64,{b64}")
    }

    fn part(url: &str) -> Result<ImageRef, serde_json::Error> {
        serde_json::from_value(serde_json::json!({ "url": url }))
    }

    #[test]
    fn tokens_follow_the_images_size() {
        for format in ["png", "jpeg"] {
            for (w, h) in [(512, 512), (29, 1), (1000, 300)] {
                let r = part(&image(format, w, h)).unwrap();
                assert_eq!(r.tokens, patches(w.into(), h.into()), "{format} {w}x{h}");
            }
        }
        assert_eq!(patches(512, 512), 361);
        assert_eq!(part("https://h/a.png").unwrap().tokens, REMOTE_IMAGE_TOKENS);
        assert_ne!(
            part("https://h/a.png").unwrap().key,
            part("https://h/b.png").unwrap().key
        );
    }

    #[test]
    fn broken_images_are_refused() {
        for bad in [
            "data:image/png;base64,!!!",
            "data:image/png,rawbytes",
            "data:image/gif;base64,R0lGODlhAQABAAAAACw=",
            "data:image/png;base64,iVBORw0KGgo=",
            "file:///etc/passwd",
            "",
        ] {
            assert!(part(bad).is_err(), "{bad}");
        }
        // A PNG header that says 0×0.
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&[0; 8]);
        let uri = format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&png)
        );
        assert!(part(&uri).is_err());
    }

    #[test]
    fn a_header_claiming_more_pixels_than_an_image_may_have_is_refused() {
        let header = |w: u32, h: u32| {
            let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
            png.extend_from_slice(&w.to_be_bytes());
            png.extend_from_slice(&h.to_be_bytes());
            ImageRef::try_from(RawImageUrl {
                url: format!(
                    "data:image/png;base64,{}",
                    base64::engine::general_purpose::STANDARD.encode(&png)
                ),
            })
        };
        assert_eq!(
            header(u32::MAX, u32::MAX),
            Err(VisionError::TooManyPixels {
                width: u64::from(u32::MAX),
                height: u64::from(u32::MAX)
            })
        );
        assert!(header(16_384, 16_385).is_err());
        // The largest allowed costs its patches, far from any wrap.
        assert_eq!(
            header(16_384, 16_384).unwrap().tokens,
            patches(16_384, 16_384)
        );
    }
}
