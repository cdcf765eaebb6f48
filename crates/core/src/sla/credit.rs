//! A rate's failure on a stage whose client is flagged, the mirror of a latency's: a late
//! client can only lower a rate (it stretches the stage), so a failure of a lower bound on
//! one (`request_throughput > 20 req/s`) is decided once the server is credited with all the
//! client's lateness could have cost it — the stage's count over the least wall time a
//! punctual client could have taken (`metrics::ServedSpan`), the requests the client gave up
//! on itself counted as completed — and still falls short. The derivation and its assumption:
//! `docs/sla.md`.

use super::grammar::Op;
use super::verdict::{Basis, SlaOutcome};
use crate::metrics::{CountMetric, StageSummary};

/// A rate's failure as measured: the assertion's operator and threshold, the value observed.
pub(super) struct RateFailure<'a> {
    pub op: Op,
    pub stage: &'a StageSummary,
    pub metric: CountMetric,
    pub observed: f64,
    pub threshold: f64,
}

/// The verdict on a rate's failure that only the client's delay could have produced, and the
/// rule that decided it.
pub(super) fn credited(n: &RateFailure<'_>) -> (SlaOutcome, Basis) {
    let Some(credited) = credited_rate(n) else {
        return (SlaOutcome::Inconclusive, Basis::ClientUnbounded);
    };
    let stage = n.stage;
    let served = stage.client_net.as_ref().and_then(|c| c.served_s);
    let withheld_ms = served.map_or(0.0, |s| (stage.wall_time_s - s).max(0.0) * 1000.0);
    if n.op.holds(credited, n.threshold) {
        let basis = Basis::ClientMayHaveWithheld {
            withheld_ms,
            credited,
        };
        return (SlaOutcome::Inconclusive, basis);
    }
    let basis = Basis::CreditedServer {
        withheld_ms,
        credited,
    };
    (SlaOutcome::Fail, basis)
}

/// The most the server can be credited with: the stage's count of `metric` (its rate over
/// the measured wall time) over the least wall time a punctual client could have taken.
/// `None` where that has no bound: a lower bound other than `>`/`>=`, a stage judged across
/// rounds, one without the bound (closed loop, sessions, a merged run), or a token rate
/// with requests the client gave up on (how many tokens they would have brought is unknown).
fn credited_rate(n: &RateFailure<'_>) -> Option<f64> {
    let stage = n.stage;
    if !matches!(n.op, Op::Gt | Op::Ge)
        || stage.rounds.len() >= 2
        || stage.planned.clients.is_some()
    {
        return None;
    }
    let served = stage.client_net.as_ref()?.served_s?;
    let wall = stage.wall_time_s;
    if !(served > 0.0 && wall > 0.0) {
        return None;
    }
    let count = n.observed * wall;
    let gave_up = stage.requests.client_side_failures() as f64;
    let count = match n.metric {
        CountMetric::RequestThroughput | CountMetric::GoodputRate => count + gave_up,
        CountMetric::OutputThroughput | CountMetric::InputThroughput | CountMetric::InputsRate
            if gave_up == 0.0 =>
        {
            count
        }
        _ => return None,
    };
    // Never below what was measured: the bound cannot take from the server.
    Some((count / served.min(wall)).max(n.observed))
}
