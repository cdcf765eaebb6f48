//! `--cpus N` with N > 1: one shard per CPU, each a thread (`im-shard-K`: `/proc` keeps 15
//! characters of a name) pinned to its CPU running a current-thread tokio runtime. A stage gives each shard its own dispatcher (an interleaved
//! slice of the schedule), connection pools, counters and record channel (see
//! `shard_stage.rs`), so nothing a request does writes memory another shard writes.
//!
//! Why a current-thread runtime per pinned thread rather than the multi-thread runtime (or a
//! `LocalSet` on each of its workers): on a multi-thread runtime an idle worker steals queued
//! tasks from a busy one (a request's task then runs, and its socket wakes, on another core),
//! every spawn and task end takes a lock of the runtime's shared task list, and a spawn may
//! wake a parked worker through the runtime's shared idle state; a `LocalSet` would still sit
//! on a worker whose other tasks move. A current-thread runtime has one run queue, one
//! reactor and one timer, all its own: a request spawned by a shard's dispatcher is polled on
//! that shard's thread to its end, and its socket is registered with that shard's reactor.

use std::sync::mpsc;
use std::thread;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// The run's shards; their threads stop when this is dropped.
pub struct Shards {
    shards: Vec<Shard>,
}

struct Shard {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Shards {
    /// One shard per CPU of `cpus`, each thread pinned to its CPU (where the system allows:
    /// unpinned, it still runs within the process's CPUs).
    pub fn start(cpus: &[usize]) -> std::io::Result<Shards> {
        let mut shards = Vec::with_capacity(cpus.len());
        for (k, &cpu) in cpus.iter().enumerate() {
            let (handle_tx, handle_rx) = mpsc::channel();
            let (stop, stopped) = oneshot::channel::<()>();
            let thread = super::cpu::spawn_with_runtime(format!("im-shard-{k}"), move |rt, _| {
                pin_to(cpu);
                let rt = match rt {
                    Ok(rt) => rt,
                    Err(e) => return drop(handle_tx.send(Err(e))),
                };
                let _ = handle_tx.send(Ok(rt.handle().clone()));
                // Drives the shard's tasks until the run is over.
                let _ = rt.block_on(stopped);
                rt.shutdown_timeout(std::time::Duration::from_millis(100));
            })?;
            let handle = handle_rx
                .recv()
                .map_err(|_| std::io::Error::other("a shard's thread ended at its start"))??;
            shards.push(Shard {
                handle,
                stop: Some(stop),
                thread: Some(thread),
            });
        }
        Ok(Shards { shards })
    }

    /// How many shards there are.
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// Shard `k`'s runtime.
    pub(super) fn handle(&self, k: usize) -> &Handle {
        &self.shards[k].handle
    }
}

impl Drop for Shards {
    fn drop(&mut self) {
        for s in &mut self.shards {
            if let Some(stop) = s.stop.take() {
                let _ = stop.send(());
            }
        }
        for s in &mut self.shards {
            if let Some(t) = s.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// Pins the calling thread to `cpu`; left as it is where that fails (the process's mask,
/// which `--cpus` set, still holds it).
#[cfg(target_os = "linux")]
fn pin_to(cpu: usize) {
    if cpu >= 1024 {
        return;
    }
    // SAFETY: cpu_set_t is plain data; `cpu` is below CPU_SETSIZE (checked above).
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        tracing::debug!(
            "shard not pinned to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_to(_: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shard_runs_its_tasks_on_its_own_thread() {
        let cpu = super::super::cpu::allowed_cpus().map_or(0, |c| c[0]);
        let shards = Shards::start(&[cpu, cpu]).unwrap();
        assert_eq!(shards.len(), 2);
        let names: Vec<String> = (0..2)
            .map(|k| {
                let h = shards
                    .handle(k)
                    .spawn(async { thread::current().name().unwrap_or_default().to_string() });
                shards.handle(k).block_on(h).unwrap()
            })
            .collect();
        assert_eq!(names, ["im-shard-0", "im-shard-1"]);
        drop(shards);
    }
}
