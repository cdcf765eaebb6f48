//! What an image sent in a request is, as far as its header tells: its size in pixels. The
//! client's side records it for images read from a data set, and the simulator counts an
//! image's tokens from it; reading only the header keeps both from decoding pictures. A
//! header may claim any size (a PNG's sides go to 2^32 − 1, so their product to nearly 2^64),
//! so its pixels are counted with checked arithmetic and bounded ([`header_pixels`]): a sum of
//! such images would otherwise wrap.

/// The most pixels an image's header may claim (2^28, 16,384 × 16,384): more is refused, by
/// the client for an image a data set names and by the simulator for one a request carries.
/// Pillow, which vLLM and SGLang decode images with, refuses an image of more than 178,956,970
/// pixels as a decompression bomb, so no larger one is served; and at most this many per image
/// keeps a request's sum, and a run's, far from the end of `u64`.
pub const MAX_HEADER_PIXELS: u64 = 1 << 28;

/// The pixels of a `w`×`h` image, when they are at most [`MAX_HEADER_PIXELS`]; `None` when
/// they are more (or their product would not fit in a `u64`).
pub fn header_pixels(w: u64, h: u64) -> Option<u64> {
    w.checked_mul(h).filter(|&p| p <= MAX_HEADER_PIXELS)
}

/// (width, height) from a PNG's IHDR or a JPEG's start-of-frame marker.
pub fn image_size(b: &[u8]) -> Option<(u64, u64)> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") && b.get(12..16) == Some(b"IHDR") {
        let be = |i: usize| -> Option<u64> {
            Some(u64::from(u32::from_be_bytes(
                b.get(i..i + 4)?.try_into().ok()?,
            )))
        };
        return Some((be(16)?, be(20)?));
    }
    if !b.starts_with(b"\xff\xd8") {
        return None;
    }
    // Segments after SOI: FF marker, two-byte length; SOF0..SOF15 (not DHT C4, JPG C8,
    // DAC CC) carry precision, height, width.
    let mut i = 2;
    loop {
        while b.get(i) == Some(&0xff) && b.get(i + 1) == Some(&0xff) {
            i += 1;
        }
        if b.get(i)? != &0xff {
            return None;
        }
        let marker = *b.get(i + 1)?;
        let len = usize::from(u16::from_be_bytes([*b.get(i + 2)?, *b.get(i + 3)?]));
        if matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
            let h = u16::from_be_bytes([*b.get(i + 5)?, *b.get(i + 6)?]);
            let w = u16::from_be_bytes([*b.get(i + 7)?, *b.get(i + 8)?]);
            return Some((u64::from(w), u64::from(h)));
        }
        if marker == 0xda || len < 2 {
            return None;
        }
        i += 2 + len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_from_headers_and_garbage_refused() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&[0, 0, 2, 0, 0, 0, 1, 0x80]);
        assert_eq!(image_size(&png), Some((512, 384)));
        // SOI, an APP0 segment, then SOF0 with height 300 and width 400.
        let jpeg = b"\xff\xd8\xff\xe0\x00\x04ab\xff\xc0\x00\x11\x08\x01\x2c\x01\x90";
        assert_eq!(image_size(jpeg), Some((400, 300)));
        for bad in [
            &b""[..],
            b"\x89PNG",
            b"\xff\xd8",
            b"\xff\xd8\xff\xe0\xff\xff",
            b"\xff\xd8\xff\xda\x00\x02",
            b"\xff\xd8\xff\xe0\x00\x00",
            b"GIF89a",
        ] {
            assert_eq!(image_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_header_s_pixels_are_bounded_never_wrapped() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&[0xff; 8]);
        let (w, h) = image_size(&png).unwrap();
        assert_eq!((w, h), (u64::from(u32::MAX), u64::from(u32::MAX)));
        assert_eq!(header_pixels(w, h), None);
        assert_eq!(
            header_pixels(u64::MAX, 2),
            None,
            "the product would not fit"
        );
        assert_eq!(header_pixels(16_384, 16_384), Some(MAX_HEADER_PIXELS));
        assert_eq!(header_pixels(16_384, 16_385), None);
        assert_eq!(header_pixels(512, 384), Some(512 * 384));
    }
}
