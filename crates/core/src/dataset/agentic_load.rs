//! Loading an `agentic` trace: one JSON object a line, one session each (`id`, `turns`); a
//! turn names the sessions it forks and joins by id. The whole file is read, then checked as
//! a graph: ids unique, every fork and join naming a session of the file, every subagent
//! forked by exactly one turn, forks forming trees (no cycle) within [`MAX_DEPTH`] and
//! [`MAX_TASK_SESSIONS`], and a turn joining only subagents its own session forked on an
//! earlier turn (so a task can never wait on itself). Every refusal names the file and line,
//! and says how to fix it. Tasks are the sessions no turn forks, with their subagents, in the
//! order of the file.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use serde::Deserialize;

use super::agent_task::{
    AgentSession, AgentTask, AgentTurn, MAX_DEPTH, MAX_FORKS, MAX_TASK_SESSIONS, MAX_TURN_TOKENS,
    MAX_WAIT_MS,
};
use super::agentic::task_item;
use super::sharegpt::Loaded;
use super::source::{HashingReader, Records, file_error, io_error, sample_key};
use super::{DatasetError, LoadReport, MAX_TURNS, Tokenizer};

/// A line as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSession {
    id: String,
    turns: Vec<RawTurn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    text: Option<String>,
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
    reply: Option<String>,
    #[serde(default)]
    wait_ms: u32,
    #[serde(default)]
    fork: Vec<String>,
    #[serde(default)]
    join: Vec<String>,
}

/// A session read, before the graph is checked: its line, its turns, and its forks and joins
/// by id per turn.
struct Read {
    line: u64,
    id: String,
    turns: Vec<AgentTurn>,
    forks: Vec<Vec<String>>,
    joins: Vec<Vec<String>>,
}

/// Loads an agentic trace; with `count`, a seeded sample of that many tasks, else every task
/// in file order. `default_output` is a turn's output length when it gives neither
/// `output_tokens` nor `reply`.
pub fn load_agentic(
    path: &Path,
    shown_path: &str,
    count: Option<u64>,
    default_output: u32,
    seed: u64,
    tokenizer: &Tokenizer,
) -> Result<Loaded, DatasetError> {
    let mut reader = HashingReader::open(path)?;
    let mut read: Vec<Read> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut lines = Records::new(&mut reader, path);
    while let Some((number, line)) = lines.next_record()? {
        let at = |reason: String| file_error(path, Some(number), reason);
        let raw: RawSession = serde_json::from_str(line).map_err(|e| {
            at(format!(
                "not a session: {e}; a line is {{\"id\": \"…\", \"turns\": [{{\"text\": \"…\", \
                 \"output_tokens\": 100}}]}} (see docs/datasets.md, \"Agentic traces\")"
            ))
        })?;
        if let Some(&first) = by_id.get(&raw.id) {
            return Err(at(format!(
                "session id `{}` is used again (first on line {}); give every session its own id",
                raw.id, read[first].line
            )));
        }
        let session = read_session(raw, number, default_output, tokenizer)
            .map_err(|e| e.map_or_else(|tok| tok, at))?;
        by_id.insert(session.id.clone(), read.len());
        read.push(session);
    }
    if read.is_empty() {
        return Err(file_error(path, None, "no session in the file"));
    }
    let sha256 = reader.finish().map_err(|e| io_error(path, e))?;
    let records = read.len() as u64;
    let tasks =
        tasks(read, &by_id).map_err(|(line, reason)| file_error(path, Some(line), reason))?;
    let mut keyed: Vec<(u64, usize)> = (0..tasks.len())
        .map(|i| match count {
            Some(_) => (sample_key(seed, i as u64), i),
            None => (i as u64, i),
        })
        .collect();
    keyed.sort_unstable();
    keyed.truncate(count.map_or(usize::MAX, |c| usize::try_from(c).unwrap_or(usize::MAX)));
    let mut tasks: Vec<Option<AgentTask>> = tasks.into_iter().map(Some).collect();
    let items = keyed
        .into_iter()
        .filter_map(|(_, i)| tasks[i].take().map(task_item))
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

/// A line's session, its turns' lengths counted; `Err(Ok(reason))` is the line's fault,
/// `Err(Err(e))` the tokenizer's.
fn read_session(
    raw: RawSession,
    line: u64,
    default_output: u32,
    tokenizer: &Tokenizer,
) -> Result<Read, Result<String, DatasetError>> {
    let id = raw.id;
    if id.is_empty() || id.len() > 256 {
        return Err(Ok("a session's `id` must be 1 to 256 bytes".into()));
    }
    if raw.turns.is_empty() || raw.turns.len() > MAX_TURNS as usize {
        return Err(Ok(format!(
            "session `{id}` has {} turns; a session has 1 to {MAX_TURNS} (split a longer one \
             into subagents)",
            raw.turns.len()
        )));
    }
    let mut out = Read {
        line,
        id,
        turns: Vec::with_capacity(raw.turns.len()),
        forks: Vec::new(),
        joins: Vec::new(),
    };
    for (k, t) in raw.turns.into_iter().enumerate() {
        let bad = |what: String| Err(Ok(format!("session `{}`, turn {k}: {what}", out.id)));
        let count = |text: &str| {
            tokenizer
                .try_count(text)
                .map(|n| n.min(u32::MAX as usize) as u32)
        };
        let input = match (&t.text, t.input_tokens) {
            (Some(_), Some(_)) => return bad("give `text` or `input_tokens`, not both".into()),
            (Some(text), None) => count(text).map_err(Err)?,
            (None, Some(n)) => n,
            (None, None) => return bad("needs `text` (its new message) or `input_tokens`".into()),
        };
        let reply_tokens = match &t.reply {
            Some(r) => Some(count(r).map_err(Err)?),
            None => None,
        };
        let output = t.output_tokens.or(reply_tokens).unwrap_or(default_output);
        if input == 0 || output == 0 || input > MAX_TURN_TOKENS || output > MAX_TURN_TOKENS {
            return bad(format!(
                "its text and its output must each be 1 to {MAX_TURN_TOKENS} tokens (text \
                 {input}, output {output})"
            ));
        }
        if t.wait_ms > MAX_WAIT_MS {
            return bad(format!("`wait_ms` {} is over the hour allowed", t.wait_ms));
        }
        if t.fork.len() > MAX_FORKS {
            return bad(format!(
                "forks {} subagents; a turn forks at most {MAX_FORKS}",
                t.fork.len()
            ));
        }
        out.turns.push(AgentTurn {
            text: t.text,
            input_tokens: input,
            output_tokens: output,
            reply: t.reply,
            reply_tokens: reply_tokens.unwrap_or(output),
            wait_ms: t.wait_ms,
            join: Vec::new(),
            fork: Vec::new(),
        });
        out.forks.push(t.fork);
        out.joins.push(t.join);
    }
    Ok(out)
}

/// Who forks each session: `(session, turn)`, `None` for a task's root.
type Forker = Option<(usize, usize)>;

/// The file's sessions as tasks, or the line and reason of the first problem.
fn tasks(
    mut read: Vec<Read>,
    by_id: &HashMap<String, usize>,
) -> Result<Vec<AgentTask>, (u64, String)> {
    let forker = forkers(&read, by_id)?;
    check_joins(&read, by_id, &forker)?;
    // Each root's tree, breadth first: a session's place in its task, and the task's members.
    let mut place = vec![usize::MAX; read.len()];
    let mut members: Vec<Vec<usize>> = Vec::new();
    for root in (0..read.len()).filter(|&i| forker[i].is_none()) {
        let mut order = Vec::new();
        let mut queue = VecDeque::from([(root, 0usize)]);
        while let Some((s, depth)) = queue.pop_front() {
            if depth > MAX_DEPTH {
                return Err((
                    read[s].line,
                    format!(
                        "session `{}` is nested {depth} subagents deep; at most {MAX_DEPTH} \
                         (fork it from a shallower session)",
                        read[s].id
                    ),
                ));
            }
            place[s] = order.len();
            order.push(s);
            if order.len() > MAX_TASK_SESSIONS {
                return Err((
                    read[root].line,
                    format!(
                        "the task of session `{}` has more than {MAX_TASK_SESSIONS} sessions \
                         (its subagents and theirs); split it into several tasks",
                        read[root].id
                    ),
                ));
            }
            for ids in &read[s].forks {
                queue.extend(ids.iter().map(|id| (by_id[id], depth + 1)));
            }
        }
        members.push(order);
    }
    if let Some(s) = place.iter().position(|&p| p == usize::MAX) {
        return Err((
            read[s].line,
            format!(
                "session `{}` is forked only from within a cycle of forks (a subagent that \
                 forks its own ancestor); a task must start at a session no turn forks",
                read[s].id
            ),
        ));
    }
    let mut tasks = Vec::with_capacity(members.len());
    for order in members {
        let mut sessions = Vec::with_capacity(order.len());
        for &s in &order {
            let r = &mut read[s];
            let local = |ids: &Vec<String>| ids.iter().map(|id| place[by_id[id]] as u16).collect();
            for (k, t) in r.turns.iter_mut().enumerate() {
                t.fork = local(&r.forks[k]);
                t.join = local(&r.joins[k]);
            }
            sessions.push(AgentSession {
                id: std::mem::take(&mut r.id),
                turns: std::mem::take(&mut r.turns),
            });
        }
        tasks.push(AgentTask { sessions });
    }
    Ok(tasks)
}

/// Who forks each session, checking every fork names a known session, forked once.
fn forkers(read: &[Read], by_id: &HashMap<String, usize>) -> Result<Vec<Forker>, (u64, String)> {
    let mut forker: Vec<Forker> = vec![None; read.len()];
    for (s, r) in read.iter().enumerate() {
        for (k, ids) in r.forks.iter().enumerate() {
            for id in ids {
                let Some(&child) = by_id.get(id) else {
                    return Err((
                        r.line,
                        format!(
                            "session `{}`, turn {k} forks `{id}`, which no line of the file \
                             defines; add a line {{\"id\": \"{id}\", \"turns\": […]}} or drop \
                             the fork",
                            r.id
                        ),
                    ));
                };
                if child == s {
                    return Err((
                        r.line,
                        format!("session `{id}`, turn {k} forks itself; a turn forks subagents"),
                    ));
                }
                if let Some((other, turn)) = forker[child] {
                    return Err((
                        r.line,
                        format!(
                            "session `{}`, turn {k} forks `{id}`, which session `{}` already \
                             forks on its turn {turn} (line {}); a subagent has one parent: \
                             give the second one its own id",
                            r.id, read[other].id, read[other].line
                        ),
                    ));
                }
                forker[child] = Some((s, k));
            }
        }
    }
    Ok(forker)
}

/// Every join names a subagent its session forked on an earlier turn, joined once.
fn check_joins(
    read: &[Read],
    by_id: &HashMap<String, usize>,
    forker: &[Forker],
) -> Result<(), (u64, String)> {
    for (s, r) in read.iter().enumerate() {
        let mut joined = Vec::new();
        for (k, ids) in r.joins.iter().enumerate() {
            for id in ids {
                let own = by_id
                    .get(id)
                    .is_some_and(|&c| matches!(forker[c], Some((p, f)) if p == s && f < k));
                if !own {
                    let known = if by_id.contains_key(id) {
                        "which this session did not fork on an earlier turn"
                    } else {
                        "which no line of the file defines"
                    };
                    return Err((
                        r.line,
                        format!(
                            "session `{}`, turn {k} joins `{id}`, {known}; a turn can wait only \
                             for subagents its own session forked before it",
                            r.id
                        ),
                    ));
                }
                if joined.contains(id) {
                    return Err((
                        r.line,
                        format!("session `{}` joins `{id}` twice; join it once", r.id),
                    ));
                }
                joined.push(id.clone());
            }
        }
        if r.turns.first().is_some_and(|t| t.wait_ms > 0) && forker[s].is_none() {
            return Err((
                r.line,
                format!(
                    "session `{}` starts a task, and its first turn leaves at the task's \
                     arrival: drop its `wait_ms` (the arrival process spaces tasks)",
                    r.id
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "agentic_tests.rs"]
mod tests;
