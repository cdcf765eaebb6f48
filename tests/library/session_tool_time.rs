//! A session's tool time (`session … tool-time="…" tool-time-max="…"`): parsed, checked,
//! planned (in the plan's hash), and drawn the same on every compile of the plan, inside its
//! bounds.

use std::path::Path;

use infermeter_core::plan::{Plan, compile};
use infermeter_core::scenario::{ScenarioError, parse_str};
use infermeter_core::units::Duration;

fn scenario(session: &str) -> String {
    format!(
        r#"
target "sim" {{ }}
dataset "d" {{
    synthetic {{ input-tokens 32; output-tokens 8 }}
    session turns=4 {session}
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 2; }}
"#
    )
}

fn plan(session: &str) -> Result<Plan, ScenarioError> {
    let s = parse_str(Path::new("t.kdl"), &scenario(session), &[])?;
    Ok(compile(&s).unwrap())
}

fn problems(session: &str) -> String {
    match plan(session) {
        Ok(_) => panic!("{session} parsed"),
        Err(e) => e
            .problems()
            .iter()
            .map(|p| format!("{} | {:?}\n", p.message, p.help))
            .collect(),
    }
}

#[test]
fn a_tool_time_range_is_drawn_within_it_and_the_same_every_time() {
    let p = plan(r#"think-time="1s" tool-time="200ms" tool-time-max="2s""#).unwrap();
    let s = p.datasets[0].session.expect("sessions");
    assert_eq!(s.tool_time, Some("200ms".parse::<Duration>().unwrap()));
    let again = plan(r#"think-time="1s" tool-time="200ms" tool-time-max="2s""#).unwrap();
    let seed = p.stages[0].seed;
    let draws: Vec<Duration> = (0..2)
        .flat_map(|i| (1..4).map(move |k| (i, k)))
        .map(|(i, k)| s.tool_pause(seed, i, k))
        .collect();
    for (n, d) in draws.iter().enumerate() {
        let (i, k) = (n as u64 / 3, n as u32 % 3 + 1);
        let other = again.datasets[0].session.unwrap();
        assert_eq!(*d, other.tool_pause(again.stages[0].seed, i, k));
        assert!(
            *d >= "200ms".parse().unwrap() && *d <= "2s".parse().unwrap(),
            "{d}"
        );
    }
    assert!(
        draws.windows(2).any(|w| w[0] != w[1]),
        "drawn per session and turn: {draws:?}"
    );
    // Fixed without a maximum; the think time without a tool time.
    let fixed = plan(r#"tool-time="300ms""#).unwrap();
    let f = fixed.datasets[0].session.unwrap();
    assert_eq!(f.tool_pause(1, 0, 1), "300ms".parse().unwrap());
    let none = plan(r#"think-time="1s""#).unwrap();
    let n = none.datasets[0].session.unwrap();
    assert_eq!(n.tool_pause(1, 0, 1), "1s".parse().unwrap());
    // Set, it is part of the plan: its hash moves.
    assert_ne!(
        none.hash,
        plan(r#"think-time="1s" tool-time="1s""#).unwrap().hash
    );
}

#[test]
fn a_tool_time_range_needs_its_lower_bound_below_its_upper() {
    let e = problems(r#"tool-time-max="1s""#);
    assert!(e.contains("`tool-time-max` needs `tool-time`"), "{e}");
    let e = problems(r#"tool-time="2s" tool-time-max="1s""#);
    assert!(e.contains("is below `tool-time`"), "{e}");
    let e = problems(r#"tool-time=5"#);
    assert!(e.contains("tool-time"), "{e}");
}
