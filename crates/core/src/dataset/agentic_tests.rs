//! Agentic traces: the graph a file says, and every hostile file refused with its line.

use std::io::Write;

use super::super::{AgentTask, DatasetError, ItemPrompt, MAX_LINE_BYTES, Tokenizer, load_agentic};

fn load(text: &str) -> Result<Vec<AgentTask>, DatasetError> {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    let loaded = load_agentic(f.path(), "t.jsonl", None, 16, 1, &Tokenizer::cl100k_base())?;
    Ok(loaded
        .items
        .into_iter()
        .map(|i| *i.agent.expect("an agentic item"))
        .collect())
}

/// The line and the reason of a refusal.
fn refused(text: &str) -> (Option<u64>, String) {
    match load(text) {
        Err(DatasetError::File { line, reason, .. }) => (line, reason),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

const TREE: &str = r#"{"id": "main", "turns": [{"text": "fix the bug", "output_tokens": 20, "fork": ["a", "b"]}, {"text": "results", "wait_ms": 30, "join": ["a", "b"]}]}
{"id": "a", "turns": [{"text": "look at the test", "fork": ["a1"]}, {"input_tokens": 50, "reply": "the test expects an empty config"}]}
{"id": "b", "turns": [{"text": "grep for callers"}]}
{"id": "a1", "turns": [{"text": "read the file"}]}
{"id": "solo", "turns": [{"text": "rename it"}]}
"#;

#[test]
fn tasks_are_the_roots_with_their_subagents_in_file_order() {
    let tasks = load(TREE).unwrap();
    assert_eq!(tasks.len(), 2);
    let ids: Vec<&str> = tasks[0].sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["main", "a", "b", "a1"]);
    let main = &tasks[0].sessions[0];
    assert_eq!(main.turns[0].fork, [1, 2]);
    assert_eq!(main.turns[1].join, [1, 2]);
    assert_eq!(main.turns[1].wait_ms, 30);
    assert_eq!(tasks[0].sessions[1].turns[0].fork, [3]);
    // Lengths: counted text, given tokens, the reply's count as the output by default.
    let a = &tasks[0].sessions[1].turns[1];
    assert_eq!(a.input_tokens, 50);
    assert_eq!(a.output_tokens, a.reply_tokens);
    assert_eq!(main.turns[1].output_tokens, 16, "the data set's default");
    assert_eq!(tasks[0].turn_count(), 6);
    // Each turn's position in the task (what its trace id carries) is its own; the root's is
    // its turn number.
    let positions: Vec<u32> = (0..tasks[0].sessions.len())
        .flat_map(|s| {
            let t = &tasks[0];
            (0..t.sessions[s].turns.len()).map(move |k| t.turn_position(s, k))
        })
        .collect();
    assert_eq!(positions, (0..6).collect::<Vec<u32>>());
    assert_eq!(tasks[0].turn_position(0, 1), 1);
    assert_eq!(tasks[1].sessions[0].id, "solo");
    // Turn 1's input is turn 0's text and reply and its own text: the prefix grows.
    let t0 = &main.turns[0];
    assert_eq!(
        tasks[0].input_tokens(0, 1),
        t0.input_tokens + t0.reply_tokens + main.turns[1].input_tokens
    );
}

#[test]
fn a_sample_keeps_whole_tasks() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(TREE.as_bytes()).unwrap();
    let tok = Tokenizer::cl100k_base();
    let one = load_agentic(f.path(), "t", Some(1), 16, 7, &tok).unwrap();
    assert_eq!(one.items.len(), 1);
    assert_eq!(one.report.records, 5);
    let task = one.items[0].agent.as_ref().unwrap();
    assert!(matches!(task.sessions.len(), 1 | 4));
    assert!(matches!(&one.items[0].prompt, ItemPrompt::Text(t) if !t.is_empty()));
}

#[test]
fn a_cycle_of_forks_is_refused_with_its_line() {
    let (line, why) = refused(
        "{\"id\": \"x\", \"turns\": [{\"text\": \"a\", \"fork\": [\"y\"]}]}\n\
         {\"id\": \"y\", \"turns\": [{\"text\": \"b\", \"fork\": [\"x\"]}]}\n",
    );
    assert_eq!(line, Some(1));
    assert!(why.contains("cycle of forks"), "{why}");
    let (_, why) = refused("{\"id\": \"x\", \"turns\": [{\"text\": \"a\", \"fork\": [\"x\"]}]}\n");
    assert!(why.contains("forks itself"), "{why}");
}

#[test]
fn a_join_that_could_wait_forever_is_refused() {
    // On an unknown id.
    let (line, why) = refused(
        "{\"id\": \"m\", \"turns\": [{\"text\": \"a\"}, {\"text\": \"b\", \"join\": [\"ghost\"]}]}\n",
    );
    assert_eq!(line, Some(1));
    assert!(
        why.contains("`ghost`, which no line of the file defines"),
        "{why}"
    );
    // On a session it did not fork (a sibling: the two could wait on each other).
    let (line, why) = refused(
        "{\"id\": \"m\", \"turns\": [{\"text\": \"a\", \"fork\": [\"p\", \"q\"]}]}\n\
         {\"id\": \"p\", \"turns\": [{\"text\": \"a\"}, {\"text\": \"b\", \"join\": [\"q\"]}]}\n\
         {\"id\": \"q\", \"turns\": [{\"text\": \"a\"}, {\"text\": \"b\", \"join\": [\"p\"]}]}\n",
    );
    assert_eq!(line, Some(2));
    assert!(why.contains("did not fork on an earlier turn"), "{why}");
    // On a subagent forked by the same turn (it starts only after this turn's reply).
    let (_, why) = refused(
        "{\"id\": \"m\", \"turns\": [{\"text\": \"a\", \"fork\": [\"p\"], \"join\": [\"p\"]}]}\n\
         {\"id\": \"p\", \"turns\": [{\"text\": \"a\"}]}\n",
    );
    assert!(why.contains("did not fork on an earlier turn"), "{why}");
    let (_, why) = refused(
        "{\"id\": \"m\", \"turns\": [{\"text\": \"a\", \"fork\": [\"p\"]}, {\"text\": \"b\", \"join\": [\"p\", \"p\"]}]}\n\
         {\"id\": \"p\", \"turns\": [{\"text\": \"a\"}]}\n",
    );
    assert!(why.contains("twice"), "{why}");
}

#[test]
fn unknown_forks_and_second_parents_are_refused() {
    let (line, why) = refused(
        "{\"id\": \"solo\", \"turns\": [{\"text\": \"a\"}]}\n\
         {\"id\": \"m\", \"turns\": [{\"text\": \"a\", \"fork\": [\"nobody\"]}]}\n",
    );
    assert_eq!(line, Some(2));
    assert!(why.contains("forks `nobody`, which no line"), "{why}");
    let (line, why) = refused(
        "{\"id\": \"m\", \"turns\": [{\"text\": \"a\", \"fork\": [\"p\"]}, {\"text\": \"b\", \"fork\": [\"p\"]}]}\n\
         {\"id\": \"p\", \"turns\": [{\"text\": \"a\"}]}\n",
    );
    assert_eq!(line, Some(1));
    assert!(why.contains("already forks"), "{why}");
}

#[test]
fn duplicate_ids_are_refused_naming_both_lines() {
    let (line, why) = refused(
        "{\"id\": \"m\", \"turns\": [{\"text\": \"a\"}]}\n\n{\"id\": \"m\", \"turns\": [{\"text\": \"b\"}]}\n",
    );
    assert_eq!(line, Some(3));
    assert!(why.contains("first on line 1"), "{why}");
}

#[test]
fn enormous_fan_out_depth_and_sizes_are_refused() {
    let many: Vec<String> = (0..65).map(|i| format!("\"s{i}\"")).collect();
    let (line, why) = refused(&format!(
        "{{\"id\": \"m\", \"turns\": [{{\"text\": \"a\", \"fork\": [{}]}}]}}\n",
        many.join(",")
    ));
    assert_eq!(line, Some(1));
    assert!(why.contains("at most 64"), "{why}");
    // 300 subagents over 5 turns of 60: more sessions than a task may have.
    let mut text = String::from("{\"id\": \"m\", \"turns\": [");
    let turns: Vec<String> = (0..5)
        .map(|t| {
            let ids: Vec<String> = (0..60).map(|i| format!("\"s{t}-{i}\"")).collect();
            format!("{{\"text\": \"a\", \"fork\": [{}]}}", ids.join(","))
        })
        .collect();
    text.push_str(&turns.join(","));
    text.push_str("]}\n");
    for t in 0..5 {
        for i in 0..60 {
            text.push_str(&format!(
                "{{\"id\": \"s{t}-{i}\", \"turns\": [{{\"text\": \"x\"}}]}}\n"
            ));
        }
    }
    let (line, why) = refused(&text);
    assert_eq!(line, Some(1));
    assert!(why.contains("more than 256 sessions"), "{why}");
    // A chain of ten subagents, each forking the next.
    let chain: String = (0..10)
        .map(|i| {
            format!(
                "{{\"id\": \"d{i}\", \"turns\": [{{\"text\": \"a\", \"fork\": [\"d{}\"]}}]}}\n",
                i + 1
            )
        })
        .chain(std::iter::once(
            "{\"id\": \"d10\", \"turns\": [{\"text\": \"a\"}]}\n".into(),
        ))
        .collect();
    let (line, why) = refused(&chain);
    assert_eq!(line, Some(10));
    assert!(why.contains("deep"), "{why}");
    let (_, why) = refused("{\"id\": \"m\", \"turns\": [{\"input_tokens\": 99999999}]}\n");
    assert!(why.contains("1 to 4194304 tokens"), "{why}");
    let (_, why) =
        refused("{\"id\": \"m\", \"turns\": [{\"text\": \"a\", \"output_tokens\": 0}]}\n");
    assert!(why.contains("1 to 4194304 tokens"), "{why}");
    let (_, why) = refused("{\"id\": \"m\", \"turns\": []}\n");
    assert!(why.contains("1 to 64"), "{why}");
    let (_, why) = refused(&format!(
        "{{\"id\": \"{}\", \"turns\": [{{\"text\": \"a\"}}]}}\n",
        "x".repeat(300)
    ));
    assert!(why.contains("1 to 256 bytes"), "{why}");
}

#[test]
fn a_huge_text_is_refused_at_its_line_without_reading_it_whole() {
    let mut text = String::from(
        "{\"id\": \"ok\", \"turns\": [{\"text\": \"a\"}]}\n{\"id\": \"big\", \"turns\": [{\"text\": \"",
    );
    text.push_str(&"w ".repeat((MAX_LINE_BYTES / 2) + 8));
    text.push_str("\"}]}\n");
    let (line, why) = refused(&text);
    assert_eq!(line, Some(2));
    assert!(why.contains("longer than the 16 MiB"), "{why}");
}

#[test]
fn garbage_and_misplaced_waits_are_refused_with_a_hint() {
    let (line, why) = refused("{\"id\": \"m\", \"turns\": [{\"text\": \"a\"}]}\nnot json\n");
    assert_eq!(line, Some(2));
    assert!(why.contains("Agentic traces"), "{why}");
    let (_, why) = refused("{\"id\": \"m\", \"turns\": [{\"txet\": \"a\"}]}\n");
    assert!(why.contains("unknown field `txet`"), "{why}");
    let (_, why) =
        refused("{\"id\": \"m\", \"turns\": [{\"text\": \"a\", \"input_tokens\": 3}]}\n");
    assert!(why.contains("not both"), "{why}");
    let (_, why) = refused("{\"id\": \"m\", \"turns\": [{\"text\": \"a\", \"wait_ms\": 5}]}\n");
    assert!(why.contains("drop its `wait_ms`"), "{why}");
    let (_, why) = refused(
        "{\"id\": \"m\", \"turns\": [{\"text\": \"a\"}, {\"text\": \"b\", \"wait_ms\": 4000000}]}\n",
    );
    assert!(why.contains("over the hour"), "{why}");
    assert!(matches!(
        load("\n\n"),
        Err(DatasetError::File { line: None, .. })
    ));
}
