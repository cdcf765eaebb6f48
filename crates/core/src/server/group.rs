//! The server's process group. The server is started as the leader of a group of its own
//! (`process_group(0)`), so that a signal reaches everything it started (a wrapper script's
//! child, a `docker run` client, an engine's workers) and a terminal's Ctrl-C reaches only
//! infermeter, which then stops the server itself. Whatever happens, no group outlives the
//! run: a [`Group`] dropped before [`Group::release`] kills its group, and every group alive
//! is listed for [`kill_all`], which the command line calls before it exits on a second
//! Ctrl-C (an exit that runs no destructors).

use std::sync::{Mutex, PoisonError};

/// The groups started and not yet released.
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// One started server's process group (its id is the leader's pid).
pub(super) struct Group {
    pgid: i32,
    released: bool,
}

impl Group {
    pub fn new(pgid: i32) -> Group {
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(pgid);
        Group {
            pgid,
            released: false,
        }
    }

    /// Sends `signal` to every process of the group; whether any received it.
    pub fn signal(&self, signal: i32) -> bool {
        // SAFETY: killpg(2) only sends a signal; the id is a group this process created, kept
        // until release, after which no signal is sent to it.
        unsafe { libc::killpg(self.pgid, signal) == 0 }
    }

    /// Whether a process of the group is left (a zombie not yet reaped counts).
    pub fn alive(&self) -> bool {
        self.signal(0)
    }

    /// The group is gone, or killed: forgets it.
    pub fn release(&mut self) {
        self.released = true;
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|g| *g != self.pgid);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.released {
            // An error path or a panic left it running: no server outlives the run.
            self.signal(libc::SIGKILL);
            self.release();
        }
    }
}

/// Kills every server group still alive, at once (SIGKILL): for a process about to exit
/// without running destructors.
pub fn kill_all() {
    let live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    for pgid in live.iter() {
        // SAFETY: as in `Group::signal`; the id is removed from the list on release.
        unsafe {
            libc::killpg(*pgid, libc::SIGKILL);
        }
    }
}
