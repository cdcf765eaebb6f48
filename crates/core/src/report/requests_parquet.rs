//! `requests.parquet`: a run's `requests.jsonl` as a Parquet table, one row per request, for
//! notebooks (pandas, polars, DuckDB). Streamed: the rows are read a line at a time and
//! written in row groups of [`ROWS_PER_GROUP`], so memory stays flat however long the run.
//!
//! The columns are [`COLUMNS`], one per field of a `requests.jsonl` row (docs/results.md)
//! plus the run's model; a field added to the rows is added there, by name, type and reader.
//! Strings are scrubbed of secrets one by one before they are written (the file is binary
//! and compressed, so the byte-level scrub of the other outputs cannot see into it).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use serde::Deserialize;

use super::ReportError;
use crate::results::Results;

/// Rows written per row group: large enough for readers to scan fast, small enough that a
/// group's buffers stay a few megabytes.
pub const ROWS_PER_GROUP: usize = 16_384;

/// The longest `requests.jsonl` line read (a row is a few hundred bytes): a longer one is not
/// a row of ours.
const MAX_LINE: u64 = 1 << 20;

/// One row of `requests.jsonl`, as written by the runner (fields added in later schema
/// versions are optional, so older files convert too).
#[derive(Debug, Deserialize)]
pub struct RequestRow {
    pub stage: String,
    pub index: u64,
    #[serde(default)]
    pub turn: u32,
    /// An agentic subagent's depth (absent from the row, so 0, for everything else).
    #[serde(default)]
    pub depth: u8,
    pub scheduled_ns: u64,
    pub sent_ns: u64,
    pub done_ns: u64,
    pub first_token_ns: Option<u64>,
    pub first_answer_ns: Option<u64>,
    pub ttft_ms: Option<f64>,
    pub e2e_ms: f64,
    pub send_lag_ms: f64,
    #[serde(default)]
    pub itl_mean_ms: Option<f64>,
    #[serde(default)]
    pub itl_max_ms: Option<f64>,
    pub chunks: u32,
    pub input_tokens: u32,
    #[serde(default)]
    pub planned_input_tokens: Option<u32>,
    pub output_tokens: u32,
    #[serde(default)]
    pub planned_output_tokens: Option<u32>,
    #[serde(default)]
    pub cached_tokens: Option<u32>,
    pub token_source: String,
    pub token_mismatch: bool,
    #[serde(default)]
    pub implausible_usage: bool,
    #[serde(default)]
    pub retries: u32,
    #[serde(default)]
    pub finish_reason: Option<String>,
    pub status: Option<u16>,
    pub sim_id: Option<u64>,
    pub error: Option<String>,
    /// The W3C trace id the request carried (absent when the run sent none).
    #[serde(default)]
    pub trace_id: Option<String>,
    /// What the data set's `quality` block found in the answer (absent when it checks none).
    #[serde(default)]
    pub quality: Option<QualityCells>,
}

/// The marks of a row's `quality` that the table keeps: the scorer's and the agreement's.
#[derive(Debug, Default, Deserialize)]
pub struct QualityCells {
    #[serde(default)]
    pub correct: Option<bool>,
    #[serde(default)]
    pub agrees: Option<bool>,
}

/// A column's Parquet type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int64,
    Double,
    Bool,
    Text,
}

/// One cell, `None` where the row has no value.
pub enum Cell<'a> {
    Int(Option<i64>),
    Float(Option<f64>),
    Flag(Option<bool>),
    Text(Option<&'a str>),
}

/// One column: its name, type, whether it may be null, and how a row gives its value.
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub optional: bool,
    pub cell: for<'a> fn(&'a Source<'a>) -> Cell<'a>,
}

/// What a row's cells are read from: the row, and the run it belongs to.
pub struct Source<'a> {
    pub row: &'a RequestRow,
    /// The run's model (`results.target.model`). The extension point for per-request models
    /// and request classes: when the rows carry their own, their columns read them here.
    pub model: &'a str,
}

const fn col(
    name: &'static str,
    kind: Kind,
    optional: bool,
    cell: for<'a> fn(&'a Source<'a>) -> Cell<'a>,
) -> Column {
    Column {
        name,
        kind,
        optional,
        cell,
    }
}

fn int(v: impl Into<i64>) -> Cell<'static> {
    Cell::Int(Some(v.into()))
}

fn ns(v: u64) -> i64 {
    // Nanoseconds since a stage start: i64 holds 292 years of them.
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Every column of `requests.parquet`, in order.
pub const COLUMNS: &[Column] = &[
    col("stage", Kind::Text, false, |s| {
        Cell::Text(Some(&s.row.stage))
    }),
    col("model", Kind::Text, false, |s| Cell::Text(Some(s.model))),
    col("index", Kind::Int64, false, |s| {
        Cell::Int(Some(ns(s.row.index)))
    }),
    col("turn", Kind::Int64, false, |s| int(s.row.turn)),
    col("depth", Kind::Int64, false, |s| int(s.row.depth)),
    col("scheduled_ns", Kind::Int64, false, |s| {
        Cell::Int(Some(ns(s.row.scheduled_ns)))
    }),
    col("sent_ns", Kind::Int64, false, |s| {
        Cell::Int(Some(ns(s.row.sent_ns)))
    }),
    col("first_token_ns", Kind::Int64, true, |s| {
        Cell::Int(s.row.first_token_ns.map(ns))
    }),
    col("first_answer_ns", Kind::Int64, true, |s| {
        Cell::Int(s.row.first_answer_ns.map(ns))
    }),
    col("done_ns", Kind::Int64, false, |s| {
        Cell::Int(Some(ns(s.row.done_ns)))
    }),
    col("ttft_ms", Kind::Double, true, |s| {
        Cell::Float(s.row.ttft_ms)
    }),
    col("e2e_ms", Kind::Double, false, |s| {
        Cell::Float(Some(s.row.e2e_ms))
    }),
    col("send_lag_ms", Kind::Double, false, |s| {
        Cell::Float(Some(s.row.send_lag_ms))
    }),
    col("itl_mean_ms", Kind::Double, true, |s| {
        Cell::Float(s.row.itl_mean_ms)
    }),
    col("itl_max_ms", Kind::Double, true, |s| {
        Cell::Float(s.row.itl_max_ms)
    }),
    col("chunks", Kind::Int64, false, |s| int(s.row.chunks)),
    col("input_tokens", Kind::Int64, false, |s| {
        int(s.row.input_tokens)
    }),
    col("planned_input_tokens", Kind::Int64, true, |s| {
        Cell::Int(s.row.planned_input_tokens.map(i64::from))
    }),
    col("output_tokens", Kind::Int64, false, |s| {
        int(s.row.output_tokens)
    }),
    col("planned_output_tokens", Kind::Int64, true, |s| {
        Cell::Int(s.row.planned_output_tokens.map(i64::from))
    }),
    col("cached_tokens", Kind::Int64, true, |s| {
        Cell::Int(s.row.cached_tokens.map(i64::from))
    }),
    col("token_source", Kind::Text, false, |s| {
        Cell::Text(Some(&s.row.token_source))
    }),
    col("token_mismatch", Kind::Bool, false, |s| {
        Cell::Flag(Some(s.row.token_mismatch))
    }),
    col("implausible_usage", Kind::Bool, false, |s| {
        Cell::Flag(Some(s.row.implausible_usage))
    }),
    col("retries", Kind::Int64, false, |s| int(s.row.retries)),
    col("finish_reason", Kind::Text, true, |s| {
        Cell::Text(s.row.finish_reason.as_deref())
    }),
    col("status", Kind::Int64, true, |s| {
        Cell::Int(s.row.status.map(i64::from))
    }),
    col("error", Kind::Text, true, |s| {
        Cell::Text(s.row.error.as_deref())
    }),
    col("sim_id", Kind::Int64, true, |s| {
        Cell::Int(s.row.sim_id.map(ns))
    }),
    col("trace_id", Kind::Text, true, |s| {
        Cell::Text(s.row.trace_id.as_deref())
    }),
    // The scorer's mark, null where the answer was not scored (docs/quality.md).
    col("correct", Kind::Bool, true, |s| {
        Cell::Flag(s.row.quality.as_ref().and_then(|q| q.correct))
    }),
    // Identical to the baseline's answer to the same prompt, null where none was paired.
    col("agrees", Kind::Bool, true, |s| {
        Cell::Flag(s.row.quality.as_ref().and_then(|q| q.agrees))
    }),
];

/// The Parquet schema of [`COLUMNS`], as a message type.
fn message_type() -> String {
    let mut m = String::from("message request {\n");
    for c in COLUMNS {
        let repetition = if c.optional { "optional" } else { "required" };
        let ty = match c.kind {
            Kind::Int64 => "int64",
            Kind::Double => "double",
            Kind::Bool => "boolean",
            Kind::Text => "binary",
        };
        let annotation = if c.kind == Kind::Text { " (UTF8)" } else { "" };
        m.push_str(&format!("  {repetition} {ty} {}{annotation};\n", c.name));
    }
    m.push('}');
    m
}

/// One column's values of the row group being filled, and its definition levels (1 present,
/// 0 null) when it may be null.
#[derive(Default)]
struct Buffer {
    ints: Vec<i64>,
    floats: Vec<f64>,
    flags: Vec<bool>,
    texts: Vec<ByteArray>,
    levels: Vec<i16>,
}

impl Buffer {
    fn push(&mut self, cell: Cell<'_>) {
        let present = match cell {
            Cell::Int(v) => v.map(|v| self.ints.push(v)).is_some(),
            Cell::Float(v) => v.map(|v| self.floats.push(v)).is_some(),
            Cell::Flag(v) => v.map(|v| self.flags.push(v)).is_some(),
            Cell::Text(v) => v
                .map(|v| {
                    let text = crate::redact::secrets(v).into_owned().into_bytes();
                    self.texts.push(ByteArray::from(text));
                })
                .is_some(),
        };
        self.levels.push(i16::from(present));
    }

    fn clear(&mut self) {
        self.ints.clear();
        self.floats.clear();
        self.flags.clear();
        self.texts.clear();
        self.levels.clear();
    }
}

/// Converts the `requests.jsonl` at `rows` into Parquet at `out` (atomically: a temporary
/// file renamed over it), with `results`' model in every row.
pub fn requests_parquet(results: &Results, rows: &Path, out: &Path) -> Result<(), ReportError> {
    let file = File::open(rows).map_err(|e| ReportError::io(rows, e))?;
    let mut reader = BufReader::new(file);
    crate::results::write_atomic_with(
        out,
        |tmp| {
            let parquet = |source| ReportError::Parquet {
                path: out.to_path_buf(),
                source,
            };
            let schema =
                parquet::schema::parser::parse_message_type(&message_type()).map_err(parquet)?;
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_created_by(format!("infermeter {}", env!("CARGO_PKG_VERSION")))
                .build();
            let mut writer = SerializedFileWriter::new(tmp, Arc::new(schema), Arc::new(props))
                .map_err(parquet)?;
            let mut buffers: Vec<Buffer> = COLUMNS.iter().map(|_| Buffer::default()).collect();
            let mut filled = 0usize;
            let mut line = Vec::new();
            let mut number = 0u64;
            while next_line(&mut reader, &mut line).map_err(|e| ReportError::io(rows, e))? {
                number += 1;
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let row: RequestRow =
                    serde_json::from_slice(&line).map_err(|source| ReportError::RequestRow {
                        path: rows.to_path_buf(),
                        line: number,
                        source,
                    })?;
                let source = Source {
                    row: &row,
                    model: &results.target.model,
                };
                for (c, b) in COLUMNS.iter().zip(&mut buffers) {
                    b.push((c.cell)(&source));
                }
                filled += 1;
                if filled == ROWS_PER_GROUP {
                    write_group(&mut writer, &mut buffers).map_err(parquet)?;
                    filled = 0;
                }
            }
            if filled > 0 {
                write_group(&mut writer, &mut buffers).map_err(parquet)?;
            }
            writer.close().map_err(parquet)?;
            Ok(())
        },
        |e| ReportError::io(out, e),
    )
}

/// The next line of `reader` into `line` (without its newline); `false` at the end.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    line.clear();
    let read = reader.by_ref().take(MAX_LINE + 1).read_until(b'\n', line)?;
    if read == 0 {
        return Ok(false);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if read as u64 > MAX_LINE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "a line is longer than {} MiB: not a row of requests.jsonl",
                MAX_LINE >> 20
            ),
        ));
    }
    Ok(true)
}

/// Writes the buffered rows as one row group, and empties the buffers.
fn write_group<W: std::io::Write + Send>(
    writer: &mut SerializedFileWriter<W>,
    buffers: &mut [Buffer],
) -> parquet::errors::Result<()> {
    let mut group = writer.next_row_group()?;
    for (c, b) in COLUMNS.iter().zip(buffers.iter_mut()) {
        let Some(mut column) = group.next_column()? else {
            break;
        };
        let levels = c.optional.then_some(b.levels.as_slice());
        match c.kind {
            Kind::Int64 => column
                .typed::<Int64Type>()
                .write_batch(&b.ints, levels, None)?,
            Kind::Double => column
                .typed::<DoubleType>()
                .write_batch(&b.floats, levels, None)?,
            Kind::Bool => column
                .typed::<BoolType>()
                .write_batch(&b.flags, levels, None)?,
            Kind::Text => column
                .typed::<ByteArrayType>()
                .write_batch(&b.texts, levels, None)?,
        };
        column.close()?;
        b.clear();
    }
    group.close()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    fn results() -> Results {
        serde_json::from_str(include_str!(
            "../../../../tests/data/results/sim-quickstart.json"
        ))
        .unwrap()
    }

    /// A row as the runner writes it; every third failed (no token, no status), every fifth
    /// carrying a secret in its stage name.
    fn line(i: usize) -> String {
        let stage = if i.is_multiple_of(5) {
            "s sk-live-0123456789abcdef"
        } else {
            "s"
        };
        let t = i * 1000;
        if i.is_multiple_of(3) {
            return format!(
                r#"{{"stage":"{stage}","index":{i},"turn":0,"scheduled_ns":{t},"sent_ns":{},"done_ns":{},"first_token_ns":null,"first_answer_ns":null,"chunks":0,"input_tokens":16,"output_tokens":0,"token_source":"usage","token_mismatch":false,"status":null,"sim_id":null,"ttft_ms":null,"e2e_ms":0.9,"send_lag_ms":0.001,"error":"timeout"}}"#,
                t + 1,
                t + 900
            );
        }
        format!(
            r#"{{"stage":"{stage}","index":{i},"turn":1,"scheduled_ns":{t},"sent_ns":{},"done_ns":{},"first_token_ns":{},"first_answer_ns":{},"chunks":4,"input_tokens":16,"output_tokens":4,"planned_input_tokens":16,"planned_output_tokens":4,"cached_tokens":8,"token_source":"usage","token_mismatch":false,"status":200,"sim_id":{i},"finish_reason":"length","ttft_ms":0.1,"e2e_ms":0.9,"send_lag_ms":0.001,"itl_mean_ms":0.2,"itl_max_ms":0.3,"error":null}}"#,
            t + 1,
            t + 900,
            t + 100,
            t + 100
        )
    }

    #[test]
    fn a_long_run_is_written_in_row_groups_and_reads_back_row_for_row() {
        let dir = tempfile::tempdir().unwrap();
        let rows = dir.path().join("requests.jsonl");
        let n = 2 * ROWS_PER_GROUP + 7;
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&line(i));
            text.push('\n');
        }
        std::fs::write(&rows, text).unwrap();
        let out = dir.path().join("requests.parquet");
        requests_parquet(&results(), &rows, &out).unwrap();

        let reader = SerializedFileReader::new(File::open(&out).unwrap()).unwrap();
        assert_eq!(reader.metadata().num_row_groups(), 3);
        assert_eq!(reader.metadata().file_metadata().num_rows(), n as i64);
        for (i, row) in reader.get_row_iter(None).unwrap().enumerate() {
            let row = row.unwrap();
            let get = |name: &str| {
                row.get_column_iter()
                    .find(|(n, _)| n.as_str() == name)
                    .map(|(_, f)| f.clone())
                    .unwrap()
            };
            assert_eq!(get("index"), Field::Long(i as i64));
            assert_eq!(get("sent_ns"), Field::Long(i as i64 * 1000 + 1));
            let stage = if i.is_multiple_of(5) { "s ***" } else { "s" };
            assert_eq!(get("stage"), Field::Str(stage.into()));
            if i.is_multiple_of(3) {
                assert_eq!(get("ttft_ms"), Field::Null);
                assert_eq!(get("status"), Field::Null);
                assert_eq!(get("planned_input_tokens"), Field::Null);
                assert_eq!(get("error"), Field::Str("timeout".into()));
            } else {
                assert_eq!(get("ttft_ms"), Field::Double(0.1));
                assert_eq!(get("status"), Field::Long(200));
                assert_eq!(get("cached_tokens"), Field::Long(8));
                assert_eq!(get("itl_max_ms"), Field::Double(0.3));
                assert_eq!(get("finish_reason"), Field::Str("length".into()));
                assert_eq!(get("error"), Field::Null);
            }
        }
    }

    #[test]
    fn a_line_that_is_not_a_row_is_named_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let rows = dir.path().join("requests.jsonl");
        std::fs::write(&rows, format!("{}\n\n{}\n{{\"stage\":", line(1), line(2))).unwrap();
        let out = dir.path().join("requests.parquet");
        let e = requests_parquet(&results(), &rows, &out).unwrap_err();
        assert!(
            matches!(e, ReportError::RequestRow { line: 4, .. }),
            "{e:?}"
        );
        assert!(!out.exists());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn the_schema_parses_and_names_every_column_once() {
        let schema = parquet::schema::parser::parse_message_type(&message_type()).unwrap();
        let names: Vec<&str> = schema.get_fields().iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), COLUMNS.len());
        for (i, n) in names.iter().enumerate() {
            assert_eq!(*n, COLUMNS[i].name);
            assert!(!names[i + 1..].contains(n), "{n} twice");
        }
    }
}
