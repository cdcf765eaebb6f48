//! The scorers of a data set's `quality { score … }`: each judges one answer's text against
//! its record's reference answers (docs/quality.md says what each measures and where it
//! fails). Pure functions of text, run once per answer after its stream ended, never per
//! chunk; every one is linear in the answer's length or bounded (ROUGE-L's table).

use std::sync::LazyLock;

use regex::Regex;

/// Lower-cased, runs of whitespace made one space, punctuation and whitespace trimmed from
/// both ends: `"  Paris. "` and `"paris"` are the same answer.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out.trim_matches(|c: char| c.is_whitespace() || is_punct(c))
        .to_string()
}

fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation() || matches!(c, '。' | '、' | '«' | '»' | '“' | '”' | '‘' | '’' | '…')
}

/// Normalised exact match with any reference.
pub fn exact(answer: &str, references: &[String]) -> bool {
    let a = normalise(answer);
    references.iter().any(|r| normalise(r) == a)
}

/// The normalised answer holds a normalised reference (an empty reference matches nothing).
pub fn contains(answer: &str, references: &[String]) -> bool {
    let a = normalise(answer);
    references.iter().any(|r| {
        let r = normalise(r);
        !r.is_empty() && a.contains(&r)
    })
}

/// `pattern` matches the answer; with a capture group and references, the group's text must
/// also equal one of them (normalised).
pub fn regex(pattern: &Regex, answer: &str, references: &[String]) -> bool {
    let Some(caps) = pattern.captures(answer) else {
        return false;
    };
    match (caps.get(1), references.is_empty()) {
        (Some(group), false) => exact(group.as_str(), references),
        _ => true,
    }
}

static NUMBER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?").ok());

/// The last number in `text`, GSM8K style: thousands' commas dropped, a minus sign kept
/// (`"1,234"` → 1234, `"-3.5"` → -3.5); `None` when it holds none.
pub fn last_number(text: &str) -> Option<f64> {
    let re = NUMBER.as_ref()?;
    let m = re.find_iter(text).last()?;
    let s: String = m
        .as_str()
        .chars()
        .filter(|c| *c != ',')
        .map(|c| if c == '−' { '-' } else { c })
        .collect();
    s.parse().ok()
}

/// The answer's last number is within `absolute` of a reference's number, or within
/// `relative` of its size (either suffices; both 0: equal).
pub fn number(answer: &str, references: &[String], absolute: f64, relative: f64) -> bool {
    let Some(a) = last_number(answer) else {
        return false;
    };
    references.iter().filter_map(|r| last_number(r)).any(|r| {
        let d = (a - r).abs();
        d <= absolute || d <= relative * r.abs() || d == 0.0
    })
}

static CHOICE_SAID: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\banswer\s*(?:is|:)?\s*(?:option\s*)?[\(\[]?([A-J])[\)\]]?(?:[^A-Za-z0-9]|$)")
        .ok()
});
static CHOICE_PAREN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[\(\[]([A-J])[\)\]]").ok());
static CHOICE_ALONE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?:^|[^A-Za-z0-9'])([A-J])(?:[^A-Za-z0-9']|$)").ok());

/// The letter (A–J) a multiple-choice answer picks: after "answer is" / "Answer:" (the last
/// such), else the last in parentheses, else the last capital letter standing alone (`"B"`,
/// `"B."`). `None` when it names none.
pub fn choice_letter(answer: &str) -> Option<char> {
    let last = |re: &LazyLock<Option<Regex>>| {
        re.as_ref()?
            .captures_iter(answer)
            .last()
            .and_then(|c| c.get(1))
            .and_then(|m| m.as_str().chars().next())
    };
    last(&CHOICE_SAID)
        .map(|c| c.to_ascii_uppercase())
        .or_else(|| last(&CHOICE_PAREN))
        .or_else(|| last(&CHOICE_ALONE))
}

/// The answer picks the reference's letter.
pub fn choice(answer: &str, references: &[String]) -> bool {
    let Some(picked) = choice_letter(answer) else {
        return false;
    };
    references
        .iter()
        .any(|r| choice_letter(r.trim()).is_some_and(|c| c == picked))
}

/// What top-level JSON value a `json` scorer asks for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum JsonTop {
    Object,
    Array,
    Any,
}

/// The answer (trimmed, a Markdown code fence around it removed) parses as JSON whose top
/// level is `top`.
pub fn json(answer: &str, top: JsonTop) -> bool {
    let t = answer.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|r| r.strip_suffix("```"))
        .unwrap_or(t);
    match serde_json::from_str::<serde_json::Value>(t.trim()) {
        Ok(v) => match top {
            JsonTop::Object => v.is_object(),
            JsonTop::Array => v.is_array(),
            JsonTop::Any => true,
        },
        Err(_) => false,
    }
}

/// The most whitespace tokens of an answer and of a reference ROUGE-L compares: its table
/// is their product, so a long answer costs at most this squared.
pub const ROUGE_MAX_TOKENS: usize = 2048;

/// ROUGE-L's F1 of the answer against its best reference: the longest common subsequence of
/// lower-cased whitespace tokens, over their lengths.
pub fn rouge_l(answer: &str, references: &[String]) -> f64 {
    let tokens = |t: &str| -> Vec<String> {
        t.split_whitespace()
            .take(ROUGE_MAX_TOKENS)
            .map(|w| w.to_lowercase())
            .collect()
    };
    let a = tokens(answer);
    references
        .iter()
        .map(|r| {
            let r = tokens(r);
            let l = lcs(&a, &r) as f64;
            if l == 0.0 {
                return 0.0;
            }
            let (p, q) = (l / a.len() as f64, l / r.len() as f64);
            2.0 * p * q / (p + q)
        })
        .fold(0.0, f64::max)
}

/// The longest common subsequence's length, in one row of memory.
fn lcs(a: &[String], b: &[String]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diag = 0;
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn exact_ignores_case_spacing_and_end_punctuation() {
        assert!(exact("  Paris. ", &refs(&["paris"])));
        assert!(exact("New   York!", &refs(&["new york"])));
        assert!(exact("ÉCOLE", &refs(&["école"])));
        assert!(!exact("Paris, France", &refs(&["Paris"])));
        assert!(exact("", &refs(&[""])));
        assert!(!exact("", &refs(&["x"])));
        assert!(exact("b", &refs(&["a", "B"])), "any reference");
    }

    #[test]
    fn contains_finds_the_reference_inside() {
        assert!(contains("The capital is Paris.", &refs(&["paris"])));
        assert!(!contains("The capital is Lyon.", &refs(&["paris"])));
        assert!(
            !contains("anything", &refs(&[""])),
            "an empty reference matches nothing"
        );
    }

    #[test]
    fn numbers_are_the_last_one_commas_dropped() {
        assert_eq!(last_number("costs 1,234 dollars"), Some(1234.0));
        assert_eq!(last_number("it is -3.5"), Some(-3.5));
        assert_eq!(last_number("first 3 then 42."), Some(42.0));
        assert_eq!(last_number("#### 72"), Some(72.0));
        assert_eq!(last_number("1,2 and 3"), Some(3.0));
        assert_eq!(last_number("no number"), None);
        assert_eq!(last_number(""), None);
        assert_eq!(last_number("−7"), Some(-7.0), "a unicode minus");
        assert!(number("The answer is 42.", &refs(&["42"]), 0.0, 0.0));
        assert!(!number("The answer is 43.", &refs(&["42"]), 0.0, 0.0));
        assert!(number("3.14", &refs(&["3.1416"]), 0.01, 0.0));
        assert!(number("1,010", &refs(&["1000"]), 0.0, 0.01));
        assert!(!number("1,020", &refs(&["1000"]), 0.0, 0.01));
        assert!(!number("none", &refs(&["1"]), 1.0, 1.0));
    }

    #[test]
    fn choice_letters_in_their_usual_forms() {
        for (answer, letter) in [
            ("B", Some('B')),
            ("(B)", Some('B')),
            ("Answer: B", Some('B')),
            ("the answer is B.", Some('B')),
            ("A good guess: the answer is (C)", Some('C')),
            ("I pick D", Some('D')),
            ("answer is j", Some('J')),
            ("None of them", None),
            ("", None),
            ("K", None),
        ] {
            assert_eq!(choice_letter(answer), letter, "{answer:?}");
        }
        assert!(choice("The answer is (C).", &refs(&["C"])));
        assert!(!choice("The answer is (C).", &refs(&["B"])));
    }

    #[test]
    fn regex_with_and_without_a_group() {
        let any = Regex::new(r"^\d+$").unwrap();
        assert!(regex(&any, "123", &[]));
        assert!(!regex(&any, "12a", &[]));
        let group = Regex::new(r"ANSWER: (\w+)").unwrap();
        assert!(regex(&group, "so ANSWER: Paris", &refs(&["paris"])));
        assert!(!regex(&group, "so ANSWER: Lyon", &refs(&["paris"])));
    }

    #[test]
    fn json_checks_the_top_level() {
        assert!(json(r#"{"a": 1}"#, JsonTop::Object));
        assert!(json("```json\n{\"a\": 1}\n```", JsonTop::Object));
        assert!(!json("[1]", JsonTop::Object));
        assert!(json("[1]", JsonTop::Array));
        assert!(json("3", JsonTop::Any));
        assert!(!json("{oops", JsonTop::Any));
        assert!(!json("", JsonTop::Any));
    }

    #[test]
    fn rouge_l_is_f1_of_the_common_subsequence() {
        let r = refs(&["the cat sat on the mat"]);
        assert!((rouge_l("the cat sat on the mat", &r) - 1.0).abs() < 1e-12);
        // LCS "the cat the mat" = 4 of 6 and 4 of 5.
        let f = rouge_l("the cat was the mat", &r);
        let (p, q) = (4.0 / 5.0, 4.0 / 6.0);
        assert!((f - 2.0 * p * q / (p + q)).abs() < 1e-12);
        assert_eq!(rouge_l("", &r), 0.0);
        assert_eq!(rouge_l("日本 語", &refs(&["日本 語"])), 1.0);
    }
}
