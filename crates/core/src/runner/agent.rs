//! Agentic tasks in the runner. A task is one unit of arrival, like a session: its root's first
//! turn leaves at the scheduled instant (open loop) or when its worker is free (closed loop).
//! Each turn of a session is due at the end of the previous turn's reply (or of the last
//! subagent it joins, whichever is later; a subagent's first turn: its fork) plus the turn's
//! tool wait; its latencies start at that due instant, so a late client cannot hide behind a
//! tool wait, and no task's lateness moves another task's schedule. A turn that forks starts
//! its subagents as tasks of their own on the runtime when its reply is complete; a turn that
//! joins waits for them. A session waits for the subagents it never joined before it ends, so
//! the task (and a closed-loop worker) is done when all its sessions are.
//!
//! The task's completion time goes on the record of the request that completed it: the
//! sessions count how many of them are still running (forks added when the forking reply
//! completes, each session taken off at its last reply), so the one whose last reply brings
//! the count to zero is the task's end. A failed turn ends its session and fails the task (no
//! completion time; its other sessions run on). Bookkeeping is per task and bounded by its
//! sessions (at most `dataset::MAX_TASK_SESSIONS`), whatever the length of the run.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;

use super::send::{Body, StageShared, since};
use crate::dataset::AgentTurn;
use crate::metrics::RequestRecord;
use crate::plan::RequestRecipe;

/// What the sessions of one running task share.
struct TaskRun {
    /// The plan's session index (the stage's unit) and the data set item holding the task.
    index: u64,
    item: u64,
    /// The root's first turn's scheduled instant (ns from the stage start).
    start_ns: u64,
    /// Sessions started and not yet at their end.
    running: AtomicU32,
    failed: AtomicBool,
}

impl TaskRun {
    /// A session ends; true when it was the task's last.
    fn end_session(&self) -> bool {
        self.running.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// What a turn's record says of the task: forks counted on its reply, its session's end
    /// on its last turn or a failure, the completion time on the task's last reply.
    fn on_record(&self, turn: &AgentTurn, last: bool, rec: &mut RequestRecord) {
        if !rec.ok() {
            self.failed.store(true, Ordering::Release);
            self.end_session();
            return;
        }
        self.running
            .fetch_add(turn.fork.len() as u32, Ordering::AcqRel);
        if last && self.end_session() && !self.failed.load(Ordering::Acquire) {
            rec.task_ns = Some(rec.done_ns.saturating_sub(self.start_ns));
        }
    }
}

/// The item holding task `index` of the stage, when its data set is agentic.
pub(super) fn task_item(sh: &StageShared, index: u64) -> Option<u64> {
    let item = sh.plan.session(&sh.stage, index).item;
    sh.factory
        .agent_task(sh.stage.dataset, item)
        .is_some()
        .then_some(item)
}

/// The body of turn `k` of session `s` (off the hot path: built before its due instant).
pub(super) fn turn_body(sh: &StageShared, index: u64, item: u64, s: usize, k: usize) -> Body {
    let prompt = sh.factory.agent_prompt(sh.stage.dataset, item, s, k);
    sh.body_for(&recipe(sh, index, item, s, k), prompt)
}

fn recipe(sh: &StageShared, index: u64, item: u64, s: usize, k: usize) -> RequestRecipe {
    let context = sh
        .plan
        .datasets
        .get(sh.stage.dataset)
        .map_or(0, |d| d.context.extra_tokens());
    let task = sh.factory.agent_task(sh.stage.dataset, item);
    let turn = task.and_then(|t| t.sessions.get(s)?.turns.get(k));
    RequestRecipe {
        index,
        input_tokens: task
            .map_or(1, |t| t.input_tokens(s, k))
            .saturating_add(context),
        output_tokens: turn.map_or(1, |t| t.output_tokens),
        item,
        labels: sh.stage.labels(index),
        dataset: sh.stage.dataset,
    }
}

/// Runs task `index` (in item `item`) to its end; its first turn is due at `scheduled_ns`.
pub(super) async fn run(
    sh: Arc<StageShared>,
    index: u64,
    item: u64,
    first: Body,
    scheduled_ns: u64,
) {
    let task = Arc::new(TaskRun {
        index,
        item,
        start_ns: scheduled_ns,
        running: AtomicU32::new(1),
        failed: AtomicBool::new(false),
    });
    session(sh, task, (0, 0), Some(first), scheduled_ns).await;
}

type Running = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Session `s` of the task at `depth` (0: the root), started at `start_ns` (boxed: a session
/// starts others).
fn session(
    sh: Arc<StageShared>,
    task: Arc<TaskRun>,
    (s, depth): (usize, u8),
    first: Option<Body>,
    start_ns: u64,
) -> Running {
    Box::pin(async move {
        let mut children: Vec<(u16, JoinHandle<()>)> = Vec::new();
        if !turns(&sh, &task, (s, depth), first, start_ns, &mut children).await {
            task.failed.store(true, Ordering::Release);
            task.end_session();
        }
        for (_, child) in children {
            if !joined(&sh, child).await {
                return;
            }
        }
    })
}

/// Sends session `s`'s turns in order; false when it stopped before its last turn without a
/// record saying so (the stage stopped during a wait).
async fn turns(
    sh: &Arc<StageShared>,
    task: &Arc<TaskRun>,
    (s, depth): (usize, u8),
    mut first: Option<Body>,
    start_ns: u64,
    children: &mut Vec<(u16, JoinHandle<()>)>,
) -> bool {
    let Some(whole) = sh.factory.agent_task(sh.stage.dataset, task.item) else {
        return false;
    };
    let Some(this) = whole.sessions.get(s) else {
        return false;
    };
    let mut ready_ns = start_ns;
    for (k, turn) in this.turns.iter().enumerate() {
        for j in &turn.join {
            if let Some(at) = children.iter().position(|(c, _)| c == j) {
                if !joined(sh, children.swap_remove(at).1).await {
                    return false;
                }
                ready_ns = ready_ns.max(since(sh.t0));
            }
        }
        let due_ns = ready_ns.saturating_add(u64::from(turn.wait_ms) * 1_000_000);
        let body = match first.take() {
            Some(b) => b,
            None => turn_body(sh, task.index, task.item, s, k),
        };
        if !until(sh, due_ns).await {
            return false;
        }
        let last = k + 1 == this.turns.len();
        let recipe = recipe(sh, task.index, task.item, s, k);
        // Every session of the task shares its index: the trace id tells them apart by the
        // turn's position in the whole task.
        let turns = (k as u32, whole.turn_position(s, k));
        let sent = sh
            .send_then(body, recipe, due_ns, turns, |rec| {
                // A subagent's turns are numbered in its own session; its depth says whose.
                rec.depth = depth;
                task.on_record(turn, last, rec)
            })
            .await;
        if sent.is_none() {
            // The record said so: the session ended there.
            return true;
        }
        ready_ns = since(sh.t0);
        for &c in &turn.fork {
            let at = (usize::from(c), depth.saturating_add(1));
            let child = session(sh.clone(), task.clone(), at, None, ready_ns);
            children.push((c, tokio::spawn(child)));
        }
    }
    true
}

/// Waits until `due_ns` from the stage start; false when the stage stops first.
async fn until(sh: &StageShared, due_ns: u64) -> bool {
    let at = sh.t0 + Duration::from_nanos(due_ns);
    if sh.interrupt.is_cancelled() || sh.cancel.is_cancelled() {
        return false;
    }
    tokio::select! {
        _ = tokio::time::sleep_until(at.into()) => true,
        _ = sh.cancel.cancelled() => false,
        _ = sh.interrupt.cancelled() => false,
    }
}

/// Waits for a subagent to end; false when the stage's requests are cancelled first (an
/// interrupt only stops sending: the subagent then ends between its turns).
async fn joined(sh: &StageShared, child: JoinHandle<()>) -> bool {
    tokio::select! {
        _ = child => true,
        _ = sh.cancel.cancelled() => false,
    }
}
