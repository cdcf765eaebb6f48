//! W3C trace context (`traceparent`) as every request carries it: the ids the client writes,
//! the simulator reads and the OTLP exporter and receiver key spans by. Defined once here, below
//! all of them.
//!
//! A trace id is `RUN STAGE TURN INDEX`: 64 random bits drawn once per run, then the stage's
//! position (16 bits), the session turn (16; an agentic task's turn: its position among all
//! the task's turns, since its sessions share the task's index) and the request's index in the
//! stage's plan (32), so ids are unique per request within a run, unguessable across runs, and a span that comes
//! back names its request without the client keeping a table of every request sent. The span
//! id (the client's span, the server's span's parent) is a mix of the trace id, never zero.
//! See `docs/telemetry.md` ("Trace context").

/// One request's trace context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TraceContext {
    pub trace_id: u128,
    pub span_id: u64,
}

/// Where a request sits in a run, as its trace id encodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TracedRequest {
    pub stage: u16,
    pub turn: u16,
    /// The low 32 bits of the request's index in the stage's plan.
    pub index: u32,
}

/// `00-` + 32 + `-` + 16 + `-01`.
pub const TRACEPARENT_LEN: usize = 55;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A bijective 64-bit mix (splitmix64's finaliser).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The low `digits` (even, at most 32) hex digits of `v` into `out`, a byte at a time (a
/// shift of a `u128` per digit cost twice as much, on every request's `traceparent`).
fn hex_into(out: &mut [u8], v: u128, digits: usize) {
    let bytes = v.to_be_bytes();
    let from = bytes.len() - digits / 2;
    for (pair, b) in out[..digits].chunks_exact_mut(2).zip(&bytes[from..]) {
        pair[0] = HEX[usize::from(b >> 4)];
        pair[1] = HEX[usize::from(b & 0xf)];
    }
}

fn unhex(s: &[u8]) -> Option<u128> {
    if s.is_empty() || s.len() > 32 {
        return None;
    }
    s.iter().try_fold(0u128, |acc, &c| {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        Some((acc << 4) | u128::from(d))
    })
}

impl TraceContext {
    /// The context of request `index` (turn `turn`) of stage `stage` in the run whose random
    /// part is `run`.
    pub fn for_request(run: u64, stage: u16, turn: u32, index: u64) -> TraceContext {
        let low = (u64::from(stage) << 48)
            | (u64::from(turn.min(u32::from(u16::MAX))) << 32)
            | (index & u64::from(u32::MAX));
        let trace_id = (u128::from(run) << 64) | u128::from(low);
        TraceContext {
            trace_id,
            span_id: mix(low ^ mix(run)) | 1,
        }
    }

    /// The request a trace id of run `run` names; `None` for another run's (or no run's).
    pub fn request_of(trace_id: u128, run: u64) -> Option<TracedRequest> {
        if (trace_id >> 64) as u64 != run {
            return None;
        }
        let low = trace_id as u64;
        Some(TracedRequest {
            stage: (low >> 48) as u16,
            turn: (low >> 32) as u16,
            index: low as u32,
        })
    }

    /// The `traceparent` header's value (version 00, sampled), written without allocating.
    pub fn traceparent(&self) -> [u8; TRACEPARENT_LEN] {
        let mut out = *b"00-00000000000000000000000000000000-0000000000000000-01";
        hex_into(&mut out[3..35], self.trace_id, 32);
        hex_into(&mut out[36..52], u128::from(self.span_id), 16);
        out
    }

    /// The trace id as 32 lower-case hex digits (the `x-request-id` header, the
    /// `trace_id` of `requests.jsonl` and `requests.parquet`).
    pub fn trace_hex(&self) -> [u8; 32] {
        let mut out = [b'0'; 32];
        hex_into(&mut out, self.trace_id, 32);
        out
    }

    /// The trace id as a `String` (for rows written off the hot path).
    pub fn trace_id_string(&self) -> String {
        // Hex digits are ASCII.
        String::from_utf8_lossy(&self.trace_hex()).into_owned()
    }

    /// Reads a `traceparent` value: version `00` (or a later one, read as 00 by its first
    /// four fields, as the spec asks), lower-case hex, neither id all zeros.
    pub fn parse_traceparent(value: &[u8]) -> Option<TraceContext> {
        let v = value.trim_ascii();
        if v.len() < TRACEPARENT_LEN || (v.len() > TRACEPARENT_LEN && v[TRACEPARENT_LEN] != b'-') {
            return None;
        }
        if v[2] != b'-' || v[35] != b'-' || v[52] != b'-' || &v[..2] == b"ff" {
            return None;
        }
        unhex(&v[..2])?;
        unhex(&v[53..55])?;
        if v.len() > TRACEPARENT_LEN && &v[..2] == b"00" {
            return None;
        }
        let trace_id = unhex(&v[3..35])?;
        let span_id = unhex(&v[36..52])? as u64;
        (trace_id != 0 && span_id != 0).then_some(TraceContext { trace_id, span_id })
    }

    /// From an OTLP span's raw ids (16 and 8 bytes, big-endian); `None` when malformed.
    pub fn from_bytes(trace_id: &[u8], span_id: &[u8]) -> Option<TraceContext> {
        let t: [u8; 16] = trace_id.try_into().ok()?;
        let s: [u8; 8] = span_id.try_into().unwrap_or([0; 8]);
        Some(TraceContext {
            trace_id: u128::from_be_bytes(t),
            span_id: u64::from_be_bytes(s),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_round_trips_and_names_its_request() {
        let run = 0xdead_beef_0123_4567;
        let t = TraceContext::for_request(run, 3, 2, 70_000);
        let tp = t.traceparent();
        assert_eq!(&tp[..3], b"00-");
        assert_eq!(&tp[3..19], b"deadbeef01234567");
        assert_eq!(&tp[19..35], b"0003000200011170");
        assert_eq!(TraceContext::parse_traceparent(&tp), Some(t));
        assert_eq!(
            TraceContext::request_of(t.trace_id, run),
            Some(TracedRequest {
                stage: 3,
                turn: 2,
                index: 70_000
            })
        );
        assert_eq!(TraceContext::request_of(t.trace_id, run + 1), None);
        assert_ne!(t.span_id, 0);
        assert_eq!(&t.trace_hex()[..], &tp[3..35]);
    }

    #[test]
    fn ids_differ_per_request_and_turn() {
        let mut seen = std::collections::HashSet::new();
        for stage in 0..3 {
            for turn in 0..3 {
                for index in 0..100 {
                    let t = TraceContext::for_request(7, stage, turn, index);
                    assert!(seen.insert(t.trace_id));
                    assert!(seen.insert(u128::from(t.span_id) << 64 | 1));
                }
            }
        }
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        let ok = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert!(TraceContext::parse_traceparent(ok).is_some());
        for bad in [
            &b""[..],
            b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            b"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            b"00-00000000000000000000000000000000-b7ad6b7169203331-01",
            b"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            b"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            b"00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c8031é-b7ad6b7169203331-01".as_bytes(),
        ] {
            assert_eq!(TraceContext::parse_traceparent(bad), None, "{bad:?}");
        }
        let later = b"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra";
        assert!(TraceContext::parse_traceparent(later).is_some());
    }
}
