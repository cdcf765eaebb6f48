//! Prompts materialised from a compiled plan: deterministic, exact token counts, distinct
//! openings; sessions' turns carrying their history.

use std::collections::HashSet;

use super::tests::scenario;
use super::{SessionPlan, compile};
use crate::dataset::{History, LengthDist, Prompt};
use crate::units::Duration;

#[test]
fn prompts_are_deterministic_and_distinct_from_the_first_tokens() {
    let plan = compile(&scenario()).unwrap();
    let f = plan.prompt_factory(std::path::Path::new(".")).unwrap();
    let stage = &plan.stages[0];
    let mut openings = HashSet::new();
    for i in 0..10_000 {
        let recipe = plan.request(stage, i);
        let text = f
            .prompt(stage.dataset, recipe.input_tokens, recipe.item)
            .as_text()
            .to_string();
        if i % 1000 == 0 {
            assert_eq!(f.tokenizer().count(&text), recipe.input_tokens as usize);
            assert_eq!(
                f.prompt(stage.dataset, recipe.input_tokens, recipe.item)
                    .as_text(),
                text
            );
        }
        let first4: Vec<&str> = text.split(' ').take(4).collect();
        assert!(
            openings.insert(first4.join(" ")),
            "request {i} repeats an opening"
        );
    }
}

#[test]
fn synthetic_turns_carry_the_history_with_exact_counts() {
    let mut s = scenario();
    s.datasets[0].kind = crate::scenario::DatasetKind::Synthetic(crate::scenario::SyntheticSpec {
        input_tokens: crate::scenario::Spanned::new(
            LengthDist::Uniform { min: 5, max: 50 },
            (0usize, 0usize),
        ),
        output_tokens: crate::scenario::Spanned::new(
            LengthDist::Uniform { min: 3, max: 30 },
            (0usize, 0usize),
        ),
    });
    let mut plan = compile(&s).unwrap();
    plan.datasets[0].session = Some(SessionPlan {
        turns: 3,
        think_time: Duration::ZERO,
        history: History::Dataset,
        tool_time: None,
        tool_time_max: None,
        state: Default::default(),
    });
    let f = plan.prompt_factory(std::path::Path::new(".")).unwrap();
    let stage = &plan.stages[0];
    for i in 0..20 {
        let session = plan.session(stage, i);
        assert_eq!(session, plan.session(stage, i), "deterministic");
        assert_eq!(session.turns.len(), 3);
        // Turn 0 is the request a session-less data set sends.
        assert_eq!(session.turn(0), plan.request(stage, i));
        for k in 0..3 {
            let Prompt::Messages(ms) =
                f.session_prompt(stage.dataset, session.item, &session.turns, k, None)
            else {
                panic!("a turn is a conversation");
            };
            assert_eq!(ms.len(), 2 * k + 1);
            assert_eq!(
                ms[0].content,
                f.prompt(
                    stage.dataset,
                    plan.request(stage, i).input_tokens,
                    plan.request(stage, i).item
                )
                .as_text()
            );
            let counted: usize = ms.iter().map(|m| f.tokenizer().count(&m.content)).sum();
            assert_eq!(
                counted,
                session.turn(k).input_tokens as usize,
                "session {i} turn {k}"
            );
        }
        // The server's replies replace the data set's.
        let replies = vec!["hello there".to_string()];
        let Prompt::Messages(ms) = f.session_prompt(
            stage.dataset,
            session.item,
            &session.turns,
            1,
            Some(&replies),
        ) else {
            panic!("a turn is a conversation");
        };
        assert_eq!(ms[1].content, "hello there");
        assert_eq!(ms[1].role, "assistant");
    }
}

#[test]
fn a_factory_needs_a_loadable_tokenizer() {
    let mut plan = compile(&scenario()).unwrap();
    plan.tokenizer = crate::dataset::TokenizerSpec::File("absent/tokenizer.json".into());
    let dir = tempfile::tempdir().unwrap();
    assert!(plan.prompt_factory(dir.path()).is_err());
}
