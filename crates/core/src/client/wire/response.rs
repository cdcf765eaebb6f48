//! A response's body: its framing decoded straight into the SSE decoder's buffer, drained
//! when nobody reads it, and its connection pooled (or held) only when read exactly to its end.

use std::io;
use std::time::Instant;

use tokio::io::AsyncReadExt;

use super::super::framing::Framing;
use super::{BodyError, Held, MAX_DRAIN, READ, Response, Wire};

impl Response {
    /// Decodes the next body bytes into `conn.events`; `false` once the body has ended.
    /// Waits for the network only when nothing undecoded is left.
    pub async fn fill(&mut self) -> Result<bool, BodyError> {
        if self.framing.is_done() {
            return Ok(false);
        }
        let c = &mut self.conn;
        if c.pos >= c.raw.len() {
            c.raw.clear();
            c.pos = 0;
            c.raw.reserve(READ);
            if c.stream.read_buf(&mut c.raw).await? == 0 {
                if self.framing == Framing::Close {
                    self.framing = Framing::Length(0);
                    self.reusable = false;
                    return Ok(false);
                }
                let cut = io::Error::new(io::ErrorKind::UnexpectedEof, "body cut short");
                return Err(cut.into());
            }
        }
        let used = self.framing.decode(&c.raw[c.pos..], c.events.spare())?;
        c.pos += used;
        if c.pos < c.raw.len() {
            // Bytes past the body's end: the connection cannot be reused.
            self.reusable = false;
            c.pos = c.raw.len();
        }
        Ok(true)
    }

    /// Reads the rest of the body, discarding it; `true` when it ended within bounds.
    pub async fn drain(&mut self) -> bool {
        let mut read = 0;
        loop {
            match self.fill().await {
                Ok(true) => {
                    read += self.conn.events.discard();
                    if read > MAX_DRAIN {
                        return false;
                    }
                }
                Ok(false) => {
                    self.conn.events.discard();
                    return true;
                }
                Err(_) => return false,
            }
        }
    }

    /// Returns the connection to the pool if its response was read to its end.
    pub fn finish(self, wire: &Wire) {
        self.finish_to(wire, None);
    }

    /// Like [`finish`](Self::finish), the connection kept in `held` (when given) rather than
    /// the pool.
    pub fn finish_to(self, wire: &Wire, held: Option<&mut Held>) {
        if self.reusable && self.framing.is_done() && self.conn.pos >= self.conn.raw.len() {
            let mut conn = self.conn;
            conn.events.reset();
            if conn.raw.capacity() > 4 * READ {
                conn.raw = Vec::with_capacity(READ);
            }
            if conn.out.capacity() > 4 * READ {
                conn.out = Vec::new();
            }
            match held {
                Some(h) if !h.last => {
                    conn.idle_since = Instant::now();
                    h.conn = Some(conn);
                }
                _ => wire.give_back(conn),
            }
        }
    }
}
