//! Accepted connections: TCP_NODELAY on each, and `close-after-stream`, which reproduces
//! llama-server closing the connection after every streamed response although its headers
//! promise keep-alive. hyper cannot be told to drop one keep-alive connection from inside a
//! handler, so the socket wrapper does it: once a streamed body has ended, the next flush that
//! completes (the body's last bytes are then in the kernel) shuts the socket down, reads see
//! end-of-file and writes fail. hyper then drops the connection, and the kernel answers
//! anything the client sends afterwards with a reset.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// The listener `axum::serve` accepts from.
pub(crate) struct SimListener {
    inner: TcpListener,
    close_after_stream: bool,
}

impl SimListener {
    pub(crate) fn new(inner: TcpListener, close_after_stream: bool) -> Self {
        SimListener {
            inner,
            close_after_stream,
        }
    }
}

impl Listener for SimListener {
    type Io = ConnIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (ConnIo, SocketAddr) {
        let (tcp, addr) = Listener::accept(&mut self.inner).await;
        // Without TCP_NODELAY, Nagle's algorithm holds small SSE chunks back until the
        // client's delayed ACK (~40 ms): a token "emitted" would not be on the wire.
        let _ = tcp.set_nodelay(true);
        let state = self
            .close_after_stream
            .then(|| Arc::new(ConnState::default()));
        (ConnIo { tcp, state }, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

#[derive(Debug, Default)]
struct ConnState {
    /// A streamed response's body has ended: close once its bytes are flushed.
    closing: AtomicBool,
    /// Shut down: reads are at end-of-file and writes fail.
    closed: AtomicBool,
    /// Woken when `closed` is set.
    on_close: Notify,
}

/// One accepted connection: the TCP stream, plus the close state with `close-after-stream`.
pub(crate) struct ConnIo {
    tcp: TcpStream,
    state: Option<Arc<ConnState>>,
}

impl ConnIo {
    fn closed(&self) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| s.closed.load(Ordering::Acquire))
    }
}

impl AsyncRead for ConnIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.closed() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for ConnIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.closed() {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.closed() {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let flushed = Pin::new(&mut this.tcp).poll_flush(cx);
        if let (Poll::Ready(Ok(())), Some(state)) = (&flushed, &this.state)
            && state.closing.load(Ordering::Acquire)
            && !state.closed.swap(true, Ordering::AcqRel)
        {
            // hyper flushes only after handing every buffered byte to the socket, so the
            // ended body is complete on the wire before the FIN.
            let _ = Pin::new(&mut this.tcp).poll_shutdown(cx);
            state.on_close.notify_waiters();
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.closed() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// A handler's view of its connection (axum's `ConnectInfo`); empty without
/// `close-after-stream`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConnTag(Option<Arc<ConnState>>);

impl ConnTag {
    /// Marks the connection to be closed once the current response is flushed. Called when a
    /// streamed body ends.
    pub(crate) fn close_after_response(&self) {
        if let Some(s) = &self.0 {
            s.closing.store(true, Ordering::Release);
        }
    }

    /// The connection is being closed: a request pipelined behind the stream that closes it
    /// must not be served (llama-server never reads it).
    pub(crate) fn closing(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|s| s.closing.load(Ordering::Acquire))
    }

    /// Returns once the connection is shut down, so that an answer written after it can no
    /// longer reach the client. (Dropped with the connection if the client never reads.)
    pub(crate) async fn closed(&self) {
        let Some(s) = &self.0 else {
            return;
        };
        loop {
            // Created before the check: notify_waiters wakes it even if not yet polled.
            let woken = s.on_close.notified();
            if s.closed.load(Ordering::Acquire) {
                return;
            }
            woken.await;
        }
    }
}

impl Connected<IncomingStream<'_, SimListener>> for ConnTag {
    fn connect_info(stream: IncomingStream<'_, SimListener>) -> Self {
        ConnTag(stream.io().state.clone())
    }
}
