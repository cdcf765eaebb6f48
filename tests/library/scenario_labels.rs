//! `model` and `class` splits in a stage and the `[model=…]`/`[class=…]` SLA selectors:
//! what a valid file yields, and the diagnostic of each way to get one wrong.

use std::path::Path;

use infermeter_core::protocol::{Grouping, LabelRef};
use infermeter_core::scenario::{Scenario, ScenarioError, parse_str};

const HEAD: &str = r#"
dataset "d" {
    synthetic {
        input-tokens 16
        output-tokens 8
    }
}
dataset "long" {
    synthetic {
        input-tokens 512
        output-tokens 8
    }
}
"#;

fn parse(body: &str) -> Result<Scenario, ScenarioError> {
    parse_str(Path::new("t.kdl"), &format!("{HEAD}{body}"), &[])
}

fn messages(body: &str) -> String {
    let e = parse(body).expect_err("the scenario is invalid");
    e.problems()
        .iter()
        .map(|p| format!("{} | {:?}\n", p.message, p.help))
        .collect()
}

#[test]
fn models_and_classes_are_read_with_their_weights_priorities_and_slas() {
    let s = parse(
        r#"
stage "mixed" {
    dataset "d"
    arrival "poisson" rate=5
    requests 40
    model "base" weight=3
    model "meta-llama/Llama-3.1-8B:lora" weight=1
    class "interactive" weight=2 priority=-1 {
        dataset "long"
        sla {
            assert "ttft.p95[window=steady] < 300ms"
        }
    }
    class "batch" priority=10
    priority-inversion "fail"
}
sla {
    assert "e2e.p50[model=base] < 2s"
}
"#,
    )
    .unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)));
    let st = &s.stages[0];
    assert!(st.priority_gate);
    let models = &st.groups[0];
    assert_eq!(models.by, Grouping::Model);
    let names: Vec<(&str, u32)> = models
        .labels
        .iter()
        .map(|l| (l.name.value.as_str(), l.weight))
        .collect();
    assert_eq!(names, [("base", 3), ("meta-llama/Llama-3.1-8B:lora", 1)]);
    let classes = &st.groups[1];
    assert_eq!(classes.by, Grouping::Class);
    assert_eq!(classes.labels[0].priority, Some(-1));
    assert_eq!(classes.labels[0].dataset.as_ref().unwrap().value, "long");
    assert_eq!(
        (classes.labels[1].weight, classes.labels[1].priority),
        (1, Some(10))
    );
    // The class's own assertion is the stage's, on the class's requests.
    let class_sla = s
        .sla
        .iter()
        .find(|a| a.stage.is_some())
        .expect("the class's assertion");
    assert_eq!(
        class_sla.expr.value.expr,
        "ttft.p95[class=interactive,window=steady] < 300ms"
    );
    assert_eq!(
        class_sla.expr.value.label,
        Some(Box::new(LabelRef {
            by: Grouping::Class,
            name: "interactive".into()
        }))
    );
    let top = s.sla.iter().find(|a| a.stage.is_none()).unwrap();
    assert_eq!(top.expr.value.label.as_ref().unwrap().name, "base");
}

#[test]
fn each_wrong_split_is_reported_with_a_hint() {
    let stage = |extra: &str| {
        format!(
            "stage \"s\" {{\n    dataset \"d\"\n    arrival \"poisson\" rate=5\n    requests 10\n{extra}\n}}\n"
        )
    };
    let m = messages(&stage(r#"    model "a b" weight=1"#));
    assert!(m.contains("invalid model name"), "{m}");
    let m = messages(&stage("    model \"x\" weight=0"));
    assert!(m.contains("`weight` out of range"), "{m}");
    let m = messages(&stage("    model \"x\"\n    model \"x\""));
    assert!(m.contains("duplicate model `x`"), "{m}");
    let m = messages(&stage("    class \"c\" { dataset \"nope\" }"));
    assert!(m.contains("undefined dataset `nope`"), "{m}");
    let m = messages(&stage(
        "    class \"c\" priority=1\n    priority-inversion \"fail\"",
    ));
    assert!(m.contains("without classes of different priorities"), "{m}");
    let m = messages(&stage(
        "    class \"c\" priority=1\n    priority-inversion \"maybe\"",
    ));
    assert!(m.contains("unknown priority-inversion"), "{m}");
    let m = messages(&format!(
        "{}sla {{\n    assert \"ttft.p95[model=other] < 1s\"\n}}\n",
        stage("    model \"x\"")
    ));
    assert!(m.contains("no stage here has the model `other`"), "{m}");
    assert!(m.contains("`x`"), "the stage's models are listed: {m}");
}

#[test]
fn selectors_are_typed_and_bounded() {
    use infermeter_core::sla::parse as sla;
    let a = sla("ttft.p95[model=lora-sql] < 300ms").unwrap();
    assert_eq!(a.label.unwrap().to_string(), "model=lora-sql");
    let a = sla("error_rate[window=steady, class=batch] < 1%").unwrap();
    assert_eq!(a.label.unwrap().by, Grouping::Class);
    for bad in [
        "ttft.p95[model=a,class=b] < 1s",
        "ttft.p95[model=a b] < 1s",
        "ttft.p95[model=] < 1s",
        "gpu.temp.max[model=a] < 80",
        "ttft.p95[region=eu] < 1s",
    ] {
        assert!(sla(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_steady_block_puts_its_window_beside_a_label() {
    use infermeter_core::sla::{Window, parse as sla};
    let a = sla("ttft.p95[model=a] < 1s")
        .unwrap()
        .in_window(Window::Steady);
    assert_eq!(a.expr, "ttft.p95[window=steady,model=a] < 1s");
    assert_eq!(a.window, Window::Steady);
    assert_eq!(a.label.as_ref().unwrap().name, "a");
    // The text reads back as the same assertion (the plan's JSON and the verdicts keep it).
    assert_eq!(sla(&a.expr).unwrap(), a);
    let own = sla("ttft.p95[model=a,window=stage] < 1s").unwrap();
    assert_eq!(own.clone().in_window(Window::Steady), own);
}
