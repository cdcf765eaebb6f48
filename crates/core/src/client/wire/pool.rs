//! The keep-alive pool: idle connections taken newest first and given back oldest first,
//! each checked fit (not idle too long, nothing arrived) before it carries a request; a
//! session's held connection; a fresh connection when none is fit.

use std::io;
use std::time::Instant;

use tokio::net::TcpStream;

use super::super::sse::Events;
use super::{Conn, Held, POOL_IDLE_TIMEOUT, READ, SendError, Wire};

impl Held {
    /// Marks the next request as the session's last, so its connection is pooled after it
    /// rather than held (and closed when the session is dropped).
    pub fn last(&mut self) {
        self.last = true;
    }

    /// Gives the held connection (if any, and still fit) to `wire`'s pool: the session is
    /// over, or went on elsewhere.
    pub fn release_to(&mut self, wire: &Wire) {
        if let Some(mut conn) = self.conn.take()
            && conn.fit()
        {
            wire.give_back(conn);
        }
    }
}

impl Wire {
    /// The same target and headers with a pool of its own, empty: a `--cpus` shard's, so
    /// that its requests never take the lock of another shard's pool (nor its connections,
    /// registered with another shard's reactor).
    pub fn with_own_pool(&self) -> Wire {
        Wire {
            authority: self.authority.clone(),
            post_head: self.post_head.clone(),
            idle: std::sync::Mutex::new(Vec::new()),
            max_idle: self.max_idle,
            connect_timeout: self.connect_timeout,
            common: self.common.clone(),
            affinity: self.affinity.clone(),
            priority: self.priority.clone(),
        }
    }

    /// An idle connection fit to carry a request, newest first; the others are closed.
    pub(super) fn take_idle(&self) -> Option<Conn> {
        loop {
            let mut conn = self.idle.lock().ok()?.pop()?;
            if conn.fit() {
                return Some(conn);
            }
            tracing::debug!("closing a pooled connection: idle too long, or not quiet");
        }
    }

    /// Puts a connection whose last response was read to its end back in the pool, closing
    /// any that have been idle too long.
    pub fn give_back(&self, mut conn: Conn) {
        conn.idle_since = Instant::now();
        let mut stale = Vec::new();
        if let Ok(mut idle) = self.idle.lock() {
            // Oldest first: they went back in order.
            let old = idle
                .iter()
                .take_while(|c| {
                    conn.idle_since.saturating_duration_since(c.idle_since) > POOL_IDLE_TIMEOUT
                })
                .count();
            if old > 0 {
                stale.extend(idle.drain(..old));
            }
            if idle.len() < self.max_idle {
                idle.push(conn);
            }
        }
        // Closed outside the lock.
        drop(stale);
    }

    pub(super) async fn connect(&self, max_event: usize) -> Result<Conn, SendError> {
        let stream =
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(&self.authority))
                .await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return Err(SendError::Connect(e)),
                Err(_) => return Err(SendError::ConnectTimeout),
            };
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            stream,
            raw: Vec::with_capacity(READ),
            pos: 0,
            out: Vec::new(),
            events: Events::new(max_event),
            idle_since: Instant::now(),
        })
    }
}

impl Conn {
    /// Nothing has arrived on this idle connection since its last response ended: no stray
    /// byte, no close. Costs no system call when so: tokio answers from the readiness its
    /// reactor has seen, and the last read, short, left none.
    /// Not idle past [`POOL_IDLE_TIMEOUT`], and quiet: fit to carry a request.
    pub(super) fn fit(&mut self) -> bool {
        Instant::now().saturating_duration_since(self.idle_since) <= POOL_IDLE_TIMEOUT
            && self.quiet()
    }

    fn quiet(&mut self) -> bool {
        let mut probe = [0u8; 1];
        matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}
