//! Recipes: benchmark question sets on the Hub turned into the JSONL a scored data set reads
//! (docs/quality.md, "Benchmark question sets"): each source row's question becomes a
//! `prompt`, its answer a `reference` in the form the recipe's scorer compares.
//!
//! - `gsm8k`: `openai/gsm8k`'s test split; the reference is the number after the answer's
//!   `####` (thousands separators dropped), scored with `score "number"`.
//! - `mmlu`: `cais/mmlu`'s test split (every subject); the row's `choices` kept as the
//!   record's `choices` (the loader writes them under the prompt as `A. …` lines) and its
//!   `answer` index as the letter, scored with `score "choice"`.
//!
//! A source is the Hub's Parquet file (read with the `parquet` feature) or a JSONL copy with
//! the same fields, one object a line. Rows are read and written one at a time, so memory
//! stays flat; a row without the fields the recipe needs is skipped and counted, and the
//! output is written to a temporary file renamed at the end, so a failed conversion leaves
//! no half file. The text is the source's: it is JSON-escaped in the output and never shown.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{HfFile, HubError};

/// The longest JSONL line read from a source copy (a question is a few kilobytes).
const MAX_LINE: u64 = 1 << 20;

/// The built-in recipes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    Gsm8k,
    Mmlu,
}

/// What the conversion wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub path: PathBuf,
    pub records: u64,
    /// Source rows without what the recipe needs (no question, no answer after `####`, an
    /// answer index outside the choices).
    pub skipped: u64,
}

/// Why a source could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    #[error("failed to {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a Parquet file this build reads: {message}", path.display())]
    Parquet { path: PathBuf, message: String },
    #[error("{}: Parquet sources need the `parquet` feature, which this build lacks; convert a JSONL copy", path.display())]
    NoParquet { path: PathBuf },
    #[error("{}:{line}: {reason}", path.display())]
    Line {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    #[error("{}: no row has what the {recipe} recipe needs ({needs}); is it the right file?", path.display())]
    Empty {
        path: PathBuf,
        recipe: &'static str,
        needs: &'static str,
    },
}

impl Recipe {
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Gsm8k => "gsm8k",
            Recipe::Mmlu => "mmlu",
        }
    }

    /// The recipe whose output `path` is named as (`gsm8k.jsonl`, `mmlu.jsonl`).
    pub fn writing(path: &Path) -> Option<Recipe> {
        let name = path.file_name()?.to_str()?;
        [Recipe::Gsm8k, Recipe::Mmlu]
            .into_iter()
            .find(|r| name == format!("{}.jsonl", r.name()))
    }

    /// The Hub file the recipe converts, at `revision`.
    pub fn file(self, revision: &str) -> Result<HfFile, HubError> {
        let (repo, path) = match self {
            Recipe::Gsm8k => ("openai/gsm8k", "main/test-00000-of-00001.parquet"),
            Recipe::Mmlu => ("cais/mmlu", "all/test-00000-of-00001.parquet"),
        };
        HfFile::new(repo, path, Some(revision))
    }

    /// The scorer its references are written for.
    pub fn scorer(self) -> &'static str {
        match self {
            Recipe::Gsm8k => "number",
            Recipe::Mmlu => "choice",
        }
    }

    /// The source fields a row needs.
    fn needs(self) -> &'static str {
        match self {
            Recipe::Gsm8k => "`question`, and `answer` ending `#### NUMBER`",
            Recipe::Mmlu => "`question`, 2 to 10 `choices` and an `answer` index",
        }
    }

    /// The JSONL record of one source row, `None` when it lacks what the recipe needs.
    pub fn record(self, row: &Value) -> Option<Value> {
        let question = row.get("question")?.as_str()?.trim();
        if question.is_empty() {
            return None;
        }
        match self {
            Recipe::Gsm8k => {
                let reference = gsm8k_reference(row.get("answer")?.as_str()?)?;
                Some(json!({
                    "prompt": format!(
                        "{question}\n\nSolve it step by step, then end with \"The answer is N.\", \
                         N the final number."
                    ),
                    "reference": reference,
                }))
            }
            Recipe::Mmlu => {
                let choices: Vec<&str> = row
                    .get("choices")?
                    .as_array()?
                    .iter()
                    .map(Value::as_str)
                    .collect::<Option<_>>()?;
                let index = usize::try_from(row.get("answer")?.as_u64()?).ok()?;
                if !(2..=10).contains(&choices.len()) || index >= choices.len() {
                    return None;
                }
                let letter = char::from(b'A' + u8::try_from(index).ok()?);
                Some(json!({
                    "prompt": format!("{question}\n\nAnswer with the letter of the right option."),
                    "choices": choices,
                    "reference": letter.to_string(),
                }))
            }
        }
    }

    /// Converts the source at `input` (`.parquet`, else JSONL) into JSONL records at `out`.
    pub fn convert(self, input: &Path, out: &Path) -> Result<Converted, RecipeError> {
        let io = |action, path: &Path| {
            let path = path.to_path_buf();
            move |source| RecipeError::Io {
                action,
                path,
                source,
            }
        };
        let dir = match out.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let temp = tempfile::NamedTempFile::new_in(dir).map_err(io("write into", dir))?;
        let mut w = std::io::BufWriter::new(temp);
        let (mut records, mut skipped) = (0u64, 0u64);
        let mut write_err = None;
        let mut each = |row: Value| match self.record(&row) {
            Some(r) if write_err.is_none() => {
                if let Err(e) = writeln!(w, "{r}") {
                    write_err = Some(e);
                }
                records += 1;
            }
            Some(_) => {}
            None => skipped += 1,
        };
        if input.extension().is_some_and(|e| e == "parquet") {
            parquet_rows(input, &mut each)?;
        } else {
            jsonl_rows(input, &mut each)?;
        }
        if let Some(e) = write_err {
            return Err(io("write", out)(e));
        }
        if records == 0 {
            return Err(RecipeError::Empty {
                path: input.to_path_buf(),
                recipe: self.name(),
                needs: self.needs(),
            });
        }
        let temp = w
            .into_inner()
            .map_err(|e| io("write", out)(e.into_error()))?;
        temp.persist(out).map_err(|e| io("write", out)(e.error))?;
        Ok(Converted {
            path: out.to_path_buf(),
            records,
            skipped,
        })
    }
}

/// GSM8K's final answer: the number after the last `####`, its thousands separators dropped
/// (`#### 1,234` → `1234`).
fn gsm8k_reference(answer: &str) -> Option<String> {
    let (_, tail) = answer.rsplit_once("####")?;
    let number: String = tail.trim().chars().filter(|c| *c != ',').collect();
    let valid = !number.is_empty()
        && number.parse::<f64>().is_ok_and(f64::is_finite)
        && number
            .chars()
            .all(|c| c.is_ascii_digit() || "-.".contains(c));
    valid.then_some(number)
}

/// Each line of a JSONL source as a JSON value, bounded.
fn jsonl_rows(path: &Path, each: &mut dyn FnMut(Value)) -> Result<(), RecipeError> {
    let io = |source| RecipeError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    };
    let file = crate::files::open_regular(path).map_err(io)?;
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    for line in 1.. {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut buf)
            .map_err(io)?;
        if n == 0 {
            break;
        }
        let bad = |reason: String| RecipeError::Line {
            path: path.to_path_buf(),
            line,
            reason,
        };
        if n as u64 > MAX_LINE {
            return Err(bad(format!("a line longer than {MAX_LINE} bytes")));
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let row = serde_json::from_slice(&buf).map_err(|e| bad(format!("not JSON: {e}")))?;
        each(row);
    }
    Ok(())
}

#[cfg(feature = "parquet")]
fn parquet_rows(path: &Path, each: &mut dyn FnMut(Value)) -> Result<(), RecipeError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let bad = |e: parquet::errors::ParquetError| RecipeError::Parquet {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let file = crate::files::open_regular(path).map_err(|source| RecipeError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    })?;
    let reader = SerializedFileReader::new(file).map_err(bad)?;
    for row in reader.get_row_iter(None).map_err(bad)? {
        let row = row.map_err(bad)?;
        let object = row
            .get_column_iter()
            .map(|(name, field)| (name.clone(), field_value(field)))
            .collect::<serde_json::Map<_, _>>();
        each(Value::Object(object));
    }
    Ok(())
}

#[cfg(not(feature = "parquet"))]
fn parquet_rows(path: &Path, _each: &mut dyn FnMut(Value)) -> Result<(), RecipeError> {
    Err(RecipeError::NoParquet {
        path: path.to_path_buf(),
    })
}

/// The fields a recipe reads (text, integers, lists of them) as JSON; anything else null.
#[cfg(feature = "parquet")]
fn field_value(field: &parquet::record::Field) -> Value {
    use parquet::record::Field;
    match field {
        Field::Str(s) => Value::from(s.as_str()),
        Field::Byte(v) => Value::from(*v),
        Field::Short(v) => Value::from(*v),
        Field::Int(v) => Value::from(*v),
        Field::Long(v) => Value::from(*v),
        Field::UByte(v) => Value::from(*v),
        Field::UShort(v) => Value::from(*v),
        Field::UInt(v) => Value::from(*v),
        Field::ULong(v) => Value::from(*v),
        Field::ListInternal(list) => {
            Value::Array(list.elements().iter().map(field_value).collect())
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
#[path = "recipe_tests.rs"]
mod tests;
