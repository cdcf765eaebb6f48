//! Session building: ShareGPT conversations cut into turns, synthetic turns' messages and
//! their exact token counts, determinism.

use super::*;
use crate::plan::{SessionPlan, compile, tests::scenario};
use crate::scenario::{History, LengthDist};
use crate::units::Duration;

fn turn(from: &str, value: &str) -> (String, String) {
    (from.to_string(), value.to_string())
}

fn first() -> TurnTokens {
    TurnTokens {
        user_tokens: 3,
        output_tokens: 3,
        reply_tokens: 3,
    }
}

#[test]
fn conversations_are_cut_where_the_alternation_breaks() {
    let tok = Tokenizer::cl100k_base();
    let kept = vec![
        turn("human", "one two three"),
        turn("gpt", "four five six"),
        turn("human", "seven eight"),
        turn("gpt", "nine ten eleven twelve"),
        turn("gpt", "a second reply in a row"),
        turn("human", "never used"),
    ];
    let item = conversation(kept, first(), None, &tok).unwrap();
    assert_eq!(item.turns.len(), 2);
    assert_eq!(item.turns[1].user_tokens, 2);
    assert_eq!(item.turns[1].reply_tokens, 4);
    assert_eq!(item.turns[1].output_tokens, 4);
    let ItemPrompt::Messages(ms) = &item.prompt else {
        panic!("a session item is a conversation");
    };
    let roles: Vec<&str> = ms.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    // An empty later message ends the conversation too; the override sets every output.
    let kept = vec![
        turn("human", "one two three"),
        turn("gpt", "four five six"),
        turn("human", "seven"),
        turn("gpt", ""),
    ];
    let item = conversation(kept, first(), Some(9), &tok).unwrap();
    assert_eq!(item.turns.len(), 1);
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
    });
    let f = PromptFactory::new(&plan, std::path::Path::new(".")).unwrap();
    let stage = &plan.stages[0];
    for i in 0..20 {
        let session = plan.session(stage, i);
        assert_eq!(session, plan.session(stage, i), "deterministic");
        assert_eq!(session.turns.len(), 3);
        // Turn 0 is the request a session-less data set sends.
        assert_eq!(session.turn(0), plan.request(stage, i));
        for k in 0..3 {
            let Prompt::Messages(ms) = f.session_prompt(stage, &session, k, None) else {
                panic!("a turn is a conversation");
            };
            assert_eq!(ms.len(), 2 * k + 1);
            assert_eq!(
                ms[0].content,
                f.prompt(stage, &plan.request(stage, i)).as_text()
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
        let Prompt::Messages(ms) = f.session_prompt(stage, &session, 1, Some(&replies)) else {
            panic!("a turn is a conversation");
        };
        assert_eq!(ms[1].content, "hello there");
        assert_eq!(ms[1].role, "assistant");
    }
}
