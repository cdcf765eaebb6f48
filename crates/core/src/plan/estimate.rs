//! What `validate` and `plan` say of each sweep before it runs: how many points it expands
//! into (shapes × load levels) and about how long they take. A point limited by time lasts
//! its duration, an open-loop count of requests its count over the rate; a closed-loop count
//! takes what the server needs, estimated from the simulator's latency model when the target
//! is the simulator, and unknown otherwise.

use crate::arrival::PointKind;

use super::{EndpointPlan, Load, Plan, StagePlan};

/// One line per sweep of `plan`, in the order the sweeps run: `pareto: 3 shapes × 4
/// concurrency levels = 12 points, about 1m 30s`.
pub fn sweep_lines(plan: &Plan) -> Vec<String> {
    let mut sweeps: Vec<Sweep<'_>> = Vec::new();
    for stage in &plan.stages {
        let Some(point) = stage
            .profile
            .as_ref()
            .filter(|p| p.kind == PointKind::Sweep)
        else {
            continue;
        };
        // A shaped sweep's groups are `stage@128/32` (on a configuration, `…@config`): its
        // family is the group without the shape.
        let family = match &point.shape {
            Some(shape) => point.group.replacen(&format!("@{shape}"), "", 1),
            None => point.group.clone(),
        };
        let at = match sweeps.iter().position(|s| s.family == family) {
            Some(i) => i,
            None => {
                sweeps.push(Sweep {
                    family,
                    axis: if point.clients.is_some() {
                        "concurrency levels"
                    } else {
                        "rates"
                    },
                    shapes: Vec::new(),
                    levels: Vec::new(),
                    points: Vec::new(),
                });
                sweeps.len() - 1
            }
        };
        let s = &mut sweeps[at];
        if let Some(shape) = &point.shape
            && !s.shapes.contains(&shape.as_str())
        {
            s.shapes.push(shape);
        }
        let level = point.load();
        if !s.levels.contains(&level) {
            s.levels.push(level);
        }
        s.points.push(stage);
    }
    sweeps.iter().map(|s| s.line(plan)).collect()
}

/// The points of one sweep, gathered from the plan's stages.
struct Sweep<'p> {
    family: String,
    axis: &'static str,
    shapes: Vec<&'p str>,
    levels: Vec<f64>,
    points: Vec<&'p StagePlan>,
}

impl Sweep<'_> {
    fn line(&self, plan: &Plan) -> String {
        let shapes = match self.shapes.len() {
            0 => String::new(),
            1 => "1 shape × ".to_string(),
            n => format!("{n} shapes × "),
        };
        let count = self.points.len();
        let estimates: Vec<Option<f64>> = self.points.iter().map(|s| seconds(plan, s)).collect();
        let known: f64 = estimates.iter().flatten().sum();
        let unknown = estimates.iter().filter(|e| e.is_none()).count();
        let time = if unknown == 0 {
            format!("about {}", shown(known))
        } else if unknown == count {
            "how long depends on the server (each point sends a count of requests)".to_string()
        } else {
            format!(
                "at least {} (and {unknown} points that take what the server needs)",
                shown(known)
            )
        };
        format!(
            "{}: {shapes}{} {} = {count} points, {time}",
            self.family,
            self.levels.len(),
            self.axis
        )
    }
}

/// About how long stage `s` sends, in seconds (every round, without the drain); `None` when
/// only the server can say.
fn seconds(plan: &Plan, s: &StagePlan) -> Option<f64> {
    let rounds = f64::from(s.rounds.max(1));
    if let Some(d) = s.duration {
        return Some(d.as_secs_f64() * rounds);
    }
    let n = s.max_requests? as f64;
    match &s.load {
        Load::Open { .. } => {
            let rate = s
                .profile
                .as_ref()?
                .offered_rate_per_s
                .filter(|&r| r > 0.0)?;
            Some(n / rate * rounds)
        }
        Load::Closed { clients, .. } => {
            let EndpointPlan::Sim(cfg) = &plan.target.endpoint else {
                return None;
            };
            // The simulator's model: the prompt prefilled, then one decode step per output
            // token, each longer by every other running sequence; the batch holds at most
            // `max-running` of the clients.
            let batch = (*clients).min(cfg.max_running.max(1)).max(1);
            let r = plan.request(s, 0);
            let step =
                cfg.decode_base.as_secs_f64() + cfg.decode_per_seq.as_secs_f64() * f64::from(batch);
            let one = cfg.prefill_per_token.as_secs_f64() * f64::from(r.input_tokens)
                + step * f64::from(r.output_tokens);
            Some((n / f64::from(batch)).ceil() * one * rounds)
        }
        Load::Search(_) => None,
    }
}

/// `45 s`, `3m 20s`, `1h 5m`.
fn shown(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        0..60 => format!("{} s", s.max(1)),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(super::shown(0.2), "1 s");
        assert_eq!(super::shown(45.0), "45 s");
        assert_eq!(super::shown(200.0), "3m 20s");
        assert_eq!(super::shown(3900.0), "1h 05m");
    }
}

#[cfg(test)]
mod sweep_tests {
    fn lines(target: &str, stage: &str) -> Vec<String> {
        let text = format!(
            "{target}\ndataset \"d\" {{ synthetic {{ input-tokens 8; output-tokens 10; }} }}\n\
             stage \"p\" {{ dataset \"d\"; {stage} }}\n"
        );
        let s = crate::scenario::parse_str(std::path::Path::new("s.kdl"), &text, &[]).unwrap();
        super::sweep_lines(&crate::plan::compile(&s).unwrap())
    }

    #[test]
    fn a_sweep_says_its_points_and_about_how_long_they_take() {
        let timed = lines(
            "target \"http://127.0.0.1:8000/v1\"",
            "duration \"10s\"; sweep { concurrency 1 2 4; shapes \"8/8\" \"16/8\"; }",
        );
        assert_eq!(
            timed,
            ["p: 2 shapes × 3 concurrency levels = 6 points, about 1m 00s"]
        );
        let open = lines(
            "target \"http://127.0.0.1:8000/v1\"",
            "requests 20; sweep { rates 10 20; }",
        );
        assert_eq!(open, ["p: 2 rates = 2 points, about 3 s"]);
        let counted = lines(
            "target \"http://127.0.0.1:8000/v1\"",
            "requests 20; sweep { concurrency 1 2; }",
        );
        assert!(counted[0].contains("depends on the server"), "{counted:?}");
        // The simulator's model: 10 decode steps of 10 ms + 2 ms per sequence, no prefill.
        let sim = lines(
            "target \"sim\" { decode-base \"10ms\"; decode-per-seq \"2ms\"; prefill-per-token \"0us\"; }",
            "requests 20; sweep { concurrency 1 2; shapes \"8/10\"; }",
        );
        // 20 × 0.12 s alone, 10 × 0.14 s two at a time: 3.8 s.
        assert_eq!(
            sim,
            ["p: 1 shape × 2 concurrency levels = 2 points, about 4 s"]
        );
    }
}
