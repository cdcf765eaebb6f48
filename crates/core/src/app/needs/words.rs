//! The needs table's words: what a stage sends, how that stands against an assertion's need,
//! and the warning under a row that falls short, with the change that fixes it for that kind
//! of stage (`until-decided` is refused on sweeps, searches, sessions and rounds, so it is
//! offered only to a plain stage).

use super::reach::{AssertionNeed, Reach, Standing};
use crate::escape::terminal as t;
use crate::sla::Need;

/// `stage `s` sends 200`, `sweep `p` point `p@10rps` sends 106`, …
pub fn sends(r: &AssertionNeed) -> String {
    let stage = t(&r.stage);
    let who = match &r.point {
        Some(p) => format!("sweep `{stage}` point `{}`", t(p)),
        None => format!("stage `{stage}`"),
    };
    match r.reach {
        Reach::Requests {
            count,
            sessions: Some(k),
        } => format!("{who} sends {count} ({k} sessions' turns)"),
        Reach::Requests { count, .. } if r.sequential => format!("{who} sends at most {count}"),
        Reach::Requests { count, .. } => format!("{who} sends {count}"),
        Reach::Unknown => format!("{who} sends for a duration"),
        Reach::Rounds {
            rounds,
            each: Some(each),
            ..
        } => format!("{who} runs {rounds} rounds of {each}"),
        Reach::Rounds { rounds, .. } => format!("{who} runs {rounds} rounds for a duration"),
        Reach::RateSearch { from, to, probe_s } => format!(
            "search `{stage}`'s {}s probes send about {:.0} to {:.0}",
            short(probe_s),
            from * probe_s,
            to * probe_s
        ),
        Reach::ClientSearch { probe_s } => {
            format!(
                "search `{stage}`'s {}s probes send for a duration",
                short(probe_s)
            )
        }
        Reach::Judged {
            count,
            sample,
            share: Some(p),
        } => format!(
            "{who}'s judge scores about {count} of this label's answers ({:.0} % of a sample of {sample})",
            p * 100.0
        ),
        Reach::Judged { sample, .. } => format!("{who}'s judge scores a sample of {sample}"),
    }
}

/// `ok`, `TOO FEW`, `TOO FEW under 9.1 req/s`, `counted only when run`.
pub fn standing(r: &AssertionNeed) -> String {
    match r.standing() {
        Standing::Enough => match r.reach {
            Reach::Rounds { rounds, enough, .. } if rounds >= enough => {
                "ok (across rounds)".to_string()
            }
            _ => "ok".to_string(),
        },
        Standing::TooFew => "TOO FEW".to_string(),
        Standing::Below(rate) => format!("TOO FEW under {} req/s", short(rate)),
        // A count only running tells (a closed loop for a duration): no warning, no promise.
        Standing::Unknown => "counted only when run".to_string(),
    }
}

/// A number as short as it reads: `8`, `9.1`.
fn short(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The warning for one row that cannot be decided, with its fix; empty for one that can.
pub fn warning(row: &AssertionNeed) -> String {
    let a = t(&row.assertion);
    let stage = t(&row.stage);
    let n = match row.need {
        Need::Never => {
            return format!(
                "`{a}` on stage `{stage}`: no number of requests can show it holds; loosen the \
                 threshold"
            );
        }
        Need::Requests(n) => n,
        Need::OnValue => return String::new(),
    };
    // An answer-quality share counts answers: one a request at best.
    let need = match row.counts {
        "requests" => n.to_string(),
        counts => format!("{n} {counts} (one a request at best)"),
    };
    let standing = row.standing();
    match (row.reach, standing, &row.point) {
        (_, Standing::Enough | Standing::Unknown, _) => String::new(),
        (Reach::Requests { count, .. }, _, Some(point)) => format!(
            "`{a}` on sweep `{stage}`: its point `{}` sends {count} requests, and it needs at \
             least {need} to pass, so that point can fail but never pass; give each point {n} or \
             more (a longer `duration` or more `requests`; a sweep cannot send until decided)",
            t(point)
        ),
        (
            Reach::Requests {
                count,
                sessions: Some(k),
            },
            ..,
        ) => format!(
            "`{a}` on stage `{stage}`: its {k} sessions send {count} requests (every turn \
             counted), and it needs at least {need} to pass, so it can fail but never pass; run \
             more sessions (`requests {}` or more; sessions cannot send until decided)",
            (n * k).div_ceil(count.max(1)),
        ),
        (Reach::Requests { count, .. }, ..) => format!(
            "`{a}` on stage `{stage}`: the stage sends {count} requests, and it needs at least \
             {need} to pass, so it can fail but never pass; send {n} or more, or let it send until \
             decided (`requests {count} until-decided max={}`, docs/sla.md)",
            ((n * 4).div_ceil(100) * 100).max(count),
        ),
        (
            Reach::Rounds {
                rounds,
                each: Some(each),
                enough,
            },
            ..,
        ) => format!(
            "`{a}` on stage `{stage}`: {rounds} rounds of {each} requests pool {} and it needs \
             at least {need} to pass, so it can fail but never pass; run {enough} or more rounds \
             (then it is decided across them), or send {} or more a round",
            u64::from(rounds) * each,
            n.div_ceil(u64::from(rounds.max(1))),
        ),
        (Reach::RateSearch { to, probe_s, .. }, Standing::TooFew, _) => format!(
            "`{a}` on search `{stage}`: its {}s probes send about {:.0} requests even at {} \
             req/s, and it needs at least {need} to pass, so its answer can fail but never pass; \
             make the probes {}s or longer (`probe`)",
            short(probe_s),
            to * probe_s,
            short(to),
            (n as f64 / to).ceil(),
        ),
        (Reach::Judged { .. }, ..) => judged_warning(row, n, &need),
        (Reach::RateSearch { probe_s, .. }, Standing::Below(rate), _) => format!(
            "`{a}` on search `{stage}`: it needs at least {need} to pass, and a {}s probe \
             sends that many only from {} req/s, so an answer under that rate would be \
             undecided; raise `from` to {} or make the probes longer (`probe`)",
            short(probe_s),
            short(rate),
            short(rate.ceil()),
        ),
        _ => String::new(),
    }
}

/// The warning for a `judge_score` the judge's sample (a label's share of it) cannot decide.
fn judged_warning(row: &AssertionNeed, n: u64, need: &str) -> String {
    let Reach::Judged {
        count,
        sample,
        share,
    } = row.reach
    else {
        return String::new();
    };
    let (a, stage) = (t(&row.assertion), t(&row.stage));
    let scored = match share {
        Some(p) => format!(
            "scores about {count} of this label's answers ({:.0} % of its sample of {sample})",
            p * 100.0
        ),
        None => format!("scores a sample of {sample} answers"),
    };
    // The sample a label's share of which reaches `n`, rounded up to a ten.
    let raise = share.map_or(n, |p| (n as f64 / p.max(1e-9)).ceil() as u64);
    format!(
        "`{a}` on stage `{stage}`: the judge {scored}, and it needs at least {need} to pass, so \
         it can fail but never pass; judge more (`sample {}` or more in the judge block, and a \
         stage sending at least as many requests)",
        raise.div_ceil(10) * 10
    )
}
