//! The user's own prompts: one JSON object a line with `prompt` (a string) or `messages` (chat
//! messages), an optional output length (`max_tokens`, `max_completion_tokens` or
//! `output_tokens`), and any other keys passed through into the request body. The keys of tool
//! calling and structured output (`tools`, `tool_choice`, `response_format`) are checked for
//! their shape and size here, so a bad line is named at load time rather than answered with a
//! 400 for every request that uses it.

use std::collections::{BTreeMap, BinaryHeap};
use std::path::Path;

use serde_json::Value;

use super::item_images::{ImageLineError, item_images};
use super::sharegpt::Loaded;
use super::source::{HashingReader, Records, file_error, io_error, sample_key};
use super::{ChatMessage, DataItem, ItemPrompt, LoadReport};
use super::{DatasetError, Tokenizer};
use crate::protocol::Api;

const OUTPUT_KEYS: &[&str] = &["max_tokens", "max_completion_tokens", "output_tokens"];

/// The most bytes one line's `tools`, `tool_choice` or `response_format` may take as JSON:
/// a large tool set (BFCL's biggest) is tens of kilobytes; more is a mistake, and would be
/// sent with every request that uses the line.
pub const MAX_TOOL_FIELD_BYTES: usize = 256 << 10;

/// Loads a JSONL prompt file; with `count`, a seeded sample of that many lines, else every
/// line in file order.
pub fn load_jsonl(
    path: &Path,
    shown_path: &str,
    count: Option<u64>,
    default_output: u32,
    seed: u64,
    tokenizer: &Tokenizer,
    api: Api,
) -> Result<Loaded, DatasetError> {
    let mut reader = HashingReader::open(path)?;
    let mut records = 0u64;
    let mut kept: BinaryHeap<(u64, u64)> = BinaryHeap::new();
    let mut items: BTreeMap<u64, DataItem> = BTreeMap::new();
    let mut lines = Records::new(&mut reader, path);
    while let Some((number, line)) = lines.next_record()? {
        let ordinal = records;
        records += 1;
        let dir = path.parent().unwrap_or(Path::new("."));
        let item = parse_line(line, default_output, tokenizer, api, dir)
            .map_err(|reason| file_error(path, Some(number), reason.to_string()))?;
        let key = match count {
            Some(_) => sample_key(seed, ordinal),
            None => ordinal,
        };
        kept.push((key, ordinal));
        items.insert(ordinal, item?);
        if let Some(c) = count
            && kept.len() as u64 > c
            && let Some((_, drop)) = kept.pop()
        {
            items.remove(&drop);
        }
    }
    if records == 0 {
        return Err(file_error(path, None, "no prompt in the file"));
    }
    let sha256 = reader.finish().map_err(|e| io_error(path, e))?;
    let items = kept
        .into_sorted_vec()
        .into_iter()
        .filter_map(|(_, ordinal)| items.remove(&ordinal))
        .collect();
    Ok(Loaded {
        items,
        report: LoadReport {
            path: shown_path.to_string(),
            sha256,
            records,
            skipped: BTreeMap::new(),
        },
    })
}

/// Why a line of a JSONL prompt file is not a prompt.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("expected a JSON object such as {{\"prompt\": \"…\"}}")]
    NotAnObject,
    #[error("messages[{0}] needs string `role` and `content`")]
    BadMessage(usize),
    #[error("`messages` is empty")]
    NoMessages,
    // The completions API takes one string: sending only the last message would drop the
    // others silently while the plan counted them.
    #[error(
        "`messages` ({count} messages) needs the {chat} API, and the target has api \"{api}\", \
         which sends one prompt string; set api \"{chat}\" in the target, or give this line a \
         `prompt` string",
        chat = Api::conversational()
    )]
    NeedsConversation { count: usize, api: Api },
    #[error("give `prompt` or `messages`, not both")]
    Both,
    #[error("`prompt` must be a string")]
    PromptNotText,
    #[error("`messages` must be a list")]
    MessagesNotList,
    #[error("needs `prompt` (a string) or `messages` (a list)")]
    NoPrompt,
    #[error("`{0}` must be a whole number ≥ 1")]
    BadOutput(&'static str),
    #[error(transparent)]
    Images(#[from] ImageLineError),
    #[error("`images` needs the {chat} API (content parts), and the target has api \"{api}\"", chat = Api::conversational())]
    ImagesNeedChat { api: Api },
    #[error("`{field}` must be {expected}")]
    BadToolField {
        field: &'static str,
        expected: &'static str,
    },
    #[error("`reference` must be a string or a list of strings (the acceptable answers)")]
    BadReference,
    #[error("`reference_tokens` must be a whole number ≥ 1")]
    BadReferenceTokens,
    #[error("`choices` must be a list of 2 to 10 strings (the options A to J)")]
    BadChoices,
    #[error("`choices` needs a `prompt` string to add its options to")]
    ChoicesNeedPrompt,
    #[error("`{field}` takes {bytes} bytes as JSON, more than the {max} allowed")]
    ToolFieldTooLarge {
        field: &'static str,
        bytes: usize,
        max: usize,
    },
}

/// A line's item; the outer error is the line's fault, the inner one the tokenizer's.
fn parse_line(
    line: &str,
    default_output: u32,
    tokenizer: &Tokenizer,
    api: Api,
    dir: &Path,
) -> Result<Result<DataItem, DatasetError>, LineError> {
    let value: Value = serde_json::from_str(line).map_err(LineError::NotJson)?;
    let Value::Object(mut obj) = value else {
        return Err(LineError::NotAnObject);
    };
    let reference = reference(&mut obj)?;
    let prompt = match (obj.remove("prompt"), obj.remove("messages")) {
        (Some(Value::String(p)), None) => ItemPrompt::Text(p),
        (None, Some(Value::Array(ms))) => ItemPrompt::Messages(messages(ms, api)?),
        (Some(_), Some(_)) => return Err(LineError::Both),
        (Some(_), None) => return Err(LineError::PromptNotText),
        (None, Some(_)) => return Err(LineError::MessagesNotList),
        (None, None) => return Err(LineError::NoPrompt),
    };
    let prompt = with_choices(prompt, obj.remove("choices"))?;
    let mut output = None;
    for key in OUTPUT_KEYS {
        if let Some(v) = obj.remove(*key) {
            match v.as_u64() {
                Some(n) if n >= 1 && n <= u64::from(u32::MAX) => output = Some(n as u32),
                _ => return Err(LineError::BadOutput(key)),
            }
        }
    }
    tool_fields(&obj)?;
    let images = match obj.remove("images") {
        Some(_) if !api.kind().conversation() => return Err(LineError::ImagesNeedChat { api }),
        Some(v) => item_images(v, dir)?,
        None => Vec::new(),
    };
    let input = match &prompt {
        ItemPrompt::Text(t) => tokenizer.try_count(t),
        ItemPrompt::Messages(ms) => ms
            .iter()
            .map(|m| tokenizer.try_count(&m.content))
            .sum::<Result<usize, _>>(),
    };
    Ok(input.map(|input| DataItem {
        turns: Vec::new(),
        prompt,
        input_tokens: input.min(u32::MAX as usize) as u32,
        output_tokens: output.unwrap_or(default_output),
        extra: obj.into_iter().collect(),
        images,
        agent: None,
        reference,
    }))
}

/// The line's `reference` (a string, or a list of acceptable strings) and
/// `reference_tokens`, taken out of the keys sent: the server never sees them.
fn reference(
    obj: &mut serde_json::Map<String, Value>,
) -> Result<Option<Box<super::Reference>>, LineError> {
    let answers = match obj.remove("reference") {
        None => Vec::new(),
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(xs)) if !xs.is_empty() => xs
            .into_iter()
            .map(|x| match x {
                Value::String(s) => Ok(s),
                _ => Err(LineError::BadReference),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(LineError::BadReference),
    };
    let tokens = match obj.remove("reference_tokens") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 && n <= u64::from(u32::MAX) => Some(n as u32),
            _ => return Err(LineError::BadReferenceTokens),
        },
    };
    Ok((!answers.is_empty() || tokens.is_some())
        .then(|| Box::new(super::Reference { answers, tokens })))
}

/// A multiple-choice line's `choices` (2 to 10 strings) written under its prompt as lettered
/// options, `A. …` to `J. …`, so the prompt counted and sent is the one the model reads.
fn with_choices(prompt: ItemPrompt, choices: Option<Value>) -> Result<ItemPrompt, LineError> {
    let Some(choices) = choices else {
        return Ok(prompt);
    };
    let ItemPrompt::Text(mut text) = prompt else {
        return Err(LineError::ChoicesNeedPrompt);
    };
    let options: Vec<String> = match choices {
        Value::Array(xs) if (2..=10).contains(&xs.len()) => xs
            .into_iter()
            .map(|x| match x {
                Value::String(s) => Ok(s),
                _ => Err(LineError::BadChoices),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(LineError::BadChoices),
    };
    for (letter, option) in ('A'..='J').zip(options) {
        text.push_str(&format!("\n{letter}. {option}"));
    }
    Ok(ItemPrompt::Text(text))
}

/// `tools` (a list of tools, each an object with a `type`, a function tool with a
/// `function.name`), `tool_choice` (a string or an object) and `response_format` (an object
/// with a `type`), each within [`MAX_TOOL_FIELD_BYTES`].
fn tool_fields(obj: &serde_json::Map<String, Value>) -> Result<(), LineError> {
    let checks: [ToolCheck; 3] = [
        (
            "tools",
            "a list of tool objects, each with a string `type` (and for \"function\" a              `function` object with a string `name`)",
            |v| v.as_array().is_some_and(|ts| ts.iter().all(tool_ok)),
        ),
        (
            "tool_choice",
            "a string (\"auto\", \"none\", \"required\") or an object",
            |v| v.is_string() || v.is_object(),
        ),
        (
            "response_format",
            "an object with a string `type` (\"json_schema\", \"json_object\", \"text\")",
            |v| v.get("type").is_some_and(Value::is_string),
        ),
    ];
    for (field, expected, ok) in checks {
        let Some(v) = obj.get(field) else { continue };
        if !ok(v) {
            return Err(LineError::BadToolField { field, expected });
        }
        let bytes = serde_json::to_vec(v).map_or(usize::MAX, |b| b.len());
        if bytes > MAX_TOOL_FIELD_BYTES {
            return Err(LineError::ToolFieldTooLarge {
                field,
                bytes,
                max: MAX_TOOL_FIELD_BYTES,
            });
        }
    }
    Ok(())
}

/// A checked field: its key, what it must be, and the check.
type ToolCheck = (&'static str, &'static str, fn(&Value) -> bool);

fn tool_ok(t: &Value) -> bool {
    match t.get("type").and_then(Value::as_str) {
        Some("function") => t
            .get("function")
            .and_then(|f| f.get("name"))
            .is_some_and(Value::is_string),
        Some(_) => true,
        None => false,
    }
}

/// A line's `messages`: each with string `role` and `content`, several only where the API
/// carries a conversation.
fn messages(ms: Vec<Value>, api: Api) -> Result<Vec<ChatMessage>, LineError> {
    let mut out = Vec::with_capacity(ms.len());
    for (i, m) in ms.into_iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str);
        let content = m.get("content").and_then(Value::as_str);
        match (role, content) {
            (Some(r), Some(c)) => out.push(ChatMessage {
                role: r.to_string(),
                content: c.to_string(),
                tool: None,
            }),
            _ => return Err(LineError::BadMessage(i)),
        }
    }
    if out.is_empty() {
        return Err(LineError::NoMessages);
    }
    if !api.kind().conversation() && out.len() > 1 {
        return Err(LineError::NeedsConversation {
            count: out.len(),
            api,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(line: &str) -> Result<DataItem, LineError> {
        let t = Tokenizer::cl100k_base();
        parse_line(line, 16, &t, Api::conversational(), Path::new("."))
            .map(|r| r.expect("the tokenizer counts"))
    }

    #[test]
    fn a_reference_is_kept_and_never_sent() {
        let it = item(r#"{"prompt": "2+2?", "reference": "4", "reference_tokens": 3}"#).unwrap();
        let r = it.reference.as_deref().unwrap();
        assert_eq!(
            (r.answers.as_slice(), r.tokens),
            (&["4".to_string()][..], Some(3))
        );
        assert!(it.extra.is_empty(), "{:?}", it.extra);
        let it = item(r#"{"prompt": "x", "reference": ["Paris", "paris, France"]}"#).unwrap();
        assert_eq!(it.reference.unwrap().answers.len(), 2);
        assert!(item(r#"{"prompt": "x"}"#).unwrap().reference.is_none());
        for bad in [
            r#"{"prompt": "x", "reference": 4}"#,
            r#"{"prompt": "x", "reference": []}"#,
            r#"{"prompt": "x", "reference": ["a", 1]}"#,
            r#"{"prompt": "x", "reference": {"a": 1}}"#,
        ] {
            assert!(matches!(item(bad), Err(LineError::BadReference)), "{bad}");
        }
        let bad = r#"{"prompt": "x", "reference_tokens": 0}"#;
        assert!(matches!(item(bad), Err(LineError::BadReferenceTokens)));
    }

    #[test]
    fn choices_are_written_under_the_prompt_as_lettered_options() {
        let it =
            item(r#"{"prompt": "Largest?", "choices": ["12", "31"], "reference": "B"}"#).unwrap();
        assert_eq!(it.prompt, ItemPrompt::Text("Largest?\nA. 12\nB. 31".into()));
        assert!(it.extra.is_empty());
        for bad in [
            r#"{"prompt": "x", "choices": ["only one"]}"#,
            r#"{"prompt": "x", "choices": "A"}"#,
            r#"{"prompt": "x", "choices": [1, 2]}"#,
        ] {
            assert!(matches!(item(bad), Err(LineError::BadChoices)), "{bad}");
        }
        let msgs = r#"{"messages": [{"role": "user", "content": "x"}], "choices": ["a", "b"]}"#;
        assert!(matches!(item(msgs), Err(LineError::ChoicesNeedPrompt)));
    }
}
