//! HTTP/1.1 to clients, read and written by the gateway itself
//! (RFC 9112): one connection's requests one after another, each head
//! parsed out of the read buffer ([`head`]), its body read whole
//! ([`body`]), the handler called, and its response written with the head
//! and the first frames in one `writev` ([`write`]).
//!
//! Why not hyper's server connection: its dispatcher, body channel and
//! header encoding cost about a quarter of what a passed-through request
//! cost the gateway in all (callgrind, `bench/instructions.sh`), and the
//! upstream side had already moved to the gateway's own HTTP/1.1 for the
//! same reason (`providers/http/link.rs`).
//!
//! What it does, as hyper's did:
//! - keep-alive (HTTP/1.1 unless `Connection: close`; HTTP/1.0 with
//!   `Connection: keep-alive`) and pipelined requests, answered in order;
//! - `server.header_read_timeout` over every head, the wait for the next
//!   request on an idle connection included; the connection closes when
//!   it passes;
//! - bodies by `Content-Length` or chunked, `Expect: 100-continue`
//!   answered when the body is wanted (not when it is declared too large);
//!   a body framed two ways is refused (400: request smuggling), as are
//!   heads that are not HTTP/1.x (400, 505) or too large (431);
//! - a client that closes its side while its request is served or its
//!   answer streamed is noticed at once: the handler's future or the
//!   answer's body is dropped (the upstream call with it);
//! - responses framed by `Content-Length` (the handler's, or the body's
//!   exact size), chunked, or to the close for an HTTP/1.0 client; no
//!   body for `HEAD`, 204 and 304; `date` on every response;
//! - on shutdown, an idle connection closes at once and a busy one after
//!   its answer (`connection: close`).
//!
//! What it does not: HTTP/2, upgrades, trailers.

mod body;
mod date;
mod head;
mod write;

pub use body::{BodyError, RequestBody};

use bytes::{Bytes, BytesMut};
use head::{BodyFraming, Head, Refused};
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Duration, Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use write::{Asked, Framing, Outgoing};

/// A response as handlers make it: a response, and header lines the
/// handler laid out itself (`name: value\r\n` each, written after the
/// response's own headers). The lines spare the hot path a map that would
/// be built, hashed into and dropped only to be written out: the chat
/// answer's `x-spillway-*` headers and every response's `x-request-id`
/// go this way. Nothing the server reads for framing (`content-length`,
/// `transfer-encoding`, `connection`, `date`) may be among them.
pub struct Answer {
    pub response: http::Response<axum::body::Body>,
    pub lines: Vec<u8>,
}

impl From<http::Response<axum::body::Body>> for Answer {
    fn from(response: http::Response<axum::body::Body>) -> Self {
        Self { response, lines: Vec::new() }
    }
}

/// What answers the requests of a connection.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request. The future runs in the connection's own state,
    /// not boxed: a chat request's future is kilobytes, and boxing it copied
    /// all of it into the heap on every request (a memcpy of its whole size,
    /// whatever of it was in use).
    fn call(&self, request: http::Request<RequestBody>) -> impl Future<Output = Answer> + Send;
}

/// A connection's bounds (`server:`).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// `server.header_read_timeout`.
    pub header_read_timeout: Duration,
    /// `server.body_read_timeout`.
    pub body_read_timeout: Duration,
    /// `server.max_body_bytes`.
    pub max_body_bytes: usize,
}

/// What each socket read asks room for.
const READ_ROOM: usize = 8 * 1024;
/// The most unread input a closing connection reads and drops so the
/// client gets its answer before the close (see [`Conn::close`]).
const LINGER_BYTES: usize = 1024 * 1024;
/// How long a closing connection waits for the client to close its side.
const LINGER: Duration = Duration::from_secs(2);

/// Serves the requests that come on `io` until the client closes, a
/// request asks to, or `shutdown` is cancelled.
pub async fn serve<I, H>(io: I, handler: &H, settings: Settings, shutdown: CancellationToken)
where
    I: AsyncRead + AsyncWrite + Unpin + Send,
    H: Handler,
{
    let mut conn = Conn {
        io,
        buf: BytesMut::new(),
        out: Outgoing::default(),
        settings,
        timer: None,
        shutdown,
        shutdown_wait: None,
    };
    conn.run(handler).await;
}

/// One client connection.
struct Conn<I> {
    io: I,
    /// Read and not yet taken: the next head, a pipelined request.
    buf: BytesMut,
    out: Outgoing,
    settings: Settings,
    /// The header read timeout, made at the first wait for a head and
    /// moved on for each (moving a timer later costs no re-registration).
    timer: Option<Pin<Box<Sleep>>>,
    shutdown: CancellationToken,
    /// Polled once, so a shutdown wakes an idle connection; after that
    /// the token is only looked at.
    shutdown_wait: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
}

/// What the wait for a request head ended with. (Made once a request and
/// taken apart at once: boxing the head to even the variants out cost an
/// allocation and a copy on every request.)
#[allow(clippy::large_enum_variant)]
enum Next {
    Head(Head),
    /// The client closed, or shutdown came while the connection was idle.
    Closed,
    TimedOut,
    Refused(Refused),
}

impl<I: AsyncRead + AsyncWrite + Unpin + Send> Conn<I> {
    async fn run<H: Handler>(&mut self, handler: &H) {
        loop {
            let head = match self.next_head().await {
                Next::Head(head) => head,
                Next::Closed => return,
                Next::TimedOut => {
                    tracing::debug!("A client sent no whole request head within server.header_read_timeout.");
                    return;
                }
                Next::Refused(refused) => {
                    tracing::debug!(why = refused.why(), "A request head was refused.");
                    self.out.push(Bytes::from_static(refused.response()));
                    if poll_fn(|cx| self.out.poll_write(&mut self.io, cx)).await.is_ok() {
                        self.close(true).await;
                    }
                    return;
                }
            };
            let Head { request, framing, keep_alive, expects_continue } = head;
            let (body, whole) = self.read_body(framing, expects_continue).await;
            let (parts, ()) = request.into_parts();
            let asked = Asked {
                version: parts.version,
                head_method: parts.method == http::Method::HEAD,
                keep_alive: keep_alive && whole,
            };
            let answered = {
                let answer = std::pin::pin!(handler.call(http::Request::from_parts(parts, body)));
                self.wait_for(answer).await
            };
            let Some(response) = answered else {
                return; // The client left; the handler's future is dropped.
            };
            match self.send(response, asked).await {
                Ok(true) if !self.shutdown.is_cancelled() => {}
                Ok(_) => return self.close(!whole || !self.buf.is_empty()).await,
                Err(e) => {
                    tracing::debug!(error = %e, "A response could not be written whole.");
                    return;
                }
            }
        }
    }

    /// Waits for the next request head, within `server.header_read_timeout`.
    async fn next_head(&mut self) -> Next {
        let deadline = Instant::now() + self.settings.header_read_timeout;
        poll_fn(|cx| self.poll_head(cx, deadline)).await
    }

    fn poll_head(&mut self, cx: &mut Context<'_>, deadline: Instant) -> Poll<Next> {
        loop {
            head::skip_blank_lines(&mut self.buf);
            if !self.buf.is_empty() {
                match head::parse(&mut self.buf) {
                    Ok(Some(head)) => return Poll::Ready(Next::Head(head)),
                    Ok(None) => {}
                    Err(refused) => return Poll::Ready(Next::Refused(refused)),
                }
            }
            match self.fill(cx, READ_ROOM) {
                Poll::Ready(Ok(0) | Err(_)) => return Poll::Ready(Next::Closed),
                Poll::Ready(Ok(_)) => {}
                Poll::Pending => break,
            }
        }
        if self.buf.is_empty() && self.poll_shutdown(cx) {
            return Poll::Ready(Next::Closed);
        }
        let timer = match &mut self.timer {
            Some(timer) => {
                if timer.deadline() != deadline {
                    timer.as_mut().reset(deadline);
                }
                timer
            }
            None => self.timer.insert(Box::pin(tokio::time::sleep_until(deadline))),
        };
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Next::TimedOut);
        }
        Poll::Pending
    }

    /// Whether shutdown has come (registering for it the first time).
    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> bool {
        if self.shutdown.is_cancelled() {
            return true;
        }
        if self.shutdown_wait.is_none() {
            let mut wait = Box::pin(self.shutdown.clone().cancelled_owned());
            if wait.as_mut().poll(cx).is_ready() {
                return true;
            }
            self.shutdown_wait = Some(wait);
        }
        false
    }

    /// One socket read into the buffer, with at least `room` free; `Ok(0)`
    /// at the end.
    fn fill(&mut self, cx: &mut Context<'_>, room: usize) -> Poll<io::Result<usize>> {
        if self.buf.capacity() - self.buf.len() < room / 4 {
            self.buf.reserve(room);
        }
        tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.buf)
    }

    /// Whether the client has closed its side or its connection failed,
    /// looked at without waiting. What it sent meanwhile (a pipelined
    /// request) stays in the buffer, up to a head's worth.
    fn poll_gone(&mut self, cx: &mut Context<'_>) -> bool {
        while self.buf.len() < head::MAX_HEAD {
            match self.fill(cx, READ_ROOM) {
                Poll::Ready(Ok(0) | Err(_)) => return true,
                Poll::Ready(Ok(_)) => {}
                Poll::Pending => return false,
            }
        }
        false
    }

    /// The request's body, and whether all of it was read (else the
    /// connection cannot take another request).
    async fn read_body(&mut self, framing: BodyFraming, expects_continue: bool) -> (RequestBody, bool) {
        let max = self.settings.max_body_bytes;
        let n = match framing {
            BodyFraming::None => return (RequestBody::empty(), true),
            BodyFraming::Length(n) => match usize::try_from(n) {
                Ok(n) if n <= max => n,
                _ => return (RequestBody::failed(BodyError::TooLarge), false),
            },
            BodyFraming::Chunked(chunked) => return self.read_chunked(chunked, expects_continue).await,
        };
        // The usual case: it came with the head.
        if self.buf.len() >= n {
            return (RequestBody::whole(self.buf.split_to(n).freeze()), true);
        }
        if let Err(e) = self.send_continue(expects_continue).await {
            tracing::debug!(error = %e, "100 Continue could not be written.");
            return (RequestBody::failed(BodyError::Closed), false);
        }
        let deadline = Instant::now() + self.settings.body_read_timeout;
        let read = poll_fn(|cx| loop {
            if self.buf.len() >= n {
                return Poll::Ready(Ok(()));
            }
            let room = (n - self.buf.len()).min(64 * 1024);
            match std::task::ready!(self.fill(cx, room)) {
                Ok(0) | Err(_) => return Poll::Ready(Err(BodyError::Closed)),
                Ok(_) => {}
            }
        });
        match tokio::time::timeout_at(deadline, read).await {
            Ok(Ok(())) => (RequestBody::whole(self.buf.split_to(n).freeze()), true),
            Ok(Err(why)) => (RequestBody::failed(why), false),
            Err(_) => (RequestBody::failed(BodyError::TimedOut), false),
        }
    }

    async fn read_chunked(
        &mut self,
        mut chunked: crate::providers::http::chunked::Chunked,
        expects_continue: bool,
    ) -> (RequestBody, bool) {
        let max = self.settings.max_body_bytes;
        let mut body = BytesMut::new();
        let mut deadline = None;
        loop {
            match chunked.decode(&mut self.buf) {
                Ok(data) => body.extend_from_slice(&data),
                Err(why) => return (RequestBody::failed(BodyError::Invalid(why)), false),
            }
            if body.len() > max {
                return (RequestBody::failed(BodyError::TooLarge), false);
            }
            if chunked.is_done() {
                return (RequestBody::whole(body.freeze()), true);
            }
            let deadline = match deadline {
                Some(d) => d,
                None => {
                    if let Err(e) = self.send_continue(expects_continue && self.buf.is_empty()).await {
                        tracing::debug!(error = %e, "100 Continue could not be written.");
                        return (RequestBody::failed(BodyError::Closed), false);
                    }
                    *deadline.insert(Instant::now() + self.settings.body_read_timeout)
                }
            };
            match tokio::time::timeout_at(deadline, poll_fn(|cx| self.fill(cx, 64 * 1024))).await {
                Ok(Ok(0) | Err(_)) => return (RequestBody::failed(BodyError::Closed), false),
                Ok(Ok(_)) => {}
                Err(_) => return (RequestBody::failed(BodyError::TimedOut), false),
            }
        }
    }

    /// `100 Continue`, when the client waits for it (RFC 9110, section 10.1.1).
    async fn send_continue(&mut self, expects_continue: bool) -> io::Result<()> {
        if !expects_continue {
            return Ok(());
        }
        self.out.push(Bytes::from_static(b"HTTP/1.1 100 Continue\r\n\r\n"));
        poll_fn(|cx| self.out.poll_write(&mut self.io, cx)).await
    }

    /// The handler's answer; `None` when the client left first.
    async fn wait_for(&mut self, mut answer: Pin<&mut impl Future<Output = Answer>>) -> Option<Answer> {
        poll_fn(|cx| {
            if let Poll::Ready(response) = answer.as_mut().poll(cx) {
                return Poll::Ready(Some(response));
            }
            if self.poll_gone(cx) {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await
    }

    /// Writes a response; whether the connection can take another request.
    async fn send(&mut self, answer: Answer, asked: Asked) -> io::Result<bool> {
        let (mut parts, body) = answer.response.into_parts();
        let asked = Asked { keep_alive: asked.keep_alive && !self.shutdown.is_cancelled(), ..asked };
        let hint = hyper::body::Body::size_hint(&body);
        let plan = write::head(self.out.scratch(), parts.status, &mut parts.headers, &answer.lines, &hint, asked);
        self.out.take_scratch();
        drop(parts);
        let mut sending = Sending { body: Some(body), framing: plan.framing, left: u64::MAX };
        match plan.framing {
            Framing::Empty => sending.body = None,
            Framing::Length(n) => sending.left = n,
            Framing::Chunked | Framing::Close => {}
        }
        poll_fn(|cx| self.poll_send(cx, &mut sending)).await?;
        Ok(plan.keep_alive)
    }

    /// Gathers what the body has ready (up to [`write::GATHER`]), writes
    /// it, and again, until the body ends; while the body has nothing,
    /// watches for the client leaving.
    fn poll_send(&mut self, cx: &mut Context<'_>, sending: &mut Sending) -> Poll<io::Result<()>> {
        loop {
            let mut waiting = false;
            while let Some(body) = sending.body.as_mut() {
                if self.out.queued() >= write::GATHER {
                    break;
                }
                match hyper::body::Body::poll_frame(Pin::new(body), cx) {
                    Poll::Ready(Some(Ok(frame))) => {
                        let Ok(data) = frame.into_data() else { continue };
                        if data.len() as u64 > sending.left {
                            return Poll::Ready(Err(io::Error::other("the body is longer than its content-length")));
                        }
                        if sending.left != u64::MAX {
                            sending.left -= data.len() as u64;
                        }
                        self.out.push_data(sending.framing, data);
                    }
                    Poll::Ready(Some(Err(e))) => {
                        return Poll::Ready(Err(io::Error::other(format!("the response body failed: {e}"))));
                    }
                    Poll::Ready(None) => {
                        if sending.left != u64::MAX && sending.left != 0 {
                            return Poll::Ready(Err(io::Error::other("the body is shorter than its content-length")));
                        }
                        self.out.push_end(sending.framing);
                        sending.body = None;
                    }
                    Poll::Pending => {
                        waiting = true;
                        break;
                    }
                }
            }
            match self.out.poll_write(&mut self.io, cx) {
                Poll::Ready(Ok(())) if sending.body.is_none() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) if !waiting => continue,
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {}
            }
            if waiting && self.poll_gone(cx) {
                return Poll::Ready(Err(io::ErrorKind::ConnectionAborted.into()));
            }
            return Poll::Pending;
        }
    }

    /// Closes the connection: its side first, then — when the client may
    /// still be sending (a body not read, a request after this one) — reads
    /// and drops what comes until the client closes too, within bounds, so
    /// the kernel does not answer that input with a reset that could
    /// destroy the response before the client read it.
    async fn close(&mut self, linger: bool) {
        if poll_fn(|cx| Pin::new(&mut self.io).poll_shutdown(cx)).await.is_err() || !linger {
            return;
        }
        let mut dropped = 0usize;
        let drain = poll_fn(|cx| loop {
            self.buf.clear();
            match std::task::ready!(self.fill(cx, READ_ROOM)) {
                Ok(0) | Err(_) => return Poll::Ready(()),
                Ok(n) => dropped += n,
            }
            if dropped > LINGER_BYTES {
                return Poll::Ready(());
            }
        });
        let _ = tokio::time::timeout(LINGER, drain).await;
    }
}

/// A response body being written.
struct Sending {
    /// `None` once it has ended (or for a response without one).
    body: Option<axum::body::Body>,
    framing: Framing,
    /// Bytes `Content-Length` still owes; `u64::MAX` without one.
    left: u64,
}

#[cfg(test)]
mod tests;
