//! Synthetic images for vision-language requests: what a data set's `images` block says
//! ([`ImageSpec`]: how many per request, and weighted size and format choices), each request's
//! draw from it ([`ImageDraw`], from a seed), and the encoded bytes ([`render`]). The plan
//! carries the spec (so it is in the plan's hash), never the bytes: a draw and the generator
//! below fix the bytes, which are made when the request's body is built, off the hot path.
//!
//! The picture is a seeded colour gradient with a little noise: PNG and JPEG compress it about
//! as they compress a photograph's smooth regions, so sizes on the wire are plausible, and no
//! two seeds give the same bytes (a server's image cache cannot serve a repeat).

use std::fmt;

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most pixels one synthetic image may have (about 4096×4096): a larger one takes hundreds
/// of megabytes to draw and is beyond what vision encoders take in anyway.
pub const MAX_IMAGE_PIXELS: u64 = 1 << 24;
/// The longest side of one synthetic image (JPEG's own limit is 65535).
pub const MAX_IMAGE_SIDE: u32 = 8192;
/// The most images one request may carry.
pub const MAX_IMAGES_PER_REQUEST: u32 = 64;

/// A file format images are sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    Png,
    Jpeg,
}

impl ImageFormat {
    /// Every name a scenario may write.
    pub const NAMES: [&'static str; 2] = ["png", "jpeg"];

    pub fn from_name(name: &str) -> Option<ImageFormat> {
        match name {
            "png" => Some(ImageFormat::Png),
            "jpeg" | "jpg" => Some(ImageFormat::Jpeg),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
        }
    }

    /// The MIME type of a `data:` URI.
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One weighted choice of size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImageSize {
    pub width: u32,
    pub height: u32,
    pub weight: f64,
}

/// One weighted choice of format.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WeightedFormat {
    pub format: ImageFormat,
    pub weight: f64,
}

/// `images N { size "WxH" weight=W; format "png" weight=W }`: N synthetic images with each
/// request, each of a size and a format drawn by weight (one of each when none is given:
/// 512×512 PNG).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImageSpec {
    pub count: u32,
    pub sizes: Vec<ImageSize>,
    pub formats: Vec<WeightedFormat>,
}

/// Why a size is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageSizeError {
    #[error("expected WIDTHxHEIGHT, such as \"512x512\"")]
    Form,
    #[error("a side of 0 pixels")]
    Zero,
    #[error("a side longer than {MAX_IMAGE_SIDE} pixels")]
    TooLong,
    #[error("{0} pixels, more than the {MAX_IMAGE_PIXELS} one image may have")]
    TooMany(u64),
}

/// `"512x512"` as (width, height), within the caps.
pub fn parse_size(text: &str) -> Result<(u32, u32), ImageSizeError> {
    let (w, h) = text
        .split_once(['x', 'X', '×'])
        .ok_or(ImageSizeError::Form)?;
    let side = |s: &str| -> Result<u32, ImageSizeError> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ImageSizeError::Form);
        }
        match s.parse::<u64>() {
            Ok(0) => Err(ImageSizeError::Zero),
            Ok(n) if n <= u64::from(MAX_IMAGE_SIDE) => Ok(n as u32),
            _ => Err(ImageSizeError::TooLong),
        }
    };
    let (w, h) = (side(w)?, side(h)?);
    let pixels = u64::from(w) * u64::from(h);
    if pixels > MAX_IMAGE_PIXELS {
        return Err(ImageSizeError::TooMany(pixels));
    }
    Ok((w, h))
}

/// One image of one request: its size, format and the seed of its picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageDraw {
    pub width: u32,
    pub height: u32,
    pub format: ImageFormat,
    pub seed: u64,
}

impl ImageSpec {
    /// The images of the request whose seed is `seed`: the same seed, the same images.
    pub fn draw(&self, seed: u64) -> Vec<ImageDraw> {
        let mut state = seed ^ 0x1A6E_5EED_0F1A_6E55;
        (0..self.count)
            .map(|_| {
                let size = pick(&self.sizes, |s| s.weight, &mut state);
                let format = pick(&self.formats, |f| f.weight, &mut state);
                ImageDraw {
                    width: size.map_or(512, |s| s.width),
                    height: size.map_or(512, |s| s.height),
                    format: format.map_or(ImageFormat::Png, |f| f.format),
                    seed: splitmix64(&mut state),
                }
            })
            .collect()
    }
}

/// A weighted choice (the first when the weights are all zero).
fn pick<'a, T>(items: &'a [T], weight: impl Fn(&T) -> f64, state: &mut u64) -> Option<&'a T> {
    let total: f64 = items.iter().map(&weight).sum();
    let mut at = unit(splitmix64(state)) * total;
    for it in items {
        at -= weight(it);
        if at < 0.0 {
            return Some(it);
        }
    }
    items.first()
}

fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One encoded image, as a request carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedImage {
    /// `data:image/png;base64,…`
    pub data_uri: String,
    /// The encoded file's bytes (before base64).
    pub bytes: u64,
    pub pixels: u64,
}

/// Why an image could not be encoded (a size past the encoder's limits, which the scenario's
/// caps keep out).
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("could not encode a {width}x{height} PNG")]
    Png {
        width: u32,
        height: u32,
        #[source]
        source: png::EncodingError,
    },
    #[error("could not encode a {width}x{height} JPEG")]
    Jpeg {
        width: u32,
        height: u32,
        #[source]
        source: jpeg_encoder::EncodingError,
    },
    #[error("a {width}x{height} image is beyond JPEG's 65535-pixel sides")]
    JpegSize { width: u32, height: u32 },
}

/// Draws and encodes one image.
pub fn render(d: &ImageDraw) -> Result<EncodedImage, ImageError> {
    let rgb = picture(d);
    let file = match d.format {
        ImageFormat::Png => encode_png(&rgb, d),
        ImageFormat::Jpeg => encode_jpeg(&rgb, d),
    }?;
    let mut data_uri = String::with_capacity(file.len() * 4 / 3 + 32);
    data_uri.push_str("data:");
    data_uri.push_str(d.format.mime());
    data_uri.push_str(";base64,");
    base64::engine::general_purpose::STANDARD.encode_string(&file, &mut data_uri);
    Ok(EncodedImage {
        data_uri,
        bytes: file.len() as u64,
        pixels: u64::from(d.width) * u64::from(d.height),
    })
}

/// RGB bytes: a gradient between two seeded colours, with seeded noise of a few levels.
fn picture(d: &ImageDraw) -> Vec<u8> {
    let mut state = d.seed;
    let from: [u8; 3] = std::array::from_fn(|_| splitmix64(&mut state) as u8);
    let to: [u8; 3] = std::array::from_fn(|_| splitmix64(&mut state) as u8);
    let (w, h) = (d.width as usize, d.height as usize);
    let span = (w + h).max(2) - 2;
    let mut out = Vec::with_capacity(w * h * 3);
    let mut noise = splitmix64(&mut state);
    for y in 0..h {
        for x in 0..w {
            let t = (x + y) as u32 * 256 / span.max(1) as u32;
            noise ^= noise << 13;
            noise ^= noise >> 7;
            noise ^= noise << 17;
            for c in 0..3 {
                let base = (u32::from(from[c]) * (256 - t) + u32::from(to[c]) * t) >> 8;
                let jitter = ((noise >> (c * 8)) & 7) as u32;
                out.push(base.saturating_add(jitter).min(255) as u8);
            }
        }
    }
    out
}

fn encode_png(rgb: &[u8], d: &ImageDraw) -> Result<Vec<u8>, ImageError> {
    let err = |source| ImageError::Png {
        width: d.width,
        height: d.height,
        source,
    };
    let mut file = Vec::new();
    let mut enc = png::Encoder::new(&mut file, d.width, d.height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fast);
    let mut writer = enc.write_header().map_err(err)?;
    writer.write_image_data(rgb).map_err(err)?;
    writer.finish().map_err(err)?;
    Ok(file)
}

fn encode_jpeg(rgb: &[u8], d: &ImageDraw) -> Result<Vec<u8>, ImageError> {
    let err = |source| ImageError::Jpeg {
        width: d.width,
        height: d.height,
        source,
    };
    let (w, h) = match (u16::try_from(d.width), u16::try_from(d.height)) {
        (Ok(w), Ok(h)) => (w, h),
        _ => {
            return Err(ImageError::JpegSize {
                width: d.width,
                height: d.height,
            });
        }
    };
    let mut file = Vec::new();
    jpeg_encoder::Encoder::new(&mut file, 85)
        .encode(rgb, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(err)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ImageSpec {
        ImageSpec {
            count: 3,
            sizes: vec![
                ImageSize {
                    width: 64,
                    height: 48,
                    weight: 1.0,
                },
                ImageSize {
                    width: 30,
                    height: 90,
                    weight: 1.0,
                },
            ],
            formats: vec![
                WeightedFormat {
                    format: ImageFormat::Png,
                    weight: 1.0,
                },
                WeightedFormat {
                    format: ImageFormat::Jpeg,
                    weight: 1.0,
                },
            ],
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes_and_another_seed_others() {
        let s = spec();
        let a: Vec<EncodedImage> = s.draw(7).iter().map(|d| render(d).unwrap()).collect();
        let b: Vec<EncodedImage> = s.draw(7).iter().map(|d| render(d).unwrap()).collect();
        assert_eq!(a, b);
        assert_eq!(a.len(), 3);
        let c: Vec<EncodedImage> = s.draw(8).iter().map(|d| render(d).unwrap()).collect();
        assert_ne!(a, c);
        // Over many seeds every size and format is drawn.
        let draws: Vec<ImageDraw> = (0..64).flat_map(|i| s.draw(i)).collect();
        for f in [ImageFormat::Png, ImageFormat::Jpeg] {
            assert!(draws.iter().any(|d| d.format == f), "{f}");
        }
        assert!(draws.iter().any(|d| d.width == 30) && draws.iter().any(|d| d.width == 64));
    }

    #[test]
    fn images_are_real_files_of_their_size() {
        for format in [ImageFormat::Png, ImageFormat::Jpeg] {
            let d = ImageDraw {
                width: 33,
                height: 17,
                format,
                seed: 1,
            };
            let img = render(&d).unwrap();
            let prefix = format!("data:{};base64,", format.mime());
            let b64 = img.data_uri.strip_prefix(&prefix).unwrap();
            let file = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            assert_eq!(file.len() as u64, img.bytes);
            assert_eq!(img.pixels, 33 * 17);
            match format {
                ImageFormat::Png => {
                    assert_eq!(&file[..8], b"\x89PNG\r\n\x1a\n");
                    let info = png::Decoder::new(std::io::Cursor::new(&file))
                        .read_info()
                        .unwrap();
                    assert_eq!((info.info().width, info.info().height), (33, 17));
                }
                ImageFormat::Jpeg => assert_eq!(&file[..3], b"\xff\xd8\xff"),
            }
        }
    }

    #[test]
    fn hostile_sizes_are_refused() {
        assert_eq!(parse_size("512x384"), Ok((512, 384)));
        assert_eq!(parse_size("16X9"), Ok((16, 9)));
        assert_eq!(parse_size("0x512"), Err(ImageSizeError::Zero));
        assert_eq!(parse_size("512"), Err(ImageSizeError::Form));
        assert_eq!(parse_size("-1x5"), Err(ImageSizeError::Form));
        assert_eq!(parse_size("1.5x5"), Err(ImageSizeError::Form));
        assert_eq!(parse_size("x"), Err(ImageSizeError::Form));
        assert_eq!(
            parse_size("99999999999999999999x1"),
            Err(ImageSizeError::TooLong)
        );
        assert_eq!(parse_size("8193x1"), Err(ImageSizeError::TooLong));
        assert_eq!(
            parse_size("8192x8192"),
            Err(ImageSizeError::TooMany(8192 * 8192))
        );
    }
}
