//! uring-vs-epoll: issue #41's experiment, not part of infermeter.
//!
//! A closed-loop streaming client, the same work done two ways, to decide whether io_uring is
//! worth a second I/O path in the client. `--conns N` keep-alive connections each send
//! `POST /completions` (100 streamed tokens), read the chunked SSE response until `[DONE]` and
//! the chunked terminator, and send the next request, until `--requests R` have finished.
//! Every byte read is scanned once (a word-at-a-time newline search) in both modes.
//!
//! - `--mode epoll`: nonblocking sockets in a level-triggered epoll; one `recv` of up to
//!   16 KiB per readiness (like the real client: a short read does not try again); one `send`.
//! - `--mode uring`: one multishot `IORING_OP_RECV` per connection into a provided buffer ring
//!   (`IORING_REGISTER_PBUF_RING`, `--bufs` buffers of 16 KiB), sends as `IORING_OP_SEND`, one
//!   `submit_and_wait(1)` loop harvesting every completion (`SINGLE_ISSUER | DEFER_TASKRUN`
//!   where the kernel has them). If io_uring cannot be set up it says so and runs epoll.
//!
//! Prints, per request from the first send to the last response: user and system µs
//! (getrusage), µs on a CPU (/proc/self/schedstat), reads and waits. The result and verdict
//! are in docs/performance.md, "io_uring against epoll (issue #41)". Run (from the repository root; the simulator prints its URL):
//!
//! ```sh
//! CARGO_TARGET_DIR=/work/tgt-uring cargo build --release --manifest-path scripts/uring-vs-epoll/Cargo.toml
//! infermeter sim --listen 127.0.0.1:0 --decode-base 10ms ...   # http://127.0.0.1:PORT/v1
//! /work/tgt-uring/release/uring-vs-epoll --mode uring --conns 100 --requests 3000 --url http://127.0.0.1:PORT/v1
//! ```
//! `scripts/uring-vs-epoll/run.sh` runs the whole comparison (3 runs a case, and strace counts).

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

const BUF: usize = 16 * 1024;
const SEND: u64 = 1 << 32;

struct Args {
    mode: String,
    conns: usize,
    requests: u64,
    url: String,
    bufs: u16,
}

/// Counts kept by both modes.
#[derive(Default)]
struct Stats {
    done: u64,
    sent: u64,
    reads: u64,
    events: u64,
    waits: u64,
    rearms: u64,
}

/// Where one connection's response stands: the last bytes of the previous read (a pattern
/// may span two reads) and whether `[DONE]` has been seen.
#[derive(Default, Clone)]
struct Conn {
    tail: u64,
    seen_done: bool,
}

fn parse_args() -> Args {
    let mut a =
        Args { mode: "epoll".into(), conns: 10, requests: 100, url: String::new(), bufs: 1024 };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let v = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--mode" => a.mode = v,
            "--conns" => a.conns = v.parse().expect("--conns N"),
            "--requests" => a.requests = v.parse().expect("--requests R"),
            "--url" => a.url = v,
            "--bufs" => a.bufs = v.parse().expect("--bufs N (a power of two)"),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(a.url.starts_with("http://"), "--url http://HOST:PORT/v1 is required");
    a
}

/// Opens the connections (TCP_NODELAY, nonblocking) and builds the one request they all send.
fn connect(args: &Args) -> (Vec<TcpStream>, Vec<u8>) {
    let rest = &args.url["http://".len()..];
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let body = r#"{"model":"infermeter-sim","prompt":"hello","max_tokens":100,"stream":true,"ignore_eos":true}"#;
    let request = format!(
        "POST {path}/completions HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         accept: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let socks = (0..args.conns)
        .map(|_| {
            let s = TcpStream::connect(host).expect("connect");
            s.set_nodelay(true).unwrap();
            s
        })
        .collect::<Vec<_>>();
    warm_up(&socks[0], request.as_bytes());
    for s in &socks {
        s.set_nonblocking(true).unwrap();
    }
    (socks, request.into_bytes())
}

/// One request on a blocking socket before the clock starts, to check the server answers.
fn warm_up(mut s: &TcpStream, request: &[u8]) {
    s.write_all(request).expect("send");
    let (mut conn, mut buf, mut stats) = (Conn::default(), vec![0u8; BUF], Stats::default());
    loop {
        let n = s.read(&mut buf).expect("read");
        assert!(n > 0, "server closed the connection");
        if scan(&mut conn, &buf[..n], &mut stats) {
            return;
        }
    }
}

/// Position of the next `\n` in `b`, eight bytes at a time (what memchr does without SIMD).
fn find_newline(b: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while i + 8 <= b.len() {
        let x = u64::from_le_bytes(b[i..i + 8].try_into().unwrap()) ^ (LO * b'\n' as u64);
        let z = x.wrapping_sub(LO) & !x & HI;
        if z != 0 {
            return Some(i + (z.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..].iter().position(|&c| c == b'\n').map(|p| i + p)
}

/// The eight bytes of the stream that end at `b[i]` (earlier ones from the previous read).
fn window(tail: u64, b: &[u8], i: usize) -> u64 {
    let mut w = tail;
    for &c in &b[i.saturating_sub(7)..=i] {
        w = (w << 8) | c as u64;
    }
    w
}

/// Scans one read: counts SSE events (a blank line) and says whether the response is over
/// (`[DONE]`, then the chunked terminator `\r\n0\r\n\r\n`).
fn scan(conn: &mut Conn, b: &[u8], stats: &mut Stats) -> bool {
    const DONE: u64 = u64::from_be_bytes(*b"\0[DONE]\n");
    const END: u64 = u64::from_be_bytes(*b"\0\0\n0\r\n\r\n");
    let mut at = 0;
    let mut over = false;
    while let Some(p) = find_newline(&b[at..]) {
        let w = window(conn.tail, b, at + p);
        if w & 0xffff == 0x0a0a {
            stats.events += 1;
        }
        if w & 0x00ff_ffff_ffff_ffff == DONE {
            conn.seen_done = true;
        } else if conn.seen_done && w & 0xffff_ffff_ffff == END {
            over = true;
        }
        at += p + 1;
    }
    conn.tail = window(conn.tail, b, b.len() - 1);
    if over {
        *conn = Conn::default();
    }
    over
}

fn epoll_run(socks: &[TcpStream], request: &[u8], total: u64) -> Stats {
    let mut stats = Stats::default();
    let mut conns = vec![Conn::default(); socks.len()];
    let mut buf = vec![0u8; BUF];
    // SAFETY: plain system calls on descriptors this process owns, into buffers it owns.
    unsafe {
        let ep = libc::epoll_create1(libc::EPOLL_CLOEXEC);
        assert!(ep >= 0, "epoll_create1");
        for (i, s) in socks.iter().enumerate() {
            let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: i as u64 };
            assert_eq!(libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev), 0);
        }
        for s in socks.iter().take(total as usize) {
            epoll_send(s.as_raw_fd(), request, &mut stats);
        }
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
        while stats.done < total {
            let n = libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, -1);
            stats.waits += 1;
            for ev in &events[..n.max(0) as usize] {
                let i = ev.u64 as usize;
                let fd = socks[i].as_raw_fd();
                let r = libc::recv(fd, buf.as_mut_ptr().cast(), BUF, 0);
                stats.reads += 1;
                assert!(r > 0, "recv: {r} ({})", std::io::Error::last_os_error());
                if scan(&mut conns[i], &buf[..r as usize], &mut stats) {
                    stats.done += 1;
                    if stats.sent < total {
                        epoll_send(fd, request, &mut stats);
                    }
                }
            }
        }
        libc::close(ep);
    }
    stats
}

fn epoll_send(fd: RawFd, request: &[u8], stats: &mut Stats) {
    // SAFETY: `request` outlives the call.
    let n = unsafe { libc::send(fd, request.as_ptr().cast(), request.len(), libc::MSG_NOSIGNAL) };
    assert_eq!(n, request.len() as isize, "short send");
    stats.sent += 1;
}

/// The provided buffers: one mapping holding the ring of descriptors, another the buffers.
struct BufRing {
    ring: *mut types::BufRingEntry,
    bufs: *mut u8,
    mask: u16,
    tail: u16,
}

impl BufRing {
    fn new(ring: &IoUring, n: u16) -> std::io::Result<BufRing> {
        assert!(n.is_power_of_two(), "--bufs must be a power of two");
        let map = |len: usize| {
            // SAFETY: an anonymous private mapping, checked below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED, "mmap");
            p
        };
        let entries = map(n as usize * std::mem::size_of::<types::BufRingEntry>()).cast();
        let mut br =
            BufRing { ring: entries, bufs: map(n as usize * BUF).cast(), mask: n - 1, tail: 0 };
        // SAFETY: the ring is page-aligned, n entries long, and lives as long as the process.
        unsafe { ring.submitter().register_buf_ring_with_flags(br.ring as u64, n, 0, 0)? };
        for bid in 0..n {
            br.push(bid);
        }
        br.publish();
        Ok(br)
    }

    fn buf(&self, bid: u16, len: usize) -> &[u8] {
        // SAFETY: buffer `bid` is ours until pushed back, and the kernel wrote `len` bytes.
        unsafe { std::slice::from_raw_parts(self.bufs.add(bid as usize * BUF), len) }
    }

    /// Gives buffer `bid` back (seen by the kernel after `publish`).
    fn push(&mut self, bid: u16) {
        // SAFETY: the slot at the tail is not the kernel's until the tail moves past it.
        let e = unsafe { &mut *self.ring.add((self.tail & self.mask) as usize) };
        e.set_addr(self.bufs as u64 + bid as u64 * BUF as u64);
        e.set_len(BUF as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field shares the first entry's memory; the kernel reads it acquire.
        unsafe {
            let tail = types::BufRingEntry::tail(self.ring) as *const std::sync::atomic::AtomicU16;
            (*tail).store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }
}

fn uring_setup(conns: usize, bufs: u16) -> std::io::Result<(IoUring, BufRing)> {
    let sq = (2 * conns).next_power_of_two().max(64) as u32;
    let ring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(4 * sq)
        .build(sq)
        .or_else(|_| IoUring::builder().setup_cqsize(4 * sq).build(sq))?;
    let br = BufRing::new(&ring, bufs)?;
    Ok((ring, br))
}

fn push(ring: &mut IoUring, sqe: squeue::Entry) {
    // SAFETY: what a queued entry points at (the request, the buffer ring) outlives the ring.
    while unsafe { ring.submission().push(&sqe) }.is_err() {
        ring.submit().expect("io_uring_enter");
    }
}

fn uring_run(
    ring: &mut IoUring,
    br: &mut BufRing,
    socks: &[TcpStream],
    req: &[u8],
    total: u64,
) -> Stats {
    let mut stats = Stats::default();
    let mut conns = vec![Conn::default(); socks.len()];
    let recv = |i: usize| {
        opcode::RecvMulti::new(types::Fd(socks[i].as_raw_fd()), 0).build().user_data(i as u64)
    };
    let send = |i: usize| {
        opcode::Send::new(types::Fd(socks[i].as_raw_fd()), req.as_ptr(), req.len() as u32)
            .build()
            .user_data(SEND | i as u64)
    };
    for i in 0..socks.len() {
        push(ring, recv(i));
        if (i as u64) < total {
            push(ring, send(i));
            stats.sent += 1;
        }
    }
    let mut cqes = Vec::with_capacity(4096);
    while stats.done < total {
        ring.submit_and_wait(1).expect("io_uring_enter");
        stats.waits += 1;
        cqes.clear();
        cqes.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        for &(data, res, flags) in &cqes {
            let i = (data & 0xffff_ffff) as usize;
            if data & SEND != 0 {
                assert_eq!(res, req.len() as i32, "send: {res}");
                continue;
            }
            if res == -libc::ENOBUFS {
                stats.rearms += 1;
                push(ring, recv(i));
                continue;
            }
            assert!(res > 0, "recv: {res}");
            let bid = cqueue::buffer_select(flags).expect("a recv completion without a buffer");
            stats.reads += 1;
            let over = scan(&mut conns[i], br.buf(bid, res as usize), &mut stats);
            br.push(bid);
            if !cqueue::more(flags) {
                stats.rearms += 1;
                push(ring, recv(i));
            }
            if over {
                stats.done += 1;
                if stats.sent < total {
                    push(ring, send(i));
                    stats.sent += 1;
                }
            }
        }
        br.publish();
    }
    stats
}

/// User and system seconds (getrusage: split by sampling at ticks) and the time on a CPU
/// (/proc/self/schedstat, exact).
fn cpu() -> (f64, f64, f64) {
    // SAFETY: getrusage fills the struct it is given.
    let ru = unsafe {
        let mut ru = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let sched = std::fs::read_to_string("/proc/self/schedstat").unwrap_or_default();
    let on_cpu = sched.split(' ').next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (s(ru.ru_utime), s(ru.ru_stime), on_cpu / 1e9)
}

fn main() {
    let args = parse_args();
    let (socks, request) = connect(&args);
    let mut mode = args.mode.as_str();
    let mut uring = None;
    if mode == "uring" {
        match uring_setup(args.conns, args.bufs) {
            Ok(r) => uring = Some(r),
            Err(e) => {
                eprintln!("io_uring is unavailable here ({e}); falling back to epoll");
                mode = "epoll";
            }
        }
    }
    let (start, c0) = (Instant::now(), cpu());
    let stats = match &mut uring {
        Some((ring, br)) => uring_run(ring, br, &socks, &request, args.requests),
        None => epoll_run(&socks, &request, args.requests),
    };
    let (wall, c1) = (start.elapsed().as_secs_f64(), cpu());
    let n = stats.done as f64;
    let per = |v: f64| v * 1e6 / n;
    let threads = std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0);
    println!(
        "mode={mode} conns={} requests={} events={} reads={} wall_s={wall:.2} user_s={:.3} \
         sys_s={:.3} user_us={:.1} sys_us={:.1} oncpu_us={:.1} reads={:.2} waits={:.2} \
         rearms={} threads={threads}",
        args.conns,
        stats.done,
        stats.events,
        stats.reads,
        c1.0 - c0.0,
        c1.1 - c0.1,
        per(c1.0 - c0.0),
        per(c1.1 - c0.1),
        per(c1.2 - c0.2),
        stats.reads as f64 / n,
        stats.waits as f64 / n,
        stats.rearms
    );
}
