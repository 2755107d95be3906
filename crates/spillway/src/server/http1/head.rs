//! A request head as the server reads it (RFC 9112, sections 2–6): the
//! request line and headers parsed by `httparse` straight out of the
//! connection's read buffer, the header values kept as slices of the
//! head's own bytes, and what the rest of the exchange needs to know —
//! how the body is framed, whether the connection stays open after the
//! answer, whether the client waits for `100 Continue`.

use crate::providers::http::chunked::Chunked;
use bytes::{Buf, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri, Version};

/// The longest request head read (request line and headers).
pub(super) const MAX_HEAD: usize = 64 * 1024;
/// Headers a request head may have.
const MAX_HEADERS: usize = 100;

/// A head the server refuses: the client gets this status, and the
/// connection closes (what follows a head that cannot be read cannot be
/// framed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// Not an HTTP/1.x request, or one whose body cannot be framed.
    BadRequest(&'static str),
    /// The head is longer than [`MAX_HEAD`] or has more than 100 headers.
    TooLarge,
    /// A request line that names another HTTP version (HTTP/2's preface).
    Version,
}

impl Refused {
    /// The whole response the client gets.
    pub(super) fn response(self) -> &'static [u8] {
        match self {
            Self::BadRequest(_) => b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            Self::TooLarge => {
                b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            }
            Self::Version => {
                b"HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            }
        }
    }

    /// What was wrong, for the log.
    pub(super) fn why(self) -> &'static str {
        match self {
            Self::BadRequest(why) => why,
            Self::TooLarge => "the request head is too large",
            Self::Version => "not HTTP/1.x",
        }
    }
}

/// How a request's body is framed.
#[derive(Debug)]
pub(super) enum BodyFraming {
    /// No body (no `Content-Length`, no `Transfer-Encoding`, or a length of 0).
    None,
    /// `Content-Length`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked(Chunked),
}

/// A request head, read.
#[derive(Debug)]
pub(super) struct Head {
    /// Method, target, version and headers; the body comes later.
    pub(super) request: Request<()>,
    pub(super) framing: BodyFraming,
    /// HTTP/1.1 without `Connection: close`, or HTTP/1.0 with
    /// `Connection: keep-alive`.
    pub(super) keep_alive: bool,
    /// `Expect: 100-continue`: the client waits for a `100 Continue`
    /// before it sends its body.
    pub(super) expects_continue: bool,
}

/// A whole head from the front of `buf`, taken out of it; `None` while more
/// must be read.
pub(super) fn parse(buf: &mut BytesMut) -> Result<Option<Head>, Refused> {
    // Left uninitialized: zeroing room for a hundred headers costs more
    // than parsing the few a request has.
    let mut headers = [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_request_with_uninit_headers(&mut parsed, buf, &mut headers)
    {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return if buf.len() > MAX_HEAD { Err(Refused::TooLarge) } else { Ok(None) },
        Err(httparse::Error::TooManyHeaders) => return Err(Refused::TooLarge),
        // A well-formed request line of another version (HTTP/2's preface).
        Err(httparse::Error::Version) if other_version(buf) => return Err(Refused::Version),
        Err(_) => return Err(Refused::BadRequest("not an HTTP/1.x request head")),
    };
    if len > MAX_HEAD {
        return Err(Refused::TooLarge);
    }
    let method = Method::from_bytes(parsed.method.unwrap_or_default().as_bytes())
        .map_err(|_| Refused::BadRequest("an invalid method"))?;
    let version = if parsed.version == Some(1) { Version::HTTP_11 } else { Version::HTTP_10 };
    // Places in the head of the target and of each header value, found
    // while the parse borrows the buffer; the head is taken out after.
    let base = buf.as_ptr() as usize;
    let place = |s: &[u8]| {
        let at = (s.as_ptr() as usize).wrapping_sub(base);
        at..at + s.len()
    };
    let target = place(parsed.path.unwrap_or_default().as_bytes());
    let mut names = Vec::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|_| Refused::BadRequest("a header name"))?;
        names.push((name, place(h.value)));
    }
    let head = buf.split_to(len).freeze();
    let slice = |at: std::ops::Range<usize>| {
        // (Always inside the head: httparse read it there.)
        head.get(at.clone()).ok_or(Refused::BadRequest("a header outside the head"))?;
        Ok::<_, Refused>(head.slice(at))
    };
    let uri = Uri::from_maybe_shared(slice(target)?).map_err(|_| Refused::BadRequest("an invalid target"))?;
    let mut map = HeaderMap::with_capacity(names.len());
    for (name, at) in names {
        let value = HeaderValue::from_maybe_shared(slice(at)?).map_err(|_| Refused::BadRequest("a header value"))?;
        map.append(name, value);
    }
    let seen = Seen::of(&map);
    let framing = framing(&seen, version)?;
    let keep_alive = if version == Version::HTTP_11 { !seen.close } else { seen.keep && !seen.close };
    let expects_continue = version == Version::HTTP_11 && seen.expects_continue;
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = version;
    *request.headers_mut() = map;
    Ok(Some(Head { request, framing, keep_alive, expects_continue }))
}

/// Whether the request line names an HTTP version other than 1.x.
fn other_version(buf: &[u8]) -> bool {
    let line = buf.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let version = line.rsplit(|&b| b == b' ').next().unwrap_or_default();
    version.len() >= 6 && version.starts_with(b"HTTP/") && version.get(5).is_some_and(u8::is_ascii_digit)
}

/// How the body of a request with `headers` is framed (RFC 9112, section
/// 6.3). A request that could be read two ways — both `Transfer-Encoding`
/// and `Content-Length`, lengths that disagree, a coding other than
/// chunked last — is refused: a proxy in front may have framed it the
/// other way (request smuggling).
fn framing(seen: &Seen<'_>, version: Version) -> Result<BodyFraming, Refused> {
    if let Some(last) = seen.last_encoding {
        if version != Version::HTTP_11 {
            return Err(Refused::BadRequest("transfer-encoding in an HTTP/1.0 request"));
        }
        if seen.length != Ok(None) {
            return Err(Refused::BadRequest("both transfer-encoding and content-length"));
        }
        let chunked =
            last.rsplit(|&b| b == b',').next().is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        return if chunked {
            Ok(BodyFraming::Chunked(Chunked::default()))
        } else {
            Err(Refused::BadRequest("a transfer coding other than chunked last"))
        };
    }
    Ok(match seen.length.map_err(Refused::BadRequest)? {
        None | Some(0) => BodyFraming::None,
        Some(n) => BodyFraming::Length(n),
    })
}

/// What the rest of the exchange needs of a request's headers, found in
/// one pass over them (a request has a handful: comparing each name costs
/// less than a hashed look-up per header asked for, most of which find
/// nothing).
struct Seen<'h> {
    /// The last `Transfer-Encoding` value.
    last_encoding: Option<&'h [u8]>,
    /// What every `Content-Length` value (comma-separated lists too) says:
    /// none, one length, or why they cannot be read.
    length: Result<Option<u64>, &'static str>,
    /// `Connection` lists `close`; lists `keep-alive`.
    close: bool,
    keep: bool,
    /// `Expect: 100-continue`.
    expects_continue: bool,
}

impl<'h> Seen<'h> {
    fn of(headers: &'h HeaderMap) -> Self {
        let mut seen =
            Self { last_encoding: None, length: Ok(None), close: false, keep: false, expects_continue: false };
        let mut expect_read = false;
        for (name, value) in headers {
            let v = value.as_bytes();
            if name == CONTENT_LENGTH {
                seen.length = seen.length.and_then(|length| more_length(length, v));
            } else if name == TRANSFER_ENCODING {
                seen.last_encoding = Some(v);
            } else if name == CONNECTION {
                for token in v.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    seen.close |= token.eq_ignore_ascii_case(b"close");
                    seen.keep |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            } else if name == EXPECT && !expect_read {
                // (The first `Expect` is the one read.)
                expect_read = true;
                seen.expects_continue = v.trim_ascii().eq_ignore_ascii_case(b"100-continue");
            }
        }
        seen
    }
}

/// The length so far and one more `Content-Length` value: every length it
/// lists must be the same.
fn more_length(mut length: Option<u64>, value: &[u8]) -> Result<Option<u64>, &'static str> {
    for part in value.split(|&b| b == b',') {
        let n = decimal(part.trim_ascii()).ok_or("an invalid content-length")?;
        if length.is_some_and(|l| l != n) {
            return Err("content-length given twice, differently");
        }
        length = Some(n);
    }
    Ok(length)
}

/// Digits only (no sign, no space), at most 18 of them.
fn decimal(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 18 {
        return None;
    }
    text.iter().try_fold(0u64, |n, &b| b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0')))
}

/// Skips empty lines before a request line (RFC 9112, section 2.2: a
/// server should ignore at least one), so a client that ends its body
/// with an extra CRLF is not answered 400.
pub(super) fn skip_blank_lines(buf: &mut BytesMut) {
    while let Some(&b) = buf.first() {
        match b {
            b'\r' if buf.get(1) == Some(&b'\n') => buf.advance(2),
            b'\n' => buf.advance(1),
            _ => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(wire: &str) -> Result<Head, Refused> {
        let mut buf = BytesMut::from(wire);
        parse(&mut buf).map(|h| h.expect("a whole head"))
    }

    fn refused(wire: &str) -> &'static str {
        match head(wire) {
            Err(Refused::BadRequest(why)) => why,
            other => panic!("{wire:?} was not refused as a bad request: {:?}", other.map(|h| h.framing)),
        }
    }

    #[test]
    fn a_body_framed_two_ways_or_unreadably_is_refused_with_its_reason() {
        let cases = [
            ("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", "both transfer-encoding"),
            ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n", "both transfer-encoding"),
            ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.0"),
            ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "other than chunked"),
            ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n", "other than chunked"),
            ("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "differently"),
            ("POST / HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\n", "differently"),
            ("POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n", "invalid content-length"),
        ];
        for (wire, says) in cases {
            assert!(refused(wire).contains(says), "{wire:?}: {}", refused(wire));
        }
    }

    #[test]
    fn framing_keep_alive_and_expect_are_read_in_any_case() {
        let h = head("POST / HTTP/1.1\r\ncontent-length: 3, 3\r\nEXPECT: 100-Continue\r\n\r\n").unwrap();
        assert!(matches!(h.framing, BodyFraming::Length(3)));
        assert!(h.keep_alive && h.expects_continue);
        let h = head("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\nConnection: Close\r\n\r\n").unwrap();
        assert!(matches!(h.framing, BodyFraming::Chunked(_)));
        assert!(!h.keep_alive);
        let h = head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nExpect: 100-continue\r\n\r\n").unwrap();
        assert!(matches!(h.framing, BodyFraming::None));
        assert!(h.keep_alive && !h.expects_continue, "HTTP/1.0 keeps alive when asked; it cannot expect 100");
        assert!(!head("GET / HTTP/1.0\r\n\r\n").unwrap().keep_alive);
        let h = head("POST / HTTP/1.1\r\nExpect: something\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n");
        let h = h.unwrap();
        assert!(!h.expects_continue, "the first Expect is the one read");
        assert!(matches!(h.framing, BodyFraming::None));
    }
}
