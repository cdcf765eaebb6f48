//! Answers with a quality chosen by the settings (`answer-accuracy`, `repetition`): the
//! simulator works out the questions it can (`What is 17 + 25?`, `How many letters are in
//! the word "planet"?`, a lettered list asking for the largest number) and answers them
//! right, or off by one for a seeded share `1 − answer-accuracy`; a seeded share `repetition`
//! of answers degenerates into one phrase repeated to the token budget. The draw is keyed by
//! the question's text and the seed, so the same question gets the same answer in every run:
//! no reference travels with the request (docs/quality.md).

use serde_json::Value;

use crate::config::SimConfig;
use crate::wire::GenRequest;

/// What the simulator writes for one answer, token by token, after its reasoning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Script {
    pieces: Vec<Box<str>>,
    /// Repeated to the token budget (a degenerate answer), else written once.
    repeat: bool,
    /// The reasoning tokens before the answer.
    skip: u64,
}

impl Script {
    /// The piece emitted as token `index`, `None` where the filler words go (reasoning,
    /// and past the answer when `ignore_eos` holds it open).
    pub(crate) fn piece(&self, index: u64) -> Option<&str> {
        let i = usize::try_from(index.checked_sub(self.skip)?).ok()?;
        let n = self.pieces.len();
        match (self.repeat, i < n) {
            (_, true) => Some(&self.pieces[i]),
            (true, false) if n > 0 => Some(&self.pieces[i % n]),
            _ => None,
        }
    }

    /// Tokens the response has: reasoning, then the answer (to the budget when it repeats,
    /// or when `ignore_eos` asks for `drawn`).
    pub(crate) fn output_len(&self, drawn: u64, max_tokens: u64, ignore_eos: bool) -> u64 {
        if ignore_eos {
            return drawn;
        }
        if self.repeat {
            return max_tokens;
        }
        self.skip
            .saturating_add(self.pieces.len() as u64)
            .min(max_tokens)
    }
}

/// The answer to the request `body`'s question, when the simulator answers questions
/// (`answer-accuracy` set) and can work this one out; `reasoning` tokens come first. `model`
/// is the model the request names (`adapter-accuracy`).
pub(crate) fn answer(
    cfg: &SimConfig,
    (body, model): (&[u8], Option<&str>),
    reasoning: u64,
) -> Option<Script> {
    let accuracy = cfg.accuracy_of(model)?;
    let question = question(body)?;
    let solved = solve(&question)?;
    let degenerate = draw(cfg.seed, &question, 0x5eed_0001) < cfg.repetition;
    let right = draw(cfg.seed, &question, 0x5eed_0002) < accuracy;
    let pieces: Vec<Box<str>> = if degenerate {
        [" the", " answer", " is"].map(Box::from).to_vec()
    } else {
        let said = if right {
            solved.said()
        } else {
            solved.wrong().said()
        };
        [" The", " answer", " is", &said, "."]
            .map(Box::from)
            .to_vec()
    };
    Some(Script {
        pieces,
        repeat: degenerate,
        skip: reasoning,
    })
}

/// The answer worked out for the request's question (none for a request answered with a
/// tool call), and the output length it makes; `drawn` is the length drawn without it.
pub(crate) fn scripted(
    cfg: &SimConfig,
    (req, body): (&GenRequest, &[u8]),
    calls_tool: bool,
    (drawn, reasoning, max_tokens): (u64, u64, u64),
) -> (Option<Box<Script>>, u64) {
    // A judge's request (docs/quality.md, "LLM judge") gets its score, whatever the settings.
    let judged = super::judge::judge_pieces(body).map(|pieces| Script {
        pieces,
        repeat: false,
        skip: reasoning,
    });
    let script = judged
        .or_else(|| answer(cfg, (body, req.model.as_deref()), reasoning))
        .filter(|_| !calls_tool)
        .map(Box::new);
    let len = script
        .as_ref()
        .map_or(drawn, |s| s.output_len(drawn, max_tokens, req.ignore_eos));
    (script, len)
}

/// A uniform draw in [0, 1) fixed by the seed, the question and `salt`.
fn draw(seed: u64, question: &str, salt: u64) -> f64 {
    let mut h = 0xcbf2_9ce4_8422_2325_u64 ^ seed ^ salt.rotate_left(17);
    for b in question.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    // splitmix64's finaliser: the FNV hash's low bits alone are poorly mixed.
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// The text of the request's last user turn: chat's last `user` message (its text parts),
/// the completions `prompt`, the Responses `input`.
fn question(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    if let Some(ms) = v.get("messages").and_then(Value::as_array) {
        let last = ms
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
        return text_of(last.get("content")?);
    }
    if let Some(p) = v.get("prompt").and_then(Value::as_str) {
        return Some(p.to_string());
    }
    match v.get("input")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => items.iter().rev().find_map(|i| text_of(i.get("content")?)),
        _ => None,
    }
}

/// A message's content: a string, or its text parts joined.
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// A question's answer: a number, or the letter of one of `options` lettered choices.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Solved {
    Number(i64),
    Letter { index: u8, options: u8 },
}

impl Solved {
    /// Off by one: the next number, or the next option's letter.
    fn wrong(self) -> Solved {
        match self {
            Solved::Number(n) => Solved::Number(n.saturating_add(1)),
            Solved::Letter { index, options } => Solved::Letter {
                index: (index + 1) % options.max(1),
                options,
            },
        }
    }

    /// As the answer writes it, with its leading space.
    fn said(self) -> String {
        match self {
            Solved::Number(n) => format!(" {n}"),
            Solved::Letter { index, .. } => format!(" {}", char::from(b'A' + index)),
        }
    }
}

/// What the simulator can work out: `What is A op B?` (op `+`, `-`, `*`, `×`), `How many
/// letters are in the word "W"?`, or lettered options `A. 12` … with a question asking for
/// the largest.
fn solve(q: &str) -> Option<Solved> {
    if q.contains("largest") {
        return largest(q);
    }
    if let Some(at) = q.rfind("How many letters are in the word \"") {
        let rest = &q[at + "How many letters are in the word \"".len()..];
        let word = &rest[..rest.find('"')?];
        return Some(Solved::Number(word.chars().count() as i64));
    }
    let at = q.rfind("What is ")?;
    let rest = &q[at + "What is ".len()..];
    let expr = &rest[..rest.find('?')?];
    let mut parts = expr.split_whitespace();
    let (a, op, b) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let (a, b): (i64, i64) = (a.parse().ok()?, b.parse().ok()?);
    let n = match op {
        "+" | "plus" => a.checked_add(b)?,
        "-" | "minus" => a.checked_sub(b)?,
        "*" | "×" | "times" => a.checked_mul(b)?,
        _ => return None,
    };
    Some(Solved::Number(n))
}

/// The letter of the largest of the lettered options (`A. 12` lines).
fn largest(q: &str) -> Option<Solved> {
    let mut best: Option<(i64, u8)> = None;
    let mut options = 0u8;
    for line in q.lines() {
        let line = line.trim();
        let mut chars = line.chars();
        let (Some(letter), Some('.')) = (chars.next(), chars.next()) else {
            continue;
        };
        if !('A'..='J').contains(&letter) {
            continue;
        }
        let Ok(value) = chars.as_str().trim().parse::<i64>() else {
            continue;
        };
        let index = letter as u8 - b'A';
        options = options.max(index + 1);
        if best.is_none_or(|(v, _)| value > v) {
            best = Some((value, index));
        }
    }
    best.map(|(_, index)| Solved::Letter { index, options })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(accuracy: f64, repetition: f64) -> SimConfig {
        SimConfig {
            answer_accuracy: Some(accuracy),
            repetition,
            ..SimConfig::default()
        }
    }

    fn said(s: &Script) -> String {
        (0..20).filter_map(|i| s.piece(i)).collect()
    }

    fn chat(q: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "messages": [{"role": "user", "content": q}], "max_tokens": 64
        }))
        .unwrap()
    }

    #[test]
    fn works_out_what_it_can() {
        assert_eq!(solve("What is 17 + 25?"), Some(Solved::Number(42)));
        assert_eq!(
            solve("Q: What is 9 × 7? Answer with a number."),
            Some(Solved::Number(63))
        );
        assert_eq!(solve("What is 3 - 10?"), Some(Solved::Number(-7)));
        assert_eq!(
            solve("How many letters are in the word \"planet\"?"),
            Some(Solved::Number(6))
        );
        let choice = "Which is the largest?\nA. 12\nB. 31\nC. 7";
        assert_eq!(
            solve(choice),
            Some(Solved::Letter {
                index: 1,
                options: 3
            })
        );
        assert_eq!(solve("Tell me a story."), None);
        assert_eq!(solve("What is love?"), None);
    }

    #[test]
    fn right_wrong_and_degenerate_answers_by_the_settings() {
        let body = chat("What is 17 + 25?");
        let right = answer(&cfg(1.0, 0.0), (&body, None), 0).unwrap();
        assert_eq!(said(&right), " The answer is 42.");
        assert_eq!(right.output_len(10, 64, false), 5);
        let wrong = answer(&cfg(0.0, 0.0), (&body, None), 0).unwrap();
        assert_eq!(said(&wrong), " The answer is 43.");
        let looped = answer(&cfg(1.0, 1.0), (&body, None), 0).unwrap();
        assert!(said(&looped).starts_with(" the answer is the answer is"));
        assert_eq!(looped.output_len(10, 64, false), 64);
        assert!(
            answer(&SimConfig::default(), (&body, None), 0).is_none(),
            "off by default"
        );
        let reasoned = answer(&cfg(1.0, 0.0), (&body, None), 3).unwrap();
        assert_eq!(reasoned.piece(2), None);
        assert_eq!(reasoned.piece(3), Some(" The"));
        assert_eq!(reasoned.output_len(10, 64, false), 8);
    }

    #[test]
    fn the_wrong_share_follows_the_accuracy_and_the_seed() {
        let c = cfg(0.7, 0.0);
        let wrong = (0..2000)
            .filter(|i| {
                let s = answer(&c, (&chat(&format!("What is {i} + 1?")), None), 0).unwrap();
                said(&s) != format!(" The answer is {}.", i + 1)
            })
            .count();
        assert!((500..700).contains(&wrong), "{wrong}");
        let body = chat("What is 5 + 5?");
        let a = answer(&c, (&body, None), 0);
        assert_eq!(a, answer(&c, (&body, None), 0), "deterministic");
        // A model of its own accuracy: every answer of `worse` wrong.
        let split = SimConfig {
            adapter_accuracy: [("worse".to_string(), 0.0)].into(),
            ..cfg(1.0, 0.0)
        };
        let right = answer(&split, (&body, Some("base")), 0).unwrap();
        let wrong = answer(&split, (&body, Some("worse")), 0).unwrap();
        assert_eq!(
            (said(&right), said(&wrong)),
            (" The answer is 10.".into(), " The answer is 11.".into())
        );
    }
}
