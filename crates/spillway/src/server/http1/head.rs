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
    let framing = framing(&map, version)?;
    let (close, keep) = connection_tokens(&map);
    let keep_alive = if version == Version::HTTP_11 { !close } else { keep && !close };
    let expects_continue = version == Version::HTTP_11
        && map.get(EXPECT).is_some_and(|v| v.as_bytes().trim_ascii().eq_ignore_ascii_case(b"100-continue"));
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
fn framing(headers: &HeaderMap, version: Version) -> Result<BodyFraming, Refused> {
    let mut encodings = headers.get_all(TRANSFER_ENCODING).iter().peekable();
    if encodings.peek().is_some() {
        if version != Version::HTTP_11 {
            return Err(Refused::BadRequest("transfer-encoding in an HTTP/1.0 request"));
        }
        if headers.contains_key(CONTENT_LENGTH) {
            return Err(Refused::BadRequest("both transfer-encoding and content-length"));
        }
        let last = encodings.last().map(HeaderValue::as_bytes).unwrap_or_default();
        let chunked =
            last.rsplit(|&b| b == b',').next().is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        return if chunked {
            Ok(BodyFraming::Chunked(Chunked::default()))
        } else {
            Err(Refused::BadRequest("a transfer coding other than chunked last"))
        };
    }
    let mut length: Option<u64> = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        for part in value.as_bytes().split(|&b| b == b',') {
            let n = decimal(part.trim_ascii()).ok_or(Refused::BadRequest("an invalid content-length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(Refused::BadRequest("content-length given twice, differently"));
            }
            length = Some(n);
        }
    }
    Ok(match length {
        None | Some(0) => BodyFraming::None,
        Some(n) => BodyFraming::Length(n),
    })
}

/// Digits only (no sign, no space), at most 18 of them.
fn decimal(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 18 {
        return None;
    }
    text.iter().try_fold(0u64, |n, &b| b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0')))
}

/// Whether the `Connection` headers list `close` and `keep-alive`.
fn connection_tokens(headers: &HeaderMap) -> (bool, bool) {
    let (mut close, mut keep) = (false, false);
    for value in headers.get_all(CONNECTION) {
        for token in value.as_bytes().split(|&b| b == b',') {
            let token = token.trim_ascii();
            close |= token.eq_ignore_ascii_case(b"close");
            keep |= token.eq_ignore_ascii_case(b"keep-alive");
        }
    }
    (close, keep)
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
