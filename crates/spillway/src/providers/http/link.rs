//! One upstream connection and HTTP/1.1 on it, written and read by the
//! gateway itself: a request out, a response head in, then the body
//! decoded in the reader's own poll ([`super::Body`]).
//!
//! Why not hyper's client connection: it hands a response body over one
//! HTTP chunk at a time, through a channel with room for one, and every
//! chunk passes its dispatcher, its body channel and a `Bytes` split of
//! its own. Upstreams write one chunk per stream event, so that was paid
//! per event: about 1,450 instructions of an event's ~4,400 (callgrind,
//! `STREAM=1 CHUNKS=512 bench/instructions.sh`). Here the chunked body is
//! decoded straight out of the read buffer, and everything one socket read
//! brought goes to the reader as one piece ([`super::chunked`]).
//!
//! What a chat call needs, and no more: one request with a whole body,
//! `Content-Length` or chunked or read-to-close responses, interim `1xx`
//! heads skipped, keep-alive unless the upstream says `close` (or speaks
//! HTTP/1.0). No pipelining, no upgrades, no HTTP/2.
//!
//! A [`Link`] is driven by whoever holds it: the endpoint while it sends a
//! request and reads the head, the response body while it is read, nobody
//! while it sits idle in its pool (a closed idle connection is found when
//! it is next looked at: [`Link::is_open`]).

use super::chunked::Chunked;
use bytes::{Buf, Bytes, BytesMut};
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// What an upstream connection runs over: TCP, TLS over TCP, or either
/// through a proxy's tunnel.
pub(super) trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Io for T {}

/// The longest response head read (status line and headers).
const MAX_HEAD: usize = 64 * 1024;
/// Headers a response head may have.
const MAX_HEADERS: usize = 128;
/// What each socket read asks room for.
const READ_ROOM: usize = 16 * 1024;

/// Why an exchange on a connection failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The socket failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The upstream closed the connection before the message ended.
    #[error("the connection closed {0}")]
    Closed(&'static str),
    /// What the upstream sent is not HTTP/1.1.
    #[error("invalid response: {0}")]
    Invalid(&'static str),
}

/// How a response body ends.
#[derive(Debug)]
pub(super) enum Framing {
    /// `Content-Length`: this many bytes are left.
    Length(u64),
    Chunked(Chunked),
    /// Neither: the body runs until the upstream closes the connection.
    Close,
}

/// A response head, how its body is framed, and whether the connection
/// can take another request after it.
pub(super) struct Head {
    pub(super) status: http::StatusCode,
    pub(super) fields: super::Fields,
    pub(super) framing: Framing,
    pub(super) keep_alive: bool,
}

/// One upstream connection: its socket and what has been read from it but
/// not yet taken.
pub(super) struct Link {
    io: Box<dyn Io>,
    buf: BytesMut,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link").field("buffered", &self.buf.len()).finish()
    }
}

impl Link {
    pub(super) fn new(io: Box<dyn Io>) -> Self {
        Self { io, buf: BytesMut::new() }
    }

    /// Whether the connection can take a request: nothing unread on it and
    /// the upstream has not closed it (looked at without waiting).
    pub(super) fn is_open(&mut self) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        // Anything but "nothing to read yet" — an end, an error, bytes
        // nobody asked for — means it cannot be used.
        self.poll_fill(&mut cx).is_pending()
    }

    /// Writes one request (head and body, already laid out).
    pub(super) async fn send(&mut self, request: &[u8]) -> Result<(), WireError> {
        self.io.write_all(request).await?;
        poll_fn(|cx| Pin::new(&mut self.io).poll_flush(cx)).await?;
        Ok(())
    }

    /// Reads the response head (interim `1xx` heads skipped).
    pub(super) async fn head(&mut self) -> Result<Head, WireError> {
        loop {
            if let Some(head) = self.parse_head()? {
                return Ok(head);
            }
            if self.buf.len() > MAX_HEAD {
                return Err(WireError::Invalid("the response head is too large"));
            }
            if poll_fn(|cx| self.poll_fill(cx)).await? == 0 {
                return Err(WireError::Closed("before the response head"));
            }
        }
    }

    /// A whole head from the buffer, taken out of it; `None` when more is
    /// needed.
    fn parse_head(&mut self) -> Result<Option<Head>, WireError> {
        loop {
            // Left uninitialized: zeroing room for every header a head may
            // have cost more than parsing the few it has.
            let mut headers = [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
            let mut parsed = httparse::Response::new(&mut []);
            let config = httparse::ParserConfig::default();
            let len = match config.parse_response_with_uninit_headers(&mut parsed, &self.buf, &mut headers) {
                Ok(httparse::Status::Complete(len)) => len,
                Ok(httparse::Status::Partial) => return Ok(None),
                Err(httparse::Error::TooManyHeaders) => return Err(WireError::Invalid("too many headers")),
                Err(_) => return Err(WireError::Invalid("not an HTTP/1.x response head")),
            };
            let code = parsed.code.unwrap_or_default();
            if code == 101 {
                return Err(WireError::Invalid("an upgrade nobody asked for"));
            }
            if (100..200).contains(&code) {
                self.buf.advance(len);
                continue;
            }
            let status = http::StatusCode::from_u16(code).map_err(|_| WireError::Invalid("status code"))?;
            let http11 = parsed.version == Some(1);
            // Names and values stay in the head's own bytes (no copy, no
            // allocation and no table insert per field: [`super::Fields`]):
            // their places first, while the parse borrows the buffer, then
            // the head is taken out of it.
            let base = self.buf.as_ptr() as usize;
            let place = |s: &[u8]| {
                let at = (s.as_ptr() as usize).wrapping_sub(base);
                at..at + s.len()
            };
            let at = parsed.headers.iter().map(|h| (place(h.name.as_bytes()), place(h.value))).collect();
            let fields = super::Fields::new(self.buf.split_to(len).freeze(), at);
            let framing = framing(code, &fields)?;
            let closes = fields.get_all("connection").any(|v| has_token(v, b"close"));
            let keep_alive = http11 && !closes && !matches!(framing, Framing::Close);
            return Ok(Some(Head { status, fields, framing, keep_alive }));
        }
    }

    /// The next piece of a body framed by `framing`: all of it the buffer
    /// holds, reading the socket only when the buffer has none; `None` at
    /// its end.
    pub(super) fn poll_body(
        &mut self,
        cx: &mut Context<'_>,
        framing: &mut Framing,
    ) -> Poll<Option<Result<Bytes, WireError>>> {
        loop {
            let piece = match framing {
                Framing::Length(0) => return Poll::Ready(None),
                Framing::Length(left) => {
                    let n = usize::try_from(*left).unwrap_or(usize::MAX).min(self.buf.len());
                    *left -= n as u64;
                    self.buf.split_to(n).freeze()
                }
                Framing::Chunked(c) => match c.decode(&mut self.buf) {
                    Ok(data) => data,
                    Err(why) => return Poll::Ready(Some(Err(WireError::Invalid(why)))),
                },
                Framing::Close => self.buf.split().freeze(),
            };
            if !piece.is_empty() {
                return Poll::Ready(Some(Ok(piece)));
            }
            if matches!(framing, Framing::Chunked(c) if c.is_done()) {
                return Poll::Ready(None);
            }
            match std::task::ready!(self.poll_fill(cx)) {
                Ok(0) if matches!(framing, Framing::Close) => return Poll::Ready(None),
                Ok(0) => return Poll::Ready(Some(Err(WireError::Closed("before the body ended")))),
                Ok(_) => {}
                Err(e) => return Poll::Ready(Some(Err(e.into()))),
            }
        }
    }

    /// Whether the buffer is empty (nothing read past the body).
    pub(super) fn drained(&self) -> bool {
        self.buf.is_empty()
    }

    /// One socket read into the buffer; `Ok(0)` at the end.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        if self.buf.capacity() - self.buf.len() < READ_ROOM / 4 {
            self.buf.reserve(READ_ROOM);
        }
        tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.buf)
    }
}

/// How a response's body is framed (RFC 9112, section 6.3).
fn framing(code: u16, headers: &super::Fields) -> Result<Framing, WireError> {
    if code == 204 || code == 304 {
        return Ok(Framing::Length(0));
    }
    if let Some(last) = headers.get_all("transfer-encoding").next_back() {
        // Chunked must be the last coding; anything else runs to the close.
        let chunked =
            last.rsplit(|&b| b == b',').next().is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        return Ok(if chunked { Framing::Chunked(Chunked::default()) } else { Framing::Close });
    }
    let mut length: Option<u64> = None;
    for value in headers.get_all("content-length") {
        for part in value.split(|&b| b == b',') {
            let n = std::str::from_utf8(part.trim_ascii())
                .ok()
                .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|t| t.parse::<u64>().ok())
                .ok_or(WireError::Invalid("content-length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(WireError::Invalid("content-length given twice, differently"));
            }
            length = Some(n);
        }
    }
    Ok(length.map_or(Framing::Close, Framing::Length))
}

/// Whether a comma-separated header value lists `token` (any case).
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// What every request of one endpoint starts with, laid out once: the
/// request line and the fixed headers. The headers a call sets itself
/// (its id, its trace) are kept apart: the call's own value replaces the
/// fixed one.
#[derive(Debug)]
pub(super) struct Prefix {
    head: Vec<u8>,
    /// Fixed headers a call may replace, written only when it does not.
    replaceable: Vec<(http::HeaderName, http::HeaderValue)>,
}

impl Prefix {
    pub(super) fn new(method: &str, uri: &http::Uri, headers: &http::HeaderMap) -> Self {
        let mut head = Vec::with_capacity(128 + headers.len() * 48);
        head.extend_from_slice(method.as_bytes());
        head.push(b' ');
        head.extend_from_slice(uri.to_string().as_bytes());
        head.extend_from_slice(b" HTTP/1.1\r\n");
        let mut replaceable = Vec::new();
        for (name, value) in headers {
            if crate::providers::headers::CALL_HEADERS.contains(&name.as_str()) {
                replaceable.push((name.clone(), value.clone()));
            } else {
                header_line(&mut head, name, value.as_bytes());
            }
        }
        Self { head, replaceable }
    }

    /// A request laid out for [`Link::send`]: the prefix, the call's own
    /// headers, `content-length`, then the body.
    pub(super) fn request<'v>(&self, call: impl Iterator<Item = (http::HeaderName, &'v str)>, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + 192 + body.len());
        out.extend_from_slice(&self.head);
        let mut set: [Option<http::HeaderName>; 3] = Default::default();
        for (i, (name, value)) in call.enumerate() {
            header_line(&mut out, &name, value.as_bytes());
            if let Some(slot) = set.get_mut(i) {
                *slot = Some(name);
            }
        }
        for (name, value) in &self.replaceable {
            if !set.iter().flatten().any(|n| n == name) {
                header_line(&mut out, name, value.as_bytes());
            }
        }
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(crate::digits::decimal(body.len() as u64, &mut [0; 20]));
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(body);
        out
    }
}

fn header_line(out: &mut Vec<u8>, name: &http::HeaderName, value: &[u8]) {
    out.extend_from_slice(name.as_str().as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}
