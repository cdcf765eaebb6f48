//! Decoding of valid scenarios: defaults, every length distribution and arrival form, params and
//! `--param` overrides, sim targets, and the shipped scenarios.

use std::path::Path;

use infermeter_core::arrival::ArrivalSpec;
use infermeter_core::dataset::{LengthDist, TokenizerSpec};
use infermeter_core::protocol::Api;
use infermeter_core::scenario::{
    Endpoint, ParamValue, Scenario, ScenarioError, StageLimit, parse_str,
};
use infermeter_core::units::Duration;

const DS: &str = r#"
dataset "d" {
    synthetic {
        input-tokens 128
        output-tokens 64
    }
}
"#;

fn parse(text: &str) -> Scenario {
    parse_with(text, &[]).unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)))
}

fn parse_with(text: &str, params: &[(&str, &str)]) -> Result<Scenario, ScenarioError> {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    parse_str(Path::new("t.kdl"), text, &params)
}

fn messages(e: &ScenarioError) -> String {
    e.problems()
        .iter()
        .map(|p| format!("{} | {} | {:?}\n", p.message, p.label, p.help))
        .collect()
}

fn with_stage(arrival: &str) -> String {
    format!("{DS}\nstage \"s\" {{\n dataset \"d\"\n arrival {arrival}\n requests 10\n}}\n")
}

fn dist(input: &str) -> LengthDist {
    let text = format!(
        "dataset \"d\" {{ synthetic {{ input-tokens {input}; output-tokens 1; }} }}\n\
         stage \"s\" {{ dataset \"d\"; arrival \"poisson\" rate=1; requests 1; }}"
    );
    let s = parse(&text);
    let infermeter_core::scenario::DatasetKind::Synthetic(syn) = &s.datasets[0].kind else {
        panic!("synthetic dataset expected")
    };
    syn.input_tokens.value.clone()
}

#[test]
fn defaults_apply() {
    let s = parse(&with_stage("\"poisson\" rate=5"));
    assert_eq!(s.name, "t");
    assert_eq!(s.seed, 0);
    assert_eq!(s.target.request.api, Api::CHAT);
    assert_eq!(s.target.request.timeout, Duration::from_millis(60_000));
    assert!(s.target.request.ignore_eos);
    assert!(matches!(&s.target.endpoint, Endpoint::Sim(c) if **c == Default::default()));
    assert_eq!(s.tokenizer, TokenizerSpec::Cl100kBase);
    assert!(s.warmup.is_none() && s.goodput.is_none() && s.sla.is_empty());
    assert_eq!(s.stages[0].limit, StageLimit::Requests(10));
    assert_eq!(s.stages[0].drain_timeout, None);
}

#[test]
fn warmup_defaults_to_four_clients() {
    let s = parse(&format!(
        "{}\nwarmup duration=\"30s\"",
        with_stage("\"poisson\" rate=5")
    ));
    let w = s.warmup.unwrap();
    assert_eq!(w.clients, 4);
    assert_eq!(w.limit, StageLimit::Duration(Duration::from_millis(30_000)));
    assert_eq!(w.dataset, None);
}

#[test]
fn every_length_distribution_form() {
    assert_eq!(dist("7"), LengthDist::Fixed { value: 7 });
    assert_eq!(
        dist("1 2 2 9"),
        LengthDist::Choice {
            values: vec![1, 2, 2, 9]
        }
    );
    assert_eq!(
        dist("\"uniform\" min=3 max=9"),
        LengthDist::Uniform { min: 3, max: 9 }
    );
    assert_eq!(
        dist("\"normal\" mean=100 stddev=10.5 min=2 max=300"),
        LengthDist::Normal {
            mean: 100.0,
            stddev: 10.5,
            min: 2,
            max: 300
        }
    );
    assert_eq!(
        dist("\"lognormal\" median=300 sigma=0.6 max=2048"),
        LengthDist::LogNormal {
            median: 300.0,
            sigma: 0.6,
            min: 1,
            max: 2048
        }
    );
}

#[test]
fn every_arrival_form() {
    let arrival = |a: &str| parse(&with_stage(a)).stages[0].arrival.value.clone();
    let rate = |r: f64| infermeter_core::units::Rate(r);
    assert_eq!(
        arrival("\"constant\" rate=\"600/m\""),
        ArrivalSpec::Constant { rate: rate(10.0) }
    );
    assert_eq!(
        arrival("\"poisson\" rate=2.5"),
        ArrivalSpec::Poisson { rate: rate(2.5) }
    );
    assert_eq!(
        arrival("\"gamma\" rate=4 burstiness=0.5"),
        ArrivalSpec::Gamma {
            rate: rate(4.0),
            burstiness: infermeter_core::units::Burstiness::new(0.5).unwrap()
        }
    );
    assert_eq!(
        arrival("\"concurrency\" clients=3"),
        ArrivalSpec::Concurrency { clients: 3 }
    );
}

const PARAMS: &str = r#"
param "rate" 20
param "scale" 1.5
param "dur" "10s"
param "eos" #false
target "sim" { ignore-eos (param)"eos"; }
dataset "d" { synthetic { input-tokens 8; output-tokens 8; } }
stage "s" { dataset "d"; arrival "poisson" rate=(param)"rate"; duration (param)"dur"; }
"#;

#[test]
fn params_substitute_their_defaults() {
    let s = parse(PARAMS);
    assert_eq!(
        s.stages[0].arrival.value,
        ArrivalSpec::Poisson {
            rate: infermeter_core::units::Rate(20.0)
        }
    );
    assert_eq!(
        s.stages[0].limit,
        StageLimit::Duration(Duration::from_millis(10_000))
    );
    assert!(!s.target.request.ignore_eos);
    assert_eq!(s.params["scale"], ParamValue::Float(1.5));
}

#[test]
fn overrides_are_parsed_by_the_default_type() {
    let s = parse_with(
        PARAMS,
        &[
            ("rate", "40"),
            ("dur", "2m"),
            ("eos", "true"),
            ("scale", "3"),
        ],
    )
    .unwrap();
    assert_eq!(
        s.stages[0].arrival.value,
        ArrivalSpec::Poisson {
            rate: infermeter_core::units::Rate(40.0)
        }
    );
    assert_eq!(
        s.stages[0].limit,
        StageLimit::Duration(Duration::from_millis(120_000))
    );
    assert!(s.target.request.ignore_eos);
    assert_eq!(s.params["rate"], ParamValue::Int(40));
    assert_eq!(s.params["scale"], ParamValue::Float(3.0));
}

#[test]
fn bad_overrides_are_reported() {
    let e = parse_with(PARAMS, &[("rate", "2.5")]).unwrap_err();
    assert!(
        messages(&e).contains("`2.5` is not an integer"),
        "{}",
        messages(&e)
    );
    let e = parse_with(PARAMS, &[("rat", "2")]).unwrap_err();
    assert!(
        messages(&e).contains("did you mean `rate`?"),
        "{}",
        messages(&e)
    );
    let e = parse_with(PARAMS, &[("eos", "maybe")]).unwrap_err();
    assert!(
        messages(&e).contains("is not a boolean"),
        "{}",
        messages(&e)
    );
    // A string param takes any text, then the use site checks it.
    let e = parse_with(PARAMS, &[("dur", "soon")]).unwrap_err();
    assert!(
        messages(&e).contains("invalid duration for `duration`"),
        "{}",
        messages(&e)
    );
}

#[test]
fn sim_target_collects_simulator_settings() {
    let s = parse(&format!(
        "target \"sim\" {{ model \"m\"; decode-base \"4ms\"; max-running 8; timeout \"5s\"; }}\n{}",
        with_stage("\"poisson\" rate=5")
    ));
    let Endpoint::Sim(cfg) = &s.target.endpoint else {
        panic!("sim target")
    };
    assert_eq!(cfg.decode_base, Duration::from_millis(4));
    assert_eq!(cfg.max_running, 8);
    assert_eq!(cfg.model, "m");
    assert_eq!(s.target.request.model.as_deref(), Some("m"));
    assert_eq!(s.target.request.timeout, Duration::from_millis(5000));
}

#[test]
fn url_target_reads_every_setting() {
    let s = parse(&format!(
        r#"target "http://h:1/v1" {{
            api "completions"; api-key env="KEY"; header "A" "1"; header "B" "2"
            body {{ temperature 0.5; n 2; stop "x"; echo #false; }}
        }}
        tokenizer "dir/tokenizer.json"
        {}"#,
        with_stage("\"poisson\" rate=5")
    ));
    let t = &s.target;
    assert!(matches!(&t.endpoint, Endpoint::Url(u) if u.value == "http://h:1/v1"));
    assert_eq!(t.request.api, Api::COMPLETIONS);
    assert_eq!(t.request.api_key_env.as_deref(), Some("KEY"));
    assert_eq!(
        t.request.headers,
        vec![("A".into(), "1".into()), ("B".into(), "2".into())]
    );
    assert_eq!(t.request.extra_body["temperature"], serde_json::json!(0.5));
    assert_eq!(t.request.extra_body["n"], serde_json::json!(2));
    assert_eq!(t.request.extra_body["echo"], serde_json::json!(false));
    assert_eq!(
        s.tokenizer,
        TokenizerSpec::File("dir/tokenizer.json".into())
    );
}

#[test]
fn body_fields_nest_as_blocks() {
    let s = parse(&format!(
        r#"target "http://h:1/v1" {{
            body {{
                chat_template_kwargs {{ enable_thinking #false; }}
                stop "a" "b"
                tool_choice "auto"
                tools {{
                    - {{
                        type "function"
                        function {{
                            name "get_weather"
                            parameters {{
                                type "object"
                                required "city"
                                properties {{ city {{ type "string"; }}; }}
                            }}
                        }}
                    }}
                }}
                response_format {{ type "json_object"; }}
                logit_bias {{ }}
            }}
        }}
        {}"#,
        with_stage("\"poisson\" rate=5")
    ));
    let b = &s.target.request.extra_body;
    assert_eq!(
        b["chat_template_kwargs"],
        serde_json::json!({"enable_thinking": false})
    );
    assert_eq!(b["stop"], serde_json::json!(["a", "b"]));
    assert_eq!(
        b["tools"],
        serde_json::json!([{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "required": "city",
                "properties": {"city": {"type": "string"}}}}}])
    );
    assert_eq!(
        b["response_format"],
        serde_json::json!({"type": "json_object"})
    );
    assert_eq!(b["logit_bias"], serde_json::json!({}));
}

#[test]
fn bad_body_blocks_are_reported() {
    for (body, expect) in [
        ("x { - 1; y 2; }", "mixes `-` elements and named keys"),
        ("x { y 1; y 2; }", "duplicate `y` in `x`"),
        ("x 1 { y 2; }", "both values and a block"),
        ("x", "needs a value"),
        ("x { y { z #null; }; }", "wrong type for body field `z`"),
        ("x 1 #null", "wrong type for body field `x`"),
        ("x { y a=1; }", "unknown property `a`"),
    ] {
        let text = format!(
            "target \"http://h:1/v1\" {{ body {{ {body}; }}; }}\n{}",
            with_stage("\"poisson\" rate=5")
        );
        let e = parse_with(&text, &[]).expect_err(body);
        assert!(messages(&e).contains(expect), "{body}: {}", messages(&e));
    }
}

#[test]
fn assertion_spans_cover_the_string_content() {
    let text = format!(
        "{}\nsla {{\n    assert \"ttft.p95 < 200ms\" stage=\"s\" abort-on-fail=#true\n}}",
        with_stage("\"poisson\" rate=5")
    );
    let s = parse(&text);
    let a = &s.sla[0];
    let span = a.expr.span;
    assert_eq!(
        &text[span.offset()..span.offset() + span.len()],
        "ttft.p95 < 200ms"
    );
    assert!(a.abort_on_fail);
    assert_eq!(a.stage.as_ref().map(|s| s.value.as_str()), Some("s"));
}

#[test]
fn stage_scoped_assertions_carry_their_stage() {
    let text = format!(
        "{DS}\nstage \"st\" {{ dataset \"d\"; arrival \"poisson\" rate=1; requests 1; sla {{ assert \"itl.p99 < 40ms\"; }} }}"
    );
    let s = parse(&text);
    assert_eq!(s.sla.len(), 1);
    assert_eq!(
        s.sla[0].stage.as_ref().map(|s| s.value.as_str()),
        Some("st")
    );
    assert!(!s.sla[0].abort_on_fail);
}

#[test]
fn arbitrary_garbage_never_panics() {
    for text in [
        "",
        "{",
        "}",
        "stage",
        "stage \"\" { }",
        "param",
        "target { }",
        "\u{feff}x",
        "dataset \"d\" { synthetic { input-tokens \"normal\" mean=1e400 stddev=1 max=2; } }",
        "stage \"s\" { requests 99999999999999999999999999999; }",
        "seed (param)1",
    ] {
        assert!(parse_with(text, &[("x", "1")]).is_err(), "{text:?}");
    }
}

#[test]
fn shipped_scenarios_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut n = 0;
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "kdl") {
                n += 1;
                if let Err(e) = infermeter_core::scenario::load(&p, &[]) {
                    panic!("{:?}", miette::Report::new(e));
                }
            }
        }
    }
    assert!(n >= 5, "expected the shipped scenarios, found {n}");
}

/// A cheap stand-in for the fuzz target: every prefix of a rich scenario, and the scenario with
/// each line removed, must parse or fail without panicking, with spans inside the text.
#[test]
fn truncated_and_mangled_scenarios_never_panic() {
    let full = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/all-options.kdl"),
    )
    .unwrap();
    let check = |text: &str| {
        if let Err(e) = parse_with(text, &[("rate", "3")]) {
            // Only `--param` problems (nothing in the file to point at) lack a span.
            for p in e.problems() {
                let Some(span) = p.span else {
                    assert!(p.message.starts_with("--param"), "{p}");
                    continue;
                };
                assert!(span.offset() + span.len() <= text.len(), "{text:?}: {p}");
            }
        }
    };
    for (i, _) in full.char_indices().step_by(11) {
        check(&full[..i]);
    }
    let lines: Vec<&str> = full.lines().collect();
    for skip in 0..lines.len() {
        let mangled: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, l)| *l)
            .collect();
        check(&mangled.join("\n"));
    }
}

#[test]
fn report_tolerances_sla_settings_and_rounds_parse() {
    let text = format!(
        r#"{DS}
rounds 3
stage "s" {{ dataset "d"; arrival "poisson" rate=5; duration "1s"; rounds 2; }}
sla {{
    assert "ttft.p95 < 1s"
    confidence "90%"
    inconclusive "fail"
    untrusted "judge"
}}
report {{ tolerance "5%"; tolerance "ttft.p95" "10%"; tolerance "itl" "20%"; }}
"#
    );
    let s = parse_str(Path::new("t.kdl"), &text, &[]).expect("valid");
    assert_eq!(s.rounds, 3);
    assert_eq!(s.stages[0].rounds, Some(2));
    assert_eq!(s.sla_policy.confidence, Some(0.9));
    assert_eq!(
        s.sla_policy.inconclusive,
        Some(infermeter_core::sla::InconclusiveAs::Fail)
    );
    assert_eq!(
        s.sla_policy.untrusted,
        Some(infermeter_core::sla::Untrusted::Judge)
    );
    assert_eq!(s.report.tolerance, Some(0.05));
    assert_eq!(s.report.tolerances["ttft.p95"], 0.1);
    assert_eq!(s.report.tolerances["itl"], 0.2);

    for (bad, says) in [
        (r#"sla { confidence "40%"; }"#, "`confidence` out of range"),
        (
            r#"sla { inconclusive "maybe"; }"#,
            "unknown `inconclusive` value",
        ),
        (
            r#"report { tolerance "bogus" "5%"; }"#,
            "unknown metric `bogus`",
        ),
        (r#"rounds 0"#, "`rounds` out of range"),
    ] {
        let text = format!(
            "{DS}\nstage \"s\" {{ dataset \"d\"; arrival \"poisson\" rate=5; duration \"1s\"; }}\n{bad}\n"
        );
        let err = parse_str(Path::new("t.kdl"), &text, &[]).expect_err(bad);
        let all: Vec<String> = err.problems().iter().map(|p| p.message.clone()).collect();
        assert!(all.iter().any(|m| m.contains(says)), "{bad}: {all:?}");
    }
}

#[test]
fn an_sla_blocks_window_applies_to_its_assertions_that_name_none() {
    use infermeter_core::sla::Window;
    let text = format!(
        "{}\nsla {{\n    window \"steady\"\n    assert \"ttft.p99 < 200ms\"\n    assert \"e2e.p99[window=stage] < 2s\"\n}}\nsla {{ assert \"error_rate < 1%\" }}",
        with_stage("\"poisson\" rate=5")
    );
    let s = parse(&text);
    let windows: Vec<(Window, &str)> = s
        .sla
        .iter()
        .map(|a| (a.expr.value.window, a.expr.value.expr.as_str()))
        .collect();
    assert_eq!(
        windows,
        [
            (Window::Steady, "ttft.p99[window=steady] < 200ms"),
            (Window::Stage, "e2e.p99[window=stage] < 2s"),
            (Window::Stage, "error_rate < 1%"),
        ]
    );
}

#[test]
fn a_bad_sla_window_is_refused_with_a_hint() {
    for (block, words) in [
        (
            "window \"ramp\"; assert \"ttft.p99 < 1s\"",
            "unknown window `ramp`",
        ),
        (
            "window \"steady\"; window \"stage\"",
            "`window` given twice",
        ),
        (
            "window \"steady\"; assert \"itl.p99 < 40ms\"",
            "`itl` has no steady-state window",
        ),
        ("window 5", "window"),
        (
            "assert \"itl.p99[window=steady] < 40ms\"",
            "`itl` has no steady-state window",
        ),
    ] {
        let text = format!("{}\nsla {{ {block} }}", with_stage("\"poisson\" rate=5"));
        let e = parse_with(&text, &[]).unwrap_err();
        let all = messages(&e);
        assert!(all.contains(words), "{block}: {all}");
        assert!(
            e.problems().iter().all(|p| p.span.is_some()),
            "{block}: {all}"
        );
    }
}

/// `ignore-eos` defaults by API, wherever `api` is written; what a target writes wins. A
/// reasoning effort is kept in the plan's settings, and refused where the API cannot carry it.
#[test]
fn ignore_eos_and_reasoning_effort_follow_the_api() {
    let target = |body: &str| {
        let text = format!(
            "target \"sim\" {{ {body} }}\n{DS}\nstage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=1; requests 1; }}"
        );
        parse_with(&text, &[])
    };
    let r = |body: &str| target(body).unwrap().target.request;
    assert!(r("api \"chat\"").ignore_eos);
    assert!(r("api \"completions\"").ignore_eos);
    assert!(!r("api \"responses\"").ignore_eos);
    assert!(r("ignore-eos #true; api \"responses\"").ignore_eos);
    assert!(!r("api \"chat\"; ignore-eos #false").ignore_eos);
    let effort = r("reasoning-effort \"high\"; api \"responses\"").reasoning_effort;
    assert_eq!(
        effort,
        Some(infermeter_core::protocol::ReasoningEffort::High)
    );
    assert_eq!(r("").reasoning_effort, None);
    let e = target("api \"completions\"; reasoning-effort \"low\"").unwrap_err();
    let shown = format!("{:?}", miette::Report::new(e));
    assert!(shown.contains("carries no reasoning effort"), "{shown}");
    assert!(
        shown.contains("api \"chat\" or api \"responses\""),
        "{shown}"
    );
    let e = target("reasoning-effort \"hgh\"").unwrap_err();
    let shown = format!("{:?}", miette::Report::new(e));
    assert!(shown.contains("high"), "did you mean: {shown}");
}

#[test]
fn a_session_state_is_read_and_checked_against_history_and_the_api() {
    use infermeter_core::dataset::{History, SessionState};
    let with = |api: &str, session: &str| {
        format!(
            r#"target "sim" {{ api "{api}"; }}
dataset "d" {{
    synthetic {{ input-tokens 16; output-tokens 8; }}
    session {session}
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 1; }}
"#
        )
    };
    let s = parse(&with("responses", "turns=3"));
    let spec = s.datasets[0].session.unwrap();
    assert_eq!(
        (spec.state, spec.history),
        (SessionState::Resend, History::Dataset)
    );
    let s = parse(&with(
        "responses",
        r#"turns=3 state="previous-response-id""#,
    ));
    let spec = s.datasets[0].session.unwrap();
    assert_eq!(spec.state, SessionState::PreviousResponseId);
    assert_eq!(
        spec.history,
        History::Server,
        "the server's replies are the history"
    );
    for (api, session, says) in [
        (
            "responses",
            r#"turns=3 state="previous-response-id" history="dataset""#,
            "keeps the server's own replies",
        ),
        (
            "responses",
            r#"turns=3 state="kept""#,
            "unknown session state `kept`",
        ),
        (
            "chat",
            r#"turns=3 state="previous-response-id""#,
            "needs the Responses API",
        ),
    ] {
        let e = parse_with(&with(api, session), &[]).unwrap_err();
        let m = messages(&e);
        assert!(m.contains(says), "{session}: {m}");
        assert!(
            e.problems()
                .iter()
                .all(|p| p.span.is_some() && p.help.is_some()),
            "{m}"
        );
    }
}

#[test]
fn a_kept_session_refuses_a_body_that_sets_its_fields() {
    for key in ["store #false", "previous_response_id \"resp_1\""] {
        let text = format!(
            r#"target "sim" {{ api "responses"; body {{ {key}; }} }}
dataset "d" {{
    synthetic {{ input-tokens 16; output-tokens 8; }}
    session turns=3 state="previous-response-id"
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 1; }}
"#
        );
        let e = parse_with(&text, &[]).unwrap_err();
        let m = messages(&e);
        assert!(
            m.contains("which this session sets on every turn"),
            "{key}: {m}"
        );
        assert!(m.contains("drop `"), "{m}");
    }
}

#[test]
fn a_kept_session_stays_on_one_url() {
    let with = |route: &str| {
        format!(
            r#"target {{
    url "http://127.0.0.1:8001/v1"
    url "http://127.0.0.1:8002/v1"
    {route}
    api "responses"
}}
dataset "d" {{
    synthetic {{ input-tokens 16; output-tokens 8; }}
    session turns=3 state="previous-response-id"
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 1; }}
"#
        )
    };
    for route in ["", "route \"round-robin\"", "route \"by-weight\""] {
        let e = parse_with(&with(route), &[]).unwrap_err();
        let m = messages(&e);
        assert!(m.contains("must stay on one URL"), "{route}: {m}");
        assert!(m.contains("by-session"), "{route}: {m}");
    }
    parse(&with("route \"by-session\""));
}
