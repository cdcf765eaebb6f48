//! The lossless text form of an HDR histogram, as stored in `results.json`: hdrhistogram's V2
//! *deflate* serialisation (the format HdrHistogram's Java, C, Go and Python ports read too),
//! then standard base64. Every bucket count survives, so any percentile, confidence interval
//! or bootstrap can be computed later from a stored result, exactly as from the live run.
//!
//! Size: a 10,000-sample TTFT histogram (lognormal around 80 ms, µs resolution, 3 significant
//! digits) encodes to 2,020 bytes of base64 (test `ttft_histogram_size_note`); a whole 60 s,
//! 20 req/s stage's seven histograms to 8.4 KB (`cargo bench --bench histograms`, figures in
//! docs/statistics.md).

use std::io::Read;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

use super::error::StatsError;

/// The V2 headers, from the HdrHistogram encoding spec (hdrhistogram keeps its own private).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// cookie, payload length, normalising offset, significant digits, low, high, int/double ratio.
const V2_HEADER_LEN: usize = 40;
/// The largest uncompressed V2 form any histogram can have: about 6.3 million counts (bounds
/// 1..u64::MAX at 5 significant digits), at most 9 bytes each. Anything claiming more is not a
/// histogram.
const MAX_INFLATED_LEN: usize = V2_HEADER_LEN + 6_400_000 * 9;
/// Base64 of a deflated stream of `MAX_INFLATED_LEN`, with room for incompressible data.
const MAX_ENCODED_LEN: usize = MAX_INFLATED_LEN / 3 * 4 + 1024;

/// The histogram as base64 of its V2 deflate serialisation.
///
/// Fails only for a bucket count above `i64::MAX`, which the V2 format cannot hold (9·10^18
/// samples: no run records that many).
pub fn encode(h: &Histogram<u64>) -> Result<String, StatsError> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .map_err(StatsError::Encode)?;
    Ok(STANDARD.encode(bytes))
}

/// The histogram [`encode`] wrote. Any other input is an error, never a panic.
///
/// The deflated payload is inflated here, with a cap, before hdrhistogram parses it:
/// hdrhistogram's own reader sizes a buffer from the stream's 32-bit length field, so a few
/// corrupt bytes could make it allocate 4 GiB.
pub fn decode(text: &str) -> Result<Histogram<u64>, StatsError> {
    let text = text.trim();
    if text.len() > MAX_ENCODED_LEN {
        return Err(StatsError::TooLarge {
            len: text.len(),
            max: MAX_ENCODED_LEN,
        });
    }
    let bytes = STANDARD.decode(text).map_err(StatsError::Base64)?;
    if bytes.len() < 8 {
        return Err(StatsError::Malformed("shorter than its header"));
    }
    if be_u32(&bytes[0..4]) != V2_COMPRESSED_COOKIE {
        return Err(StatsError::Malformed("not a V2 deflate histogram"));
    }
    let deflated_len = be_u32(&bytes[4..8]) as usize;
    let deflated = bytes
        .get(8..)
        .filter(|rest| rest.len() == deflated_len)
        .ok_or(StatsError::Malformed(
            "length field disagrees with the data",
        ))?;

    let mut inflated = Vec::new();
    flate2::read::ZlibDecoder::new(deflated)
        .take(MAX_INFLATED_LEN as u64 + 1)
        .read_to_end(&mut inflated)
        .map_err(StatsError::Inflate)?;
    if inflated.len() > MAX_INFLATED_LEN {
        return Err(StatsError::TooLarge {
            len: inflated.len(),
            max: MAX_INFLATED_LEN,
        });
    }
    if inflated.len() < V2_HEADER_LEN || be_u32(&inflated[0..4]) != V2_COOKIE {
        return Err(StatsError::Malformed("inflated data is not a V2 histogram"));
    }
    if be_u32(&inflated[4..8]) as usize != inflated.len() - V2_HEADER_LEN {
        return Err(StatsError::Malformed(
            "counts length disagrees with the data",
        ));
    }
    Deserializer::new()
        .deserialize(&mut inflated.as_slice())
        .map_err(StatsError::Decode)
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;
    use rand_distr::{Distribution, LogNormal};

    /// Like the runner's: µs, 1 µs .. 1 day, 3 significant digits.
    fn runner_histogram() -> Histogram<u64> {
        Histogram::new_with_bounds(1, 86_400_000_000, 3).unwrap()
    }

    fn ttft_like(n: usize, seed: u64) -> Histogram<u64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let d = LogNormal::new((80_000f64).ln(), 0.4).unwrap();
        let mut h = runner_histogram();
        for _ in 0..n {
            h.saturating_record(d.sample(&mut rng) as u64);
        }
        h
    }

    fn assert_same(a: &Histogram<u64>, b: &Histogram<u64>) {
        assert_eq!(a.len(), b.len());
        assert_eq!(a.min(), b.min());
        assert_eq!(a.max(), b.max());
        assert_eq!(a.mean(), b.mean());
        assert_eq!(
            (a.low(), a.high(), a.sigfig()),
            (b.low(), b.high(), b.sigfig())
        );
        let buckets = |h: &Histogram<u64>| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        assert_eq!(buckets(a), buckets(b));
        for q in [0.0, 0.001, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
            assert_eq!(a.value_at_quantile(q), b.value_at_quantile(q), "q {q}");
        }
    }

    #[test]
    fn round_trip_keeps_every_bucket() {
        let h = ttft_like(10_000, 1);
        let back = decode(&encode(&h).unwrap()).unwrap();
        assert_same(&h, &back);

        // Zeros (send lag), the top of the range, single samples and big counts.
        let mut h = runner_histogram();
        h.record_n(0, 5_000).unwrap();
        h.record(1).unwrap();
        h.record_n(86_400_000_000, 3).unwrap();
        h.record_n(12_345, 1 << 40).unwrap();
        let back = decode(&encode(&h).unwrap()).unwrap();
        assert_same(&h, &back);
    }

    #[test]
    fn empty_histogram_round_trips() {
        let h = runner_histogram();
        let back = decode(&encode(&h).unwrap()).unwrap();
        assert!(back.is_empty());
        assert_same(&h, &back);
    }

    #[test]
    fn garbage_and_truncated_input_is_an_error() {
        let good = encode(&ttft_like(1_000, 2)).unwrap();
        let bytes = STANDARD.decode(&good).unwrap();
        let mut cases: Vec<String> = vec![
            String::new(),
            "not base64 at all!".into(),
            "AAAA".into(),
            STANDARD.encode(b"HISTFAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
            good[..good.len() / 2].into(),
        ];
        // Every truncation of the binary form, and every single-byte corruption of its headers.
        for cut in 0..bytes.len() {
            cases.push(STANDARD.encode(&bytes[..cut]));
        }
        for i in 0..bytes.len().min(64) {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                cases.push(STANDARD.encode(&b));
            }
        }
        for (i, c) in cases.iter().enumerate() {
            // A flipped bit inside the deflate stream may still inflate to a valid histogram;
            // what matters is that nothing panics or allocates without bound.
            let r = decode(c);
            if i < 5 + bytes.len() {
                assert!(r.is_err(), "case {i} decoded");
            }
        }
    }

    #[test]
    fn a_lying_length_field_is_refused_before_allocating() {
        // A valid deflate stream of a V2 header claiming a 4 GiB payload.
        let mut inner = Vec::new();
        inner.extend_from_slice(&V2_COOKIE.to_be_bytes());
        inner.extend_from_slice(&u32::MAX.to_be_bytes());
        inner.extend_from_slice(&[0; 32]);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, &inner).unwrap();
        let deflated = z.finish().unwrap();
        let mut outer = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        outer.extend_from_slice(&(deflated.len() as u32).to_be_bytes());
        outer.extend_from_slice(&deflated);
        let err = decode(&STANDARD.encode(&outer)).unwrap_err();
        assert!(matches!(err, StatsError::Malformed(_)), "{err}");
    }

    #[test]
    fn errors_keep_their_source() {
        let err = decode("@@@@").unwrap_err();
        assert!(std::error::Error::source(&err).is_some(), "{err}");
        assert_eq!(err.to_string(), "stored histogram is not valid base64");
    }

    /// The size quoted in the module doc, pinned so a change of codec shows up here.
    #[test]
    fn ttft_histogram_size_note() {
        let text = encode(&ttft_like(10_000, 3)).unwrap();
        assert!(
            (1_800..2_300).contains(&text.len()),
            "10k-sample TTFT histogram: {} bytes of base64",
            text.len()
        );
    }
}
