//! Production traces: Mooncake's JSONL (`timestamp` in ms, `input_length`, `output_length`,
//! `hash_ids`) and the Azure LLM inference trace CSV (`TIMESTAMP,ContextTokens,GeneratedTokens`,
//! the timestamp a date-time or a number of seconds). Rows come back in time order, timed from
//! the first.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::DatasetError;
use super::source::{HashingReader, file_error, io_error, next_line};
use super::{LoadReport, TraceFormat, TraceRow};

#[derive(Deserialize)]
struct MooncakeRow {
    timestamp: f64,
    input_length: u32,
    output_length: u32,
    #[serde(default)]
    hash_ids: Vec<u64>,
}

/// Loads a trace file.
pub fn load_trace(
    path: &Path,
    shown_path: &str,
    format: TraceFormat,
) -> Result<(Vec<TraceRow>, LoadReport), DatasetError> {
    let mut reader = HashingReader::open(path)?;
    let mut buf = Vec::new();
    let mut number = 0u64;
    // (time in ns since the epoch or the trace's zero, row)
    let mut rows: Vec<(i128, TraceRow)> = Vec::new();
    let mut columns: Option<[usize; 3]> = None;
    loop {
        number += 1;
        let Some(line) = next_line(&mut reader, &mut buf, path, number)? else {
            break;
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let row = parse_row(format, text, &mut columns)
            .map_err(|e| file_error(path, Some(number), e.to_string()))?;
        let Some((at, input, output, hash_ids)) = row else {
            continue;
        };
        rows.push((
            at,
            TraceRow {
                at_ns: 0,
                input_tokens: input,
                output_tokens: output,
                hash_ids,
            },
        ));
    }
    if rows.is_empty() {
        return Err(file_error(path, None, "no request in the trace"));
    }
    let records = rows.len() as u64;
    rows.sort_by_key(|(at, _)| *at);
    let zero = rows[0].0;
    let rows = rows
        .into_iter()
        .map(|(at, mut r)| {
            r.at_ns = (at - zero).clamp(0, u64::MAX as i128) as u64;
            r
        })
        .collect();
    let sha256 = reader.finish().map_err(|e| io_error(path, e))?;
    let report = LoadReport {
        path: shown_path.to_string(),
        sha256,
        records,
        skipped: BTreeMap::new(),
    };
    Ok((rows, report))
}

/// Why a trace row cannot be read.
#[derive(Debug, thiserror::Error)]
enum RowError {
    #[error(
        "{0} (a Mooncake row is {{\"timestamp\": ms, \"input_length\": n, \"output_length\": n, \"hash_ids\": […]}})"
    )]
    Mooncake(serde_json::Error),
    #[error("`timestamp` must be a number of ms ≥ 0")]
    Timestamp,
    #[error("the header has no `{0}` column (expected TIMESTAMP,ContextTokens,GeneratedTokens)")]
    MissingColumn(&'static str),
    #[error("bad {column} `{value}`")]
    Cell { column: &'static str, value: String },
    #[error("input and output lengths must be ≥ 1")]
    ZeroLength,
}

/// A row: its time (ns), input and output lengths, and prefix block hashes.
type Row = (i128, u32, u32, Vec<u64>);

/// One non-empty line of a trace; `None` for the Azure header, which fills `columns`.
fn parse_row(
    format: TraceFormat,
    text: &str,
    columns: &mut Option<[usize; 3]>,
) -> Result<Option<Row>, RowError> {
    let row = match format {
        TraceFormat::Mooncake => {
            let r: MooncakeRow = serde_json::from_str(text).map_err(RowError::Mooncake)?;
            if !r.timestamp.is_finite() || r.timestamp < 0.0 {
                return Err(RowError::Timestamp);
            }
            let at = (r.timestamp * 1e6) as i128;
            (at, r.input_length, r.output_length, r.hash_ids)
        }
        TraceFormat::Azure => {
            let cells: Vec<&str> = text.split(',').map(str::trim).collect();
            let Some(cols) = *columns else {
                *columns = Some(azure_header(&cells)?);
                return Ok(None);
            };
            let cell = |i: usize| cells.get(cols[i]).copied().unwrap_or("");
            let bad = |i: usize, column| RowError::Cell {
                column,
                value: cell(i).to_string(),
            };
            let at = parse_time(cell(0)).ok_or_else(|| bad(0, "TIMESTAMP"))?;
            let n = |i: usize, column| cell(i).parse::<u32>().map_err(|_| bad(i, column));
            (
                at,
                n(1, "ContextTokens")?,
                n(2, "GeneratedTokens")?,
                Vec::new(),
            )
        }
    };
    if row.1 == 0 || row.2 == 0 {
        return Err(RowError::ZeroLength);
    }
    Ok(Some(row))
}

fn azure_header(cells: &[&str]) -> Result<[usize; 3], RowError> {
    let find = |name: &'static str| {
        cells
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
            .ok_or(RowError::MissingColumn(name))
    };
    Ok([
        find("TIMESTAMP")?,
        find("ContextTokens")?,
        find("GeneratedTokens")?,
    ])
}

/// Nanoseconds from a number of seconds or a `YYYY-MM-DD HH:MM:SS[.fffffff]` date-time (UTC,
/// any offset suffix ignored: only differences matter).
pub(crate) fn parse_time(s: &str) -> Option<i128> {
    if let Ok(secs) = s.parse::<f64>() {
        return secs.is_finite().then_some((secs * 1e9) as i128);
    }
    let s = s.trim_matches('"');
    let (date, time) = s.split_once([' ', 'T'])?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let time = time.trim_end_matches('Z');
    let time = time.split(['+']).next()?;
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let sec_text = t.next()?;
    let (whole, frac) = sec_text.split_once('.').unwrap_or((sec_text, ""));
    let sec = whole.parse::<i64>().ok()?;
    let mut frac_ns: i64 = 0;
    for (i, c) in frac.chars().take(9).enumerate() {
        frac_ns += i64::from(c.to_digit(10)?) * 10i64.pow(8 - i as u32);
    }
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(y, m, day);
    let secs = days * 86_400 + h * 3600 + min * 60 + sec;
    Some(i128::from(secs) * 1_000_000_000 + i128::from(frac_ns))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_timestamps_parse_to_nanoseconds() {
        let a = parse_time("2023-11-16 18:15:46.6805900").unwrap();
        let b = parse_time("2023-11-16 18:15:47.0005900").unwrap();
        assert_eq!(b - a, 320_000_000);
        assert_eq!(
            parse_time("1970-01-02 00:00:00").unwrap(),
            86_400_000_000_000
        );
        assert_eq!(parse_time("1.5").unwrap(), 1_500_000_000);
        assert!(parse_time("yesterday").is_none());
        assert!(parse_time("2023-13-01 00:00:00").is_none());
    }
}
