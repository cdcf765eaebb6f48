//! The plan hash: sha256 over the plan's canonical JSON (struct fields in declaration order,
//! maps sorted, `hash` itself empty), prefixed with [`PLAN_FORMAT`]. Streamed through the
//! hasher, so a million-request schedule is never held as text.
//!
//! The hash identifies the *workload* — what is sent and when — not where it goes: the target's
//! endpoint (a URL, or the simulator and its latency settings), the values of headers named
//! like secrets (`Authorization`, `X-Api-Key`) and the raw param values are left out, so that two servers (or a server before and after a change) given the same workload
//! compare as the same plan. A param that changes the workload changes the plan's content,
//! and so the hash, anyway.

use std::io::Write;

use sha2::{Digest, Sha256};

use super::{EndpointPlan, PLAN_FORMAT, Plan, PlanError};

/// Hex characters of the digest kept in `Plan::hash`.
const HASH_HEX_CHARS: usize = 16;

/// The hash `compile` stores in `Plan::hash`, recomputed (whatever `plan.hash` holds now).
pub fn plan_hash(plan: &Plan) -> Result<String, PlanError> {
    let mut copy = plan.clone();
    copy.hash.clear();
    copy.target.endpoint = EndpointPlan::Url(String::new());
    copy.params.clear();
    // Credentials are not workload either: a rotated token must not make a baseline another
    // plan's.
    for (name, value) in &mut copy.target.request.headers {
        if crate::redact::is_secret_name(name) {
            *value = crate::redact::MASK.to_string();
        }
    }
    digest(&copy)
}

fn digest(plan: &Plan) -> Result<String, PlanError> {
    let mut writer = HashWriter(Sha256::new());
    writer
        .0
        .update(format!("infermeter-plan/{PLAN_FORMAT}\n").as_bytes());
    {
        // serde_json writes many tiny pieces; batching them makes hashing ~3× faster.
        let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut writer);
        serde_json::to_writer(&mut buffered, plan).map_err(|e| PlanError::Hash(e.into()))?;
        buffered.flush().map_err(PlanError::Hash)?;
    }
    let bytes = writer.0.finalize();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(hex[..HASH_HEX_CHARS].to_string())
}

struct HashWriter(Sha256);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
