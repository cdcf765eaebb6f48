//! `infermeter import dynamo-agentic`: NVIDIA Dynamo's agentic Mooncake replay rows (one
//! request a line: `request_id`, `session_id`, `input_length`, `output_length`, `hash_ids`,
//! `timestamp`, `delay`, `wait_for`, `tool_wait_ms`, as `dynamo-mocker` replays them) turned
//! into an `agentic` trace (see `agentic_load.rs`). Rows of one `session_id` are its turns in
//! file order; a session's first row that waits for a row of another session is a subagent
//! forked by that row's turn; a later row that waits for another session's last row joins it.
//! The wait before a row (`delay` plus `tool_wait_ms`) becomes its `wait_ms`. A row's
//! `input_length` is its whole prompt, so a later turn's new text is what it adds to the
//! previous turn's prompt and output. `hash_ids` and `timestamp` are not carried: turns share
//! prefixes by construction, and infermeter's arrival process spaces tasks. What infermeter's
//! graph cannot say (a session waiting on several parents, a join on a session it did not
//! fork) is refused with the row's line.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::Deserialize;
use serde_json::json;

use super::DatasetError;
use super::agent_task::MAX_WAIT_MS;
use super::source::{HashingReader, Records, file_error, io_error};

/// A Dynamo agentic Mooncake row, the fields the conversion reads (others are ignored: the
/// format grows fields infermeter has no use for, such as `tool_events`).
#[derive(Deserialize)]
struct Row {
    request_id: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default, alias = "input_tokens")]
    input_length: Option<u64>,
    #[serde(default, alias = "output_tokens")]
    output_length: Option<u64>,
    #[serde(default, alias = "delay_ms")]
    delay: Option<f64>,
    #[serde(default)]
    tool_wait_ms: Option<f64>,
    #[serde(default)]
    wait_for: Vec<String>,
}

/// A row kept: its line and what a turn needs.
struct Kept {
    line: u64,
    input: u64,
    output: u64,
    wait_ms: u32,
    wait_for: Vec<String>,
}

/// What a conversion made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    pub rows: u64,
    pub sessions: u64,
    pub tasks: u64,
}

/// Converts the Dynamo agentic trace at `path` and writes the `agentic` JSONL to `out`.
pub fn import_dynamo_agentic(path: &Path, out: &mut impl Write) -> Result<Imported, DatasetError> {
    let mut reader = HashingReader::open(path)?;
    // Sessions in order of first appearance, each its rows; a request id → (session, turn).
    let mut sessions: Vec<(String, Vec<Kept>)> = Vec::new();
    let mut by_session: HashMap<String, usize> = HashMap::new();
    let mut by_request: HashMap<String, (usize, usize, u64)> = HashMap::new();
    let mut lines = Records::new(&mut reader, path);
    while let Some((number, line)) = lines.next_record()? {
        let at = |reason: String| file_error(path, Some(number), reason);
        let row: Row = serde_json::from_str(line).map_err(|e| {
            at(format!(
                "not a Dynamo agentic row: {e}; a row is {{\"request_id\": \"r1\", \
                 \"session_id\": \"s1\", \"input_length\": 512, \"output_length\": 64, \
                 \"wait_for\": [], \"tool_wait_ms\": 0}}"
            ))
        })?;
        if let Some(&(_, _, first)) = by_request.get(&row.request_id) {
            return Err(at(format!(
                "request id `{}` is used again (first on line {first})",
                row.request_id
            )));
        }
        let input = row.input_length.filter(|&n| n >= 1).ok_or_else(|| {
            at("needs `input_length` (the prompt's tokens), at least 1".to_string())
        })?;
        let wait = row.delay.unwrap_or(0.0) + row.tool_wait_ms.unwrap_or(0.0);
        if !wait.is_finite() || wait < 0.0 || wait > f64::from(MAX_WAIT_MS) {
            return Err(at(format!(
                "`delay` + `tool_wait_ms` is {wait} ms; it must be 0 to an hour"
            )));
        }
        let session = row.session_id.unwrap_or_else(|| row.request_id.clone());
        let s = *by_session.entry(session.clone()).or_insert_with(|| {
            sessions.push((session, Vec::new()));
            sessions.len() - 1
        });
        let turn = sessions[s].1.len();
        by_request.insert(row.request_id, (s, turn, number));
        sessions[s].1.push(Kept {
            line: number,
            input,
            output: row.output_length.unwrap_or(1).max(1),
            wait_ms: wait.round() as u32,
            wait_for: row.wait_for,
        });
    }
    reader.finish().map_err(|e| io_error(path, e))?;
    if sessions.is_empty() {
        return Err(file_error(path, None, "no row in the file"));
    }
    let (lines, tasks) =
        convert(&sessions, &by_request).map_err(|(line, why)| file_error(path, Some(line), why))?;
    for l in &lines {
        writeln!(out, "{l}").map_err(|e| io_error(path, e))?;
    }
    Ok(Imported {
        rows: by_request.len() as u64,
        sessions: sessions.len() as u64,
        tasks,
    })
}

/// Where a request id is: its session, its turn, its line.
type Requests = HashMap<String, (usize, usize, u64)>;

/// Who forks each session (`(session, turn)`, `None` for a task's root), and each turn's forks
/// and joins by session id.
struct Graph<'a> {
    parent: Vec<Option<(usize, usize)>>,
    forks: Vec<Vec<Vec<&'a str>>>,
    joins: Vec<Vec<Vec<&'a str>>>,
}

type Refusal = (u64, String);

fn find(by_request: &Requests, id: &str, line: u64) -> Result<(usize, usize), Refusal> {
    by_request.get(id).map(|&(s, t, _)| (s, t)).ok_or_else(|| {
        (
            line,
            format!("waits for `{id}`, which no row of the file is"),
        )
    })
}

/// The sessions as `agentic` lines and the number of tasks, or a row's line and why not.
fn convert(
    sessions: &[(String, Vec<Kept>)],
    by_request: &Requests,
) -> Result<(Vec<String>, u64), Refusal> {
    let blank: Vec<Vec<Vec<&str>>> = sessions
        .iter()
        .map(|(_, r)| vec![Vec::new(); r.len()])
        .collect();
    let mut g = Graph {
        parent: vec![None; sessions.len()],
        forks: blank.clone(),
        joins: blank,
    };
    for s in 0..sessions.len() {
        if let Some((p, t)) = forked_by(sessions, by_request, s)? {
            g.parent[s] = Some((p, t));
            g.forks[p][t].push(&sessions[s].0);
        }
    }
    for (s, (_, rows)) in sessions.iter().enumerate() {
        for (k, row) in rows.iter().enumerate().skip(1) {
            for id in &row.wait_for {
                let (c, t) = find(by_request, id, row.line)?;
                if c == s && t < k {
                    continue;
                }
                let own = matches!(g.parent[c], Some((p, f)) if p == s && f < k);
                if !own || t + 1 != sessions[c].1.len() {
                    return Err((
                        row.line,
                        format!(
                            "waits for `{id}` of session `{}`, which is not the last request of \
                             a subagent this session forked on an earlier turn; infermeter \
                             joins whole subagents, from the session that forked them",
                            sessions[c].0
                        ),
                    ));
                }
                g.joins[s][k].push(&sessions[c].0);
            }
        }
    }
    let lines = sessions
        .iter()
        .enumerate()
        .map(|(s, (id, rows))| session_line(&g, s, id, rows))
        .collect();
    let tasks = g.parent.iter().filter(|p| p.is_none()).count() as u64;
    Ok((lines, tasks))
}

/// The turn whose reply forks session `s`: the latest row its first row waits for, all in one
/// other session; `None` for a root.
fn forked_by(
    sessions: &[(String, Vec<Kept>)],
    by_request: &Requests,
    s: usize,
) -> Result<Option<(usize, usize)>, Refusal> {
    let first = &sessions[s].1[0];
    let mut from: Option<(usize, usize)> = None;
    for id in &first.wait_for {
        let (p, t) = find(by_request, id, first.line)?;
        match from {
            Some((q, _)) if q != p => {
                return Err((
                    first.line,
                    format!(
                        "the first request of session `{}` waits for requests of two sessions \
                         (`{}` and `{}`); an infermeter subagent has one parent",
                        sessions[s].0, sessions[q].0, sessions[p].0
                    ),
                ));
            }
            _ if p == s => {
                return Err((
                    first.line,
                    format!("waits for `{id}`, a later request of its own session"),
                ));
            }
            _ => from = Some((p, from.map_or(t, |(_, u)| u.max(t)))),
        }
    }
    Ok(from)
}

/// Session `s` as an `agentic` line.
fn session_line(g: &Graph<'_>, s: usize, id: &str, rows: &[Kept]) -> String {
    let turns: Vec<serde_json::Value> = rows
        .iter()
        .enumerate()
        .map(|(k, r)| {
            // The prompt grew by the previous turn's output and this turn's new text.
            let new = match k {
                0 => r.input,
                _ => r
                    .input
                    .saturating_sub(rows[k - 1].input + rows[k - 1].output),
            };
            let wait = if k == 0 && g.parent[s].is_none() {
                0
            } else {
                r.wait_ms
            };
            let mut t = json!({
                "input_tokens": new.clamp(1, u64::from(u32::MAX)),
                "output_tokens": r.output.min(u64::from(u32::MAX)),
                "wait_ms": wait,
            });
            if !g.forks[s][k].is_empty() {
                t["fork"] = json!(g.forks[s][k]);
            }
            if !g.joins[s][k].is_empty() {
                t["join"] = json!(g.joins[s][k]);
            }
            t
        })
        .collect();
    json!({"id": id, "turns": turns}).to_string()
}
