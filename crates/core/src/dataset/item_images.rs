//! Images named in a JSONL line (`"images": ["photo.jpg", "https://…/x.png"]`): a path is
//! read relative to the data file, checked to be a PNG or JPEG within [`MAX_ITEM_IMAGE_BYTES`]
//! and kept as a `data:` URI (so the plan, and its hash, hold what is sent, and a run never
//! rereads a file that may have changed); a URL (`http://`, `https://`) or a `data:` URI is
//! sent as written. Each problem names the image by its position and path.

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::image::MAX_IMAGES_PER_REQUEST;
use crate::protocol::{MAX_HEADER_PIXELS, header_pixels, image_size};

/// The most bytes one image file may have (a 12-megapixel photograph is about 5 MB as JPEG).
pub const MAX_ITEM_IMAGE_BYTES: u64 = 20 << 20;

/// One image of a data set item, as its request carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemImage {
    /// A `data:` URI or a URL.
    pub url: String,
    /// The file's bytes (0 for a URL: the server fetches it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes: u64,
    /// Its pixels, from its header (0 when unknown: a URL).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pixels: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Why a line's `images` cannot be sent.
#[derive(Debug, thiserror::Error)]
pub enum ImageLineError {
    #[error("`images` must be a list of file paths or URLs")]
    NotList,
    #[error(
        "`images` has {0} images, more than the {MAX_IMAGES_PER_REQUEST} one request may carry"
    )]
    TooMany(usize),
    #[error("images[{0}] must be a string (a path or a URL)")]
    NotText(usize),
    #[error("images[{index}]: cannot read `{}`", path.display())]
    Unreadable {
        index: usize,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("images[{index}]: `{}`: {reason}", path.display())]
    NotAFile {
        index: usize,
        path: PathBuf,
        /// What it is instead (a FIFO, a directory, a device), in the message: a data set's
        /// problem is shown as one line.
        reason: std::io::Error,
    },
    #[error(
        "images[{index}]: `{}` has more than {MAX_ITEM_IMAGE_BYTES} bytes",
        path.display()
    )]
    TooLarge { index: usize, path: PathBuf },
    #[error("images[{index}]: `{}` is not a PNG or JPEG with a readable size", path.display())]
    Format { index: usize, path: PathBuf },
    #[error(
        "images[{index}]: `{}` says it is {width}×{height} pixels, more than the \
         {MAX_HEADER_PIXELS} an image may have",
        path.display()
    )]
    TooManyPixels {
        index: usize,
        path: PathBuf,
        width: u64,
        height: u64,
    },
}

/// A line's `images`, each path read from `dir` (the data file's folder).
pub(super) fn item_images(value: Value, dir: &Path) -> Result<Vec<ItemImage>, ImageLineError> {
    let Value::Array(list) = value else {
        return Err(ImageLineError::NotList);
    };
    if list.len() > MAX_IMAGES_PER_REQUEST as usize {
        return Err(ImageLineError::TooMany(list.len()));
    }
    list.into_iter()
        .enumerate()
        .map(|(index, v)| match v {
            Value::String(s) if is_url(&s) => Ok(ItemImage {
                url: s,
                bytes: 0,
                pixels: 0,
            }),
            Value::String(s) => read_image(index, &dir.join(s)),
            _ => Err(ImageLineError::NotText(index)),
        })
        .collect()
}

fn is_url(s: &str) -> bool {
    ["http://", "https://", "data:"]
        .iter()
        .any(|p| s.starts_with(p))
}

fn read_image(index: usize, path: &Path) -> Result<ItemImage, ImageLineError> {
    let unreadable = |source| ImageLineError::Unreadable {
        index,
        path: path.to_path_buf(),
        source,
    };
    // A regular file only: a FIFO would block the open, a device would never end.
    let file = crate::files::open_regular(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::InvalidInput => ImageLineError::NotAFile {
            index,
            path: path.to_path_buf(),
            reason: source,
        },
        _ => unreadable(source),
    })?;
    let mut bytes = Vec::new();
    // Bounded however the file grows while it is read.
    file.take(MAX_ITEM_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_ITEM_IMAGE_BYTES {
        return Err(ImageLineError::TooLarge {
            index,
            path: path.to_path_buf(),
        });
    }
    let format = || ImageLineError::Format {
        index,
        path: path.to_path_buf(),
    };
    let (w, h) = image_size(&bytes).ok_or_else(format)?;
    let mime = if bytes.starts_with(b"\x89PNG") {
        "image/png"
    } else {
        "image/jpeg"
    };
    if w == 0 || h == 0 {
        return Err(format());
    }
    // The header's word only: its product, and the sums of it, must not wrap.
    let pixels = header_pixels(w, h).ok_or_else(|| ImageLineError::TooManyPixels {
        index,
        path: path.to_path_buf(),
        width: w,
        height: h,
    })?;
    let mut url = format!("data:{mime};base64,");
    base64::engine::general_purpose::STANDARD.encode_string(&bytes, &mut url);
    Ok(ItemImage {
        url,
        bytes: bytes.len() as u64,
        pixels,
    })
}
