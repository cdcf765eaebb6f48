use super::*;

fn row(stage: &str, index: u64, text: &str, correct: Option<bool>) -> AnswerRow {
    AnswerRow::new(stage, (index, 0, index), text, correct)
}

fn rules(similarity: &dyn Fn(&str, &str) -> f64) -> PairingRules<'_> {
    PairingRules {
        confidence: 0.95,
        tolerance: 0.05,
        similarity,
    }
}

fn same_words(a: &str, b: &str) -> f64 {
    if a == b { 1.0 } else { 0.5 }
}

#[test]
fn a_row_is_bounded_and_masked_and_hashes_the_whole_answer() {
    let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    let long = format!("<script>x</script> {secret} {}", "é".repeat(1_000_000));
    let r = row("qa", 3, &long, Some(true));
    assert!(r.text.len() <= KEPT_ANSWER_BYTES, "{}", r.text.len());
    assert!(r.clipped);
    assert_eq!(r.bytes, long.len() as u64);
    assert!(!r.text.contains(secret), "{}", &r.text[..80]);
    // A different answer past the kept bytes is still a different answer.
    let other = row("qa", 3, &format!("{long}!"), Some(true));
    assert_ne!(r.hash, other.hash);
    assert_eq!(r.text, other.text);
    // A secret cut by the bound is masked too.
    let cut = format!("{} {secret}", "a".repeat(KEPT_ANSWER_BYTES - 12));
    let r = row("qa", 1, &cut, None);
    assert!(
        !r.text.contains("sk-proj-ab"),
        "{}",
        &r.text[r.text.len() - 20..]
    );
    let line = serde_json::to_string(&r).unwrap();
    assert!(!line.contains('\n'));
}

#[test]
fn identical_runs_agree_wholly() {
    // Enough prompts that the paired interval (its ends come from two asymmetric Wilson
    // intervals, so it is not empty even for identical marks) fits in the tolerance.
    let base: Vec<_> = (0..200)
        .map(|i| row("qa", i, &format!("a{i}"), Some(i % 5 != 0)))
        .collect();
    let Agreement::Paired { stages } = agreement(&base, &base, &rules(&same_words)) else {
        panic!("unpaired");
    };
    let s = &stages[0];
    assert_eq!((s.paired, s.identical), (200, 200));
    assert_eq!(s.identical_share, 1.0);
    assert!(s.identical_low > 0.98 && s.identical_high == 1.0);
    assert_eq!(s.similarity, 1.0);
    let a = s.accuracy.as_ref().unwrap();
    assert_eq!((a.lost, a.gained, a.change, a.p_value), (0, 0, 0.0, 1.0));
    assert_eq!(a.verdict, "same");
}

#[test]
fn a_lossy_run_drifts_and_regresses() {
    let base: Vec<_> = (0..200)
        .map(|i| row("qa", i, &format!("a{i}"), Some(true)))
        .collect();
    let cur: Vec<_> = (0..200)
        .map(|i| {
            let wrong = i % 4 == 0;
            let text = if wrong {
                format!("b{i}")
            } else {
                format!("a{i}")
            };
            row("qa", i, &text, Some(!wrong))
        })
        .collect();
    let Agreement::Paired { stages } = agreement(&base, &cur, &rules(&same_words)) else {
        panic!("unpaired");
    };
    let s = &stages[0];
    assert_eq!(s.identical, 150);
    assert!((s.similarity - (150.0 + 25.0) / 200.0).abs() < 1e-12);
    let a = s.accuracy.as_ref().unwrap();
    assert_eq!((a.lost, a.gained), (50, 0));
    assert!(a.high < -a.tolerance && a.p_value < 1e-10, "{a:?}");
    assert_eq!(a.verdict, "worse");
}

#[test]
fn other_prompts_are_not_paired() {
    let base = vec![row("qa", 0, "x", None)];
    let moved = vec![AnswerRow::new("qa", (0, 0, 7), "x", None)];
    assert!(matches!(
        agreement(&base, &moved, &rules(&same_words)),
        Agreement::Unpaired { reason } if reason.contains("record 0 in the baseline and 7")
    ));
    let elsewhere = vec![row("other", 0, "x", None)];
    assert!(matches!(
        agreement(&base, &elsewhere, &rules(&same_words)),
        Agreement::Unpaired { .. }
    ));
    // Unscored prompts pair for identity, not for accuracy.
    let Agreement::Paired { stages } = agreement(&base, &base, &rules(&same_words)) else {
        panic!("unpaired");
    };
    assert_eq!(stages[0].accuracy, None);
}

#[test]
fn rows_read_back_and_a_long_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("answers.jsonl");
    assert!(read_answers(&path).unwrap().is_none());
    let rows = vec![
        row("qa", 0, "x\n\"y\"", Some(false)),
        row("qa", 1, "z", None),
    ];
    let text: String = rows
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    assert_eq!(read_answers(&path).unwrap().unwrap(), rows);
    std::fs::write(&path, "x".repeat(MAX_ROW_BYTES as usize + 10)).unwrap();
    assert!(matches!(
        read_answers(&path),
        Err(AnswersError::TooLong { line: 1, .. })
    ));
}

#[test]
fn a_baseline_index_marks_an_answer_to_the_same_prompt_only() {
    let base = vec![
        row("qa", 0, "The answer is 42.", Some(true)),
        row("qa", 1, "The answer is 7.", Some(true)),
        // A second round's answer to the same key: the first is kept.
        AnswerRow::new("qa", (1, 0, 1), "something else", None),
    ];
    let index = AnswerIndex::new(base);
    let hash = |t: &str| answer_hash(t);
    assert_eq!(
        index.agrees("qa", (0, 0, 0), &hash("The answer is 42.")),
        Some(true)
    );
    assert_eq!(
        index.agrees("qa", (1, 0, 1), &hash("The answer is 8.")),
        Some(false)
    );
    assert_eq!(
        index.agrees("qa", (1, 0, 1), &hash("The answer is 7.")),
        Some(true)
    );
    // Another record under the same key is another prompt; an unknown key is unpaired.
    assert_eq!(
        index.agrees("qa", (0, 0, 5), &hash("The answer is 42.")),
        None
    );
    assert_eq!(index.agrees("qa", (9, 0, 9), &hash("x")), None);
    assert_eq!(index.agrees("other", (0, 0, 0), &hash("x")), None);
}
