//! Session building: ShareGPT conversations cut into turns (the turns' messages are tested
//! through the plan, in `plan/prompt_tests.rs`).

use super::*;

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
