//! The response side: the head laid out by hand into one buffer, the body
//! framed by its length or chunked, and everything ready written with one
//! `writev`.

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
use http::{HeaderMap, StatusCode, Version};
use hyper::body::SizeHint;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::AsyncWrite;

/// How a response's body goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// Nothing after the head (`HEAD`, 204, 304, 1xx).
    Empty,
    /// `Content-Length`: this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the connection closes (an HTTP/1.0 client and a body of
    /// unknown length).
    Close,
}

/// What the head of a response said about what follows it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    pub(super) framing: Framing,
    pub(super) keep_alive: bool,
}

/// The request a response answers, as far as its head depends on it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asked {
    pub(super) version: Version,
    pub(super) head_method: bool,
    pub(super) keep_alive: bool,
}

/// Lays the head of a response out at the end of `out`: the status line,
/// the handler's headers (its map, then its own `lines`), then what framing the body takes and whether
/// the connection stays open (`Content-Length` from the body's exact size
/// when the handler gave none, else chunked; `connection`; `date`).
pub(super) fn head(
    out: &mut BytesMut,
    status: StatusCode,
    headers: &mut HeaderMap,
    lines: &[u8],
    hint: &SizeHint,
    asked: Asked,
) -> Plan {
    let seen = Seen::of(headers);
    let mut keep_alive = asked.keep_alive && !seen.close;
    let no_body = status.is_informational() || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    // The framing is the server's to decide.
    if seen.transfer_encoding {
        headers.remove(TRANSFER_ENCODING);
    }
    let declared = seen.length;
    let length = declared.or_else(|| hint.exact());
    let mut framing = match length {
        _ if no_body => Framing::Empty,
        Some(n) => Framing::Length(n),
        None if asked.version == Version::HTTP_11 => Framing::Chunked,
        None => {
            keep_alive = false;
            Framing::Close
        }
    };
    // No body, or a value that is not a length: dropped (the body's own
    // size stands).
    if seen.content_length && (no_body || declared.is_none()) {
        headers.remove(CONTENT_LENGTH);
    }
    out.reserve(64 + headers.len() * 48 + lines.len());
    out.put_slice(if asked.version == Version::HTTP_11 { b"HTTP/1.1 " } else { b"HTTP/1.0 " });
    out.put_slice(status.as_str().as_bytes());
    out.put_u8(b' ');
    out.put_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.put_slice(b"\r\n");
    for (name, value) in headers.iter() {
        if name == CONNECTION {
            continue;
        }
        out.put_slice(name.as_str().as_bytes());
        out.put_slice(b": ");
        out.put_slice(value.as_bytes());
        out.put_slice(b"\r\n");
    }
    out.put_slice(lines);
    match framing {
        Framing::Length(n) if declared.is_none() => {
            out.put_slice(b"content-length: ");
            out.put_slice(crate::digits::decimal(n, &mut [0; 20]));
            out.put_slice(b"\r\n");
        }
        Framing::Chunked if !asked.head_method => out.put_slice(b"transfer-encoding: chunked\r\n"),
        _ => {}
    }
    if !seen.date {
        super::date::put(out);
    }
    if !keep_alive {
        out.put_slice(b"connection: close\r\n");
    } else if asked.version == Version::HTTP_10 {
        out.put_slice(b"connection: keep-alive\r\n");
    }
    out.put_slice(b"\r\n");
    if asked.head_method {
        framing = Framing::Empty;
    }
    Plan { framing, keep_alive }
}

/// What the head needs to know of a handler's headers, found in one pass
/// over them (a response has a handful: comparing each name costs less
/// than a hashed look-up per header asked for, most of which find nothing).
#[derive(Default)]
struct Seen {
    /// `connection` lists `close`.
    close: bool,
    transfer_encoding: bool,
    content_length: bool,
    /// The first `content-length` value, when it is a length.
    length: Option<u64>,
    date: bool,
}

impl Seen {
    fn of(headers: &HeaderMap) -> Self {
        let mut seen = Self::default();
        for (name, value) in headers {
            if name == CONNECTION {
                seen.close |=
                    value.as_bytes().split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
            } else if name == CONTENT_LENGTH {
                if !seen.content_length {
                    seen.length = std::str::from_utf8(value.as_bytes()).ok().and_then(|v| v.parse().ok());
                }
                seen.content_length = true;
            } else if name == TRANSFER_ENCODING {
                seen.transfer_encoding = true;
            } else if name == DATE {
                seen.date = true;
            }
        }
        seen
    }
}

/// `n` in hexadecimal (a chunk's size).
fn hex(out: &mut BytesMut, n: usize) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = DIGITS[n & 0xf];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.put_slice(&digits[at..]);
}

/// A body is polled for more only while less than this is waiting to be
/// written: a client slower than its upstream holds about one frame here
/// (a stream's frames are up to 16 KiB), not a backlog. Gathering 64 KiB
/// cost a fifth more CPU per streamed event at 256 connections
/// (`bench/events.sh`): the frames waiting for slow clients spilled out
/// of the caches.
pub(super) const GATHER: usize = 16 * 1024;
/// The most pieces one `writev` takes.
const SLICES: usize = 32;

/// What is ready to go out on a connection, in order: the head, the body's
/// frames as they came (uncopied) and the chunked coding's lines between
/// them, written with `writev` as it is gathered.
#[derive(Debug, Default)]
pub(super) struct Outgoing {
    pieces: VecDeque<Bytes>,
    queued: usize,
    /// Room for the small pieces this side writes itself (heads, chunk
    /// lines); each is split off it, so one allocation serves many.
    scratch: BytesMut,
    /// A chunk has been written: the next chunk line starts with the
    /// previous chunk's CRLF.
    in_chunk: bool,
}

impl Outgoing {
    /// Room to lay out a head: the scratch buffer, to be taken back with
    /// [`Outgoing::take_scratch`].
    pub(super) fn scratch(&mut self) -> &mut BytesMut {
        if self.scratch.capacity() - self.scratch.len() < 512 {
            self.scratch.reserve(4096);
        }
        &mut self.scratch
    }

    /// Queues what was laid out in the scratch buffer.
    pub(super) fn take_scratch(&mut self) {
        if !self.scratch.is_empty() {
            let piece = self.scratch.split().freeze();
            self.push(piece);
        }
    }

    /// Queues `bytes` as they are.
    pub(super) fn push(&mut self, bytes: Bytes) {
        if !bytes.is_empty() {
            self.queued += bytes.len();
            self.pieces.push_back(bytes);
        }
    }

    /// Queues one frame of a body framed by `framing`.
    pub(super) fn push_data(&mut self, framing: Framing, data: Bytes) {
        if data.is_empty() {
            return;
        }
        if framing == Framing::Chunked {
            let len = data.len();
            let after_chunk = std::mem::replace(&mut self.in_chunk, true);
            let scratch = self.scratch();
            if after_chunk {
                scratch.put_slice(b"\r\n");
            }
            hex(scratch, len);
            scratch.put_slice(b"\r\n");
            self.take_scratch();
        }
        self.push(data);
    }

    /// Queues the end of a chunked body.
    pub(super) fn push_end(&mut self, framing: Framing) {
        if framing == Framing::Chunked {
            let end: &'static [u8] = if std::mem::take(&mut self.in_chunk) { b"\r\n0\r\n\r\n" } else { b"0\r\n\r\n" };
            self.push(Bytes::from_static(end));
        }
    }

    /// Bytes queued and not yet written.
    pub(super) fn queued(&self) -> usize {
        self.queued
    }

    /// Writes what is queued; ready once all of it is written.
    pub(super) fn poll_write<W: AsyncWrite + Unpin>(
        &mut self,
        w: &mut W,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        while !self.pieces.is_empty() {
            let written = {
                let mut slices = [IoSlice::new(&[]); SLICES];
                let mut n = 0;
                for (slot, piece) in slices.iter_mut().zip(self.pieces.iter()) {
                    *slot = IoSlice::new(piece);
                    n += 1;
                }
                let slices = slices.get(..n).unwrap_or_default();
                ready!(Pin::new(&mut *w).poll_write_vectored(cx, slices))?
            };
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.advance(written);
        }
        Poll::Ready(Ok(()))
    }

    fn advance(&mut self, mut n: usize) {
        self.queued -= n;
        while n > 0 {
            let Some(front) = self.pieces.front_mut() else { return };
            if front.len() <= n {
                n -= front.len();
                self.pieces.pop_front();
            } else {
                bytes::Buf::advance(front, n);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(version: Version, keep_alive: bool) -> Asked {
        Asked { version, head_method: false, keep_alive }
    }

    fn laid_out(status: StatusCode, headers: &mut HeaderMap, hint: SizeHint, asked: Asked) -> (String, Plan) {
        let mut out = BytesMut::new();
        let plan = head(&mut out, status, headers, b"", &hint, asked);
        (String::from_utf8(out.to_vec()).unwrap(), plan)
    }

    #[test]
    fn the_handlers_own_lines_follow_its_map_before_the_framing() {
        let mut h = HeaderMap::new();
        h.insert("content-type", "application/json".parse().unwrap());
        let mut out = BytesMut::new();
        let lines = b"x-spillway-model: p/m\r\nx-request-id: req_1\r\n";
        let plan =
            head(&mut out, StatusCode::OK, &mut h, lines, &SizeHint::with_exact(2), asked(Version::HTTP_11, true));
        let text = String::from_utf8(out.to_vec()).unwrap();
        assert!(
            text.starts_with(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-spillway-model: p/m\r\n\
                 x-request-id: req_1\r\ncontent-length: 2\r\ndate: "
            ),
            "{text}"
        );
        assert_eq!(plan.framing, Framing::Length(2));
    }

    #[test]
    fn a_known_length_is_written_and_the_date_added() {
        let mut h = HeaderMap::new();
        h.insert("content-type", "application/json".parse().unwrap());
        let (text, plan) = laid_out(StatusCode::OK, &mut h, SizeHint::with_exact(42), asked(Version::HTTP_11, true));
        assert!(text.starts_with("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 42\r\ndate: "));
        assert!(text.ends_with(" GMT\r\n\r\n"), "{text}");
        assert_eq!(plan.framing, Framing::Length(42));
        assert!(plan.keep_alive);
    }

    #[test]
    fn an_unknown_length_is_chunked_for_http11_and_runs_to_the_close_for_http10() {
        let (text, plan) =
            laid_out(StatusCode::OK, &mut HeaderMap::new(), SizeHint::new(), asked(Version::HTTP_11, true));
        assert!(text.contains("transfer-encoding: chunked\r\n"));
        assert_eq!(plan.framing, Framing::Chunked);
        let (text, plan) =
            laid_out(StatusCode::OK, &mut HeaderMap::new(), SizeHint::new(), asked(Version::HTTP_10, true));
        assert!(text.starts_with("HTTP/1.0 200 OK\r\n"));
        assert!(text.contains("connection: close\r\n"));
        assert!(!text.contains("transfer-encoding"));
        assert_eq!((plan.framing, plan.keep_alive), (Framing::Close, false));
    }

    #[test]
    fn no_content_has_no_length_and_a_handlers_close_is_honoured() {
        let mut h = HeaderMap::new();
        h.insert("connection", "close".parse().unwrap());
        let (text, plan) =
            laid_out(StatusCode::NO_CONTENT, &mut h, SizeHint::with_exact(0), asked(Version::HTTP_11, true));
        assert!(!text.contains("content-length"), "{text}");
        assert_eq!(text.matches("connection: close").count(), 1, "{text}");
        assert_eq!((plan.framing, plan.keep_alive), (Framing::Empty, false));
    }

    #[test]
    fn the_handlers_framing_headers_give_way_to_the_servers() {
        // Its own transfer-encoding is dropped, its length is used, its
        // date kept (not a second one), a close among other tokens seen.
        let mut h = HeaderMap::new();
        h.insert("transfer-encoding", "chunked".parse().unwrap());
        h.insert("content-length", "5".parse().unwrap());
        h.insert("date", "Mon, 07 Dec 2026 03:00:00 GMT".parse().unwrap());
        h.insert("connection", "keep-alive, Close".parse().unwrap());
        let (text, plan) = laid_out(StatusCode::OK, &mut h, SizeHint::new(), asked(Version::HTTP_11, true));
        assert!(!text.contains("transfer-encoding"), "{text}");
        assert_eq!(text.matches("content-length: 5\r\n").count(), 1, "{text}");
        assert_eq!(text.matches("date: ").count(), 1, "{text}");
        assert!(text.contains("date: Mon, 07 Dec 2026 03:00:00 GMT\r\n"), "{text}");
        assert_eq!((plan.framing, plan.keep_alive), (Framing::Length(5), false));
        // A length that is not one is dropped: the body's own size stands.
        let mut h = HeaderMap::new();
        h.insert("content-length", "five".parse().unwrap());
        let (text, plan) = laid_out(StatusCode::OK, &mut h, SizeHint::with_exact(3), asked(Version::HTTP_11, true));
        assert!(!text.contains("five") && text.contains("content-length: 3\r\n"), "{text}");
        assert_eq!((plan.framing, plan.keep_alive), (Framing::Length(3), true));
    }

    #[test]
    fn a_head_request_gets_the_length_but_no_body() {
        let asked = Asked { version: Version::HTTP_11, head_method: true, keep_alive: true };
        let (text, plan) = laid_out(StatusCode::OK, &mut HeaderMap::new(), SizeHint::with_exact(7), asked);
        assert!(text.contains("content-length: 7\r\n"));
        assert_eq!(plan.framing, Framing::Empty);
    }

    #[test]
    fn chunks_are_framed_with_their_hex_sizes() {
        let mut out = Outgoing::default();
        out.push_data(Framing::Chunked, Bytes::from(vec![b'a'; 26]));
        out.push_data(Framing::Chunked, Bytes::from_static(b"b"));
        out.push_end(Framing::Chunked);
        let all: Vec<u8> = out.pieces.iter().flat_map(|p| p.to_vec()).collect();
        assert_eq!(String::from_utf8(all).unwrap(), format!("1a\r\n{}\r\n1\r\nb\r\n0\r\n\r\n", "a".repeat(26)));
        assert_eq!(out.queued(), 26 + 1 + 4 + 5 + 7);
    }

    #[test]
    fn chunk_sizes_are_written_in_full() {
        for n in [0usize, 15, 16, 255, 65_536] {
            let mut out = BytesMut::new();
            hex(&mut out, n);
            assert_eq!(out, format!("{n:x}").as_bytes());
        }
    }
}
