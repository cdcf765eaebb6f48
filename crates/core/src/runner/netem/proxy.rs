//! The shaping proxy: a loopback listener per upstream, on a thread of its own with a
//! single-threaded runtime (its timers and copies never run on the client's runtime, and its
//! CPU time is not counted as the client's). Each accepted connection is joined to a fresh
//! connection to the upstream and relayed both ways through a [`Lane`].
//!
//! A relay reads a segment, plans it, and hands it to its writer through a bounded queue; the
//! writer sleeps until the segment's instant and writes it. The queue bounds what a direction
//! holds ([`QUEUED`] segments of at most [`READ`] bytes), so a fast sender meets
//! backpressure, as from a real link, instead of filling memory. Segments are split off a
//! `BytesMut` block ([`BLOCK`]) and the block reclaimed once they are written: nothing is
//! allocated per segment.
//!
//! A connection ends when either direction ends: a clean end of stream is passed on after the
//! bytes before it (a server's close mid-answer reaches the client as the same close); a
//! reset or a failed write resets both sides, so neither waits on the other. The run's end
//! stops every connection at once.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc;
use std::thread;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc as queue, oneshot};
use tokio::time::Instant;

use super::schedule::{Direction, Lane};
use crate::metrics::NetworkTally;
use crate::protocol::NetworkShape;
use crate::runner::cpu::ThreadId;

/// The most bytes one read takes: one segment.
const READ: usize = 16 * 1024;
/// What a direction's read buffer is allocated in: segments are split off it until it runs
/// out, and a new block is taken only then (or the old one reclaimed once every segment cut
/// from it is written), so a stream of small SSE events costs one allocation per block.
const BLOCK: usize = 64 * 1024;
/// Segments a direction may hold before it stops reading (4 MiB at most).
const QUEUED: usize = 256;
/// How long the accept loop waits after a failed accept (out of descriptors, say) before
/// trying again, instead of spinning.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);
/// The longest the proxy waits to connect to the upstream (the client's own connect bound),
/// so that a connection to an address that never answers does not outlive the client's.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The running proxy; stopped (and its tally taken) by [`Proxy::finish`], or on drop.
pub struct Proxy {
    /// The loopback address standing in for each upstream, in the order given.
    pub addrs: Vec<SocketAddr>,
    pub thread: Option<ThreadId>,
    stop: Option<oneshot::Sender<()>>,
    join: Option<thread::JoinHandle<NetworkTally>>,
}

/// What every connection of the proxy shares (on its one thread).
struct Shared {
    shape: NetworkShape,
    seed: u64,
    epoch: Instant,
    /// Connections accepted so far: the next one's number, which keys its lanes.
    next: Cell<u64>,
    tally: RefCell<NetworkTally>,
}

impl Proxy {
    /// Listens on loopback for each of `upstreams` (`host:port`), shaping with `shape` and
    /// drawing from `seed`.
    pub fn start(upstreams: Vec<String>, shape: NetworkShape, seed: u64) -> std::io::Result<Proxy> {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let join =
            crate::runner::cpu::spawn_with_runtime("infermeter-netem".into(), move |rt, tid| {
                let rt = match rt {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return NetworkTally::default();
                    }
                };
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, serve(upstreams, shape, seed, ready_tx, tid, stop_rx))
            })?;
        let (addrs, thread) = ready_rx
            .recv()
            .map_err(|_| std::io::Error::other("the network proxy's thread ended"))??;
        Ok(Proxy {
            addrs,
            thread,
            stop: Some(stop_tx),
            join: Some(join),
        })
    }

    /// Stops every connection and returns what the proxy carried.
    pub fn finish(mut self) -> NetworkTally {
        self.stop_and_join().unwrap_or_default()
    }

    fn stop_and_join(&mut self) -> Option<NetworkTally> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.join.take()?.join().ok()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

type Ready = mpsc::Sender<std::io::Result<(Vec<SocketAddr>, Option<ThreadId>)>>;

/// The proxy thread's body: binds, reports ready, accepts until told to stop.
async fn serve(
    upstreams: Vec<String>,
    shape: NetworkShape,
    seed: u64,
    ready: Ready,
    tid: Option<ThreadId>,
    stop: oneshot::Receiver<()>,
) -> NetworkTally {
    let mut listeners = Vec::new();
    for _ in &upstreams {
        match TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await {
            Ok(l) => listeners.push(l),
            Err(e) => {
                let _ = ready.send(Err(e));
                return NetworkTally::default();
            }
        }
    }
    let addrs: std::io::Result<Vec<SocketAddr>> =
        listeners.iter().map(TcpListener::local_addr).collect();
    let failed = addrs.is_err();
    let _ = ready.send(addrs.map(|a| (a, tid)));
    if failed {
        return NetworkTally::default();
    }
    let shared = Rc::new(Shared {
        shape,
        seed,
        epoch: Instant::now(),
        next: Cell::new(0),
        tally: RefCell::new(NetworkTally::default()),
    });
    let accepting = listeners
        .into_iter()
        .zip(upstreams)
        .map(|(l, up)| tokio::task::spawn_local(accept(l, up, shared.clone())));
    let accepting: Vec<_> = accepting.collect();
    // A dropped sender (the run ended without `finish`) stops the proxy too.
    let _ = stop.await;
    for a in &accepting {
        a.abort();
    }
    // Every task ends with the runtime; the tally is complete once they stop counting.
    drop(accepting);
    shared.tally.replace(NetworkTally::default())
}

/// Accepts connections for one upstream until the proxy stops.
async fn accept(listener: TcpListener, upstream: String, shared: Rc<Shared>) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        match listener.accept().await {
            Ok((client, _)) => {
                let n = shared.next.get();
                shared.next.set(n + 1);
                conns.spawn_local(connection(client, upstream.clone(), n, shared.clone()));
            }
            Err(e) => {
                tracing::debug!("network proxy: accept failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
        // Reap finished connections so the set holds only live ones.
        while conns.try_join_next().is_some() {}
    }
}

/// Relays one connection both ways until either direction ends.
async fn connection(client: TcpStream, upstream: String, n: u64, shared: Rc<Shared>) {
    let accepted = shared.epoch.elapsed().as_nanos() as u64;
    let connect = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&upstream));
    let server = match connect
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
    {
        Ok(s) => s,
        Err(e) => {
            // The client sees its connection reset before any answer, as from a proxy
            // that could not reach the server.
            tracing::debug!("network proxy: connecting to {upstream} failed: {e}");
            let _ = client.set_zero_linger();
            return;
        }
    };
    shared.tally.borrow_mut().connection();
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    // A new connection costs its handshake's round trip before its first request can leave.
    let handshake = accepted.saturating_add(2 * shared.shape.delay.as_nanos());
    let (client_r, mut client_w) = client.into_split();
    let (server_r, mut server_w) = server.into_split();
    let up = Lane::new(&shared.shape, shared.seed, n, Direction::Up);
    let down = Lane::new(&shared.shape, shared.seed, n, Direction::Down);
    let ended = tokio::select! {
        e = relay(client_r, &mut server_w, (up, Direction::Up, n), handshake, &shared) => e,
        e = relay(server_r, &mut client_w, (down, Direction::Down, n), 0, &shared) => e,
    };
    if ended == End::Broken {
        // Pass a reset on as a reset: whichever side is still there sees the same failure
        // it would have seen without the proxy.
        let _ = client_w.as_ref().set_zero_linger();
        let _ = server_w.as_ref().set_zero_linger();
    }
}

/// How a direction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The sender closed after its last byte, which was delivered.
    Closed,
    /// A read or write failed.
    Broken,
}

/// One direction (of connection number `conn`): reads segments from `from`, plans each, and
/// writes it to `to` at its instant. `ready` is the earliest planning instant (a new
/// connection's handshake).
async fn relay(
    mut from: OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    (mut lane, dir, conn): (Lane, Direction, u64),
    ready: u64,
    shared: &Shared,
) -> End {
    let up = dir == Direction::Up;
    let (tx, rx) = queue::channel::<(u64, Bytes)>(QUEUED);
    let read = async move {
        let mut buf = BytesMut::with_capacity(BLOCK);
        loop {
            buf.reserve(READ);
            match from.read_buf(&mut (&mut buf).limit(READ)).await {
                Ok(0) => return End::Closed,
                Ok(n) => {
                    let now = shared.epoch.elapsed().as_nanos() as u64;
                    let plan = lane.plan(now.max(ready), n);
                    let planned = plan.at.saturating_sub(now);
                    {
                        let mut tally = shared.tally.borrow_mut();
                        tally.planned(up, n, planned, plan.lost);
                        if conn == 0 {
                            tally.first_draw(up, plan.draw);
                        }
                    }
                    if tx.send((plan.at, buf.split().freeze())).await.is_err() {
                        return End::Broken;
                    }
                }
                Err(_) => return End::Broken,
            }
        }
    };
    let writer = deliver(rx, to, shared);
    tokio::pin!(writer);
    let read_end = tokio::select! {
        r = read => r,
        // The writer ends first only when its side failed: stop reading at once rather than
        // wait for a sender who may never send again.
        w = &mut writer => return w,
    };
    // The reader owns the queue's sender: now that it has ended, the writer finishes what
    // the queue holds, then stops.
    match writer.await {
        End::Broken => End::Broken,
        End::Closed => read_end,
    }
}

/// Writes each queued segment at its planned instant, counting how late it went out.
async fn deliver(
    mut rx: queue::Receiver<(u64, Bytes)>,
    to: &mut OwnedWriteHalf,
    shared: &Shared,
) -> End {
    while let Some((at, bytes)) = rx.recv().await {
        let due = shared.epoch + std::time::Duration::from_nanos(at);
        tokio::time::sleep_until(due).await;
        if to.write_all(&bytes).await.is_err() {
            return End::Broken;
        }
        let late = Instant::now().saturating_duration_since(due);
        shared.tally.borrow_mut().delivered(late.as_nanos() as u64);
    }
    End::Closed
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::Duration as StdDuration;

    use super::*;
    use crate::units::{Duration, Percent};

    fn shape(delay_ms: u64) -> NetworkShape {
        NetworkShape {
            delay: Duration::from_millis(delay_ms),
            jitter: Duration::ZERO,
            bandwidth: None,
            loss: Percent(0.0),
        }
    }

    /// An upstream that writes `n` bytes to its first connection, then closes it.
    fn sender(n: usize) -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let block = vec![7u8; 64 * 1024];
            let mut left = n;
            while left > 0 {
                let k = left.min(block.len());
                s.write_all(&block[..k]).unwrap();
                left -= k;
            }
        });
        addr
    }

    #[test]
    fn a_large_answer_passes_whole_and_its_close_after_it() {
        let n = 8 << 20;
        let proxy = Proxy::start(vec![sender(n)], shape(1), 0).unwrap();
        let mut c = std::net::TcpStream::connect(proxy.addrs[0]).unwrap();
        c.set_read_timeout(Some(StdDuration::from_secs(30)))
            .unwrap();
        let mut got = Vec::new();
        // Ends at the upstream's close, passed on after the last byte: no hang, no reset.
        c.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), n);
        assert!(got.iter().all(|b| *b == 7));
        let tally = proxy.finish().summary(shape(1));
        assert_eq!(tally.bytes_down, n as u64);
        assert!(tally.segments_down >= (n / READ) as u64, "{tally:?}");
        assert_eq!(tally.connections, 1);
        assert!(tally.planned_delay_mean_ms >= 1.0, "{tally:?}");
    }

    #[test]
    fn an_upstream_that_refuses_resets_the_client_at_once() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let gone = l.local_addr().unwrap().to_string();
        drop(l);
        let proxy = Proxy::start(vec![gone], shape(0), 0).unwrap();
        let mut c = std::net::TcpStream::connect(proxy.addrs[0]).unwrap();
        c.set_read_timeout(Some(StdDuration::from_secs(30)))
            .unwrap();
        let mut buf = [0u8; 16];
        // A reset (or at worst an end), never a read that waits out the timeout.
        match c.read(&mut buf) {
            Ok(0) => {}
            Ok(k) => panic!("read {k} bytes from nowhere"),
            Err(e) => assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}"),
        }
        assert_eq!(proxy.finish().summary(shape(0)).connections, 0);
    }
}
