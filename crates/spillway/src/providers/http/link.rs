//! One upstream connection as the request path holds it: hyper's request
//! sender together with the connection's own future, which the holder
//! polls itself instead of leaving it to a task of its own.
//!
//! Why: hyper's connection task hands a response body over one HTTP chunk
//! at a time, through a channel with room for one, and decodes the next
//! only when its task runs again. With the connection on a task of its
//! own, a stream's reader found one event ready per wake-up however many
//! one socket read had brought — so the gateway wrote one frame, made one
//! `writev` and took two task switches per event (an `strace` of four
//! 515-event streams: 2,060 writes to the client against 16 upstream
//! reads). Driven from the reader's task, the connection decodes the next
//! chunk as soon as the reader asks, and everything one read brought is
//! taken at once ([`super::Body`]).
//!
//! A [`Link`] is driven by whoever holds it: the endpoint while it sends a
//! request and waits for the response head, the response body while it is
//! read, nobody while it sits idle in its pool (a closed idle connection
//! is found when it is next driven: its future ends).

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};

/// What an upstream connection runs over: TCP, TLS over TCP, or either
/// through a proxy's tunnel.
pub(super) trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Io for T {}

/// The connection future of one upstream connection.
pub(super) type Conn = Connection<TokioIo<Box<dyn Io>>, Full<Bytes>>;

/// A request sender and the connection it sends on; see the module docs.
pub(super) struct Link {
    pub(super) sender: SendRequest<Full<Bytes>>,
    /// `None` once the connection has ended. Boxed: hyper's connection
    /// state is kilobytes, and a link is moved with every request future
    /// and body that holds it (inline, it multiplied the request's copies).
    conn: Option<Box<Conn>>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link").field("open", &self.conn.is_some()).finish()
    }
}

impl Link {
    pub(super) fn new(sender: SendRequest<Full<Bytes>>, conn: Conn) -> Self {
        Self { sender, conn: Some(Box::new(conn)) }
    }

    /// Lets the connection read, write and hand over what it can now;
    /// false once it has ended (closed by either side, or broken).
    pub(super) fn drive(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(conn) = self.conn.as_mut() else { return false };
        match Pin::new(&mut **conn).poll(cx) {
            Poll::Pending => true,
            Poll::Ready(ended) => {
                if let Err(e) = ended {
                    tracing::debug!(error = %e, "Upstream connection ended with an error.");
                }
                self.conn = None;
                false
            }
        }
    }

    /// Whether the connection can take a request (driving it first, so a
    /// connection the upstream closed while idle is found closed now).
    pub(super) fn is_open(&mut self) -> bool {
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        self.drive(&mut cx) && !self.sender.is_closed()
    }

    /// Waits until the sender can take a request, driving the connection.
    pub(super) async fn ready(&mut self) -> hyper::Result<()> {
        poll_fn(|cx| {
            self.drive(cx);
            self.sender.poll_ready(cx)
        })
        .await
    }

    /// Waits for `fut` (a request sent on this link) while driving the
    /// connection.
    pub(super) async fn wait<F: Future>(&mut self, fut: F) -> F::Output {
        let mut fut = std::pin::pin!(fut);
        poll_fn(|cx| {
            self.drive(cx);
            fut.as_mut().poll(cx)
        })
        .await
    }
}
