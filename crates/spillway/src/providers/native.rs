//! I/O shared by the native adapters (`anthropic`, `gigachat`, `yandex`).
//!
//! Each native adapter translates the runner's OpenAI body with its pure
//! translator, sends it with a pooled client built here, and feeds the answer
//! back through its translator. What they have in common sits in this file:
//! the client (with `ca_file`), the fixed headers, turning a non-2xx answer
//! or a [`TranslateError`] into the runner's [`AttemptError`], and driving a
//! stream decoder over SSE events or NDJSON lines so that every upstream
//! hiccup (a cut body, a line that is not JSON, an error event) comes out as
//! a classified attempt failure, never a panic.

use super::openai_compat::{transport_error, AttemptErrorSource};
use super::translate::{ErrorClass, TranslateError};
use super::{BuildError, ChunkStream, StreamItem};
use crate::api::sse::{SseEvent, SseParser};
use crate::config::{HealthConfig, ProviderConfig, Secret};
use crate::outcome::{AttemptError, Failure};
use futures_util::StreamExt;
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use std::collections::VecDeque;
use std::time::Duration;

/// Upper bound on one NDJSON line (one event), the SSE parser's: a peer
/// that never sends a newline must not make the gateway buffer without limit.
const MAX_LINE: usize = crate::api::sse::MAX_EVENT_BYTES;

/// The pooled client of one provider: the system's roots plus `ca_file`
/// (GigaChat's Russian root CA). The same as the OpenAI adapter's, kept
/// separate because that one is private to its module.
pub(crate) fn build_client(config: &ProviderConfig, health: &HealthConfig) -> Result<reqwest::Client, BuildError> {
    let err = |message: String| BuildError { provider: config.name.clone(), message };
    let mut builder = reqwest::Client::builder()
        .connect_timeout(health.timeouts.connect)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .user_agent(concat!("spillway/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = &config.ca_file {
        let pem = std::fs::read(path).map_err(|e| err(format!("cannot read ca_file {}: {e}", path.display())))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| err(format!("ca_file {} is not PEM: {e}", path.display())))?;
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder.build().map_err(|e| err(format!("cannot build the HTTP client: {e}")))
}

/// `content-type: application/json` plus the configured extra headers.
pub(crate) fn base_headers(config: &ProviderConfig) -> Result<HeaderMap, BuildError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in &config.headers {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| BuildError {
            provider: config.name.clone(),
            message: format!("invalid header name `{name}`"),
        })?;
        headers.insert(n, secret_header(config, "", value)?);
    }
    Ok(headers)
}

/// A header value made of `prefix` and a secret, marked sensitive so it
/// never shows in debug output. The error names neither.
pub(crate) fn secret_header(config: &ProviderConfig, prefix: &str, secret: &Secret) -> Result<HeaderValue, BuildError> {
    let mut v = HeaderValue::from_str(&format!("{prefix}{}", secret.expose())).map_err(|_| BuildError {
        provider: config.name.clone(),
        message: "a key or header value contains characters not allowed in a header".into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// A translator's error as the runner's attempt error.
///
/// A request the format cannot express is a capability mismatch (the next
/// model may manage), a broken upstream payload a broken body, and an error
/// the upstream reported in a 2xx body or stream keeps its class — except
/// "invalid request", which without an HTTP status says nothing about the
/// client's request and counts as an upstream failure.
pub(crate) fn translate_failure(e: TranslateError) -> AttemptError {
    let failure = match &e {
        TranslateError::Unsupported(_) => Failure::CapabilityMismatch,
        TranslateError::Malformed { .. } => Failure::BrokenBody,
        TranslateError::Upstream { class, .. } => match class {
            ErrorClass::InvalidRequest => Failure::Upstream { status: None },
            other => super::failure_from_class(*other, 0, None, None),
        },
    };
    AttemptError::new(failure, e.to_string())
}

/// Classifies a non-2xx answer with the format's `classify` function; the
/// rate-limit reset comes from `Retry-After` or the provider's reset headers.
///
/// The body of a client error is not passed on: it is not OpenAI-shaped, so
/// the runner renders its own error from the detail instead.
pub(crate) async fn error_from_response(
    resp: reqwest::Response,
    classify: fn(u16, &[u8]) -> (ErrorClass, String),
) -> AttemptError {
    let status = resp.status().as_u16();
    let retry = crate::health::ratelimit::rate_limit_reset(resp.headers(), std::time::SystemTime::now());
    let body = resp.bytes().await.unwrap_or_default();
    let (class, message) = classify(status, &body);
    let failure = super::failure_from_class(class, status, None, retry);
    let message: String = message.chars().take(300).collect();
    AttemptError::new(failure, format!("HTTP {status}: {message}"))
}

/// Fails unless the answer to a stream request is `text/event-stream`.
pub(crate) fn require_event_stream(resp: &reqwest::Response) -> Result<(), AttemptError> {
    let is_sse = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if is_sse {
        Ok(())
    } else {
        Err(AttemptError::new(Failure::BrokenBody, "a stream was asked for but the response is not text/event-stream"))
    }
}

/// Reads a whole 2xx body, classifying a transport failure.
pub(crate) async fn body_bytes(resp: reqwest::Response) -> Result<bytes::Bytes, AttemptError> {
    resp.bytes().await.map_err(|e| {
        let mut err = transport_error(&e);
        if err.failure == Failure::ConnectError {
            err.failure = Failure::BrokenBody;
        }
        err
    })
}

/// How a byte stream is cut into the units a decoder reads.
pub(crate) trait Framing: Send + 'static {
    /// Feeds bytes; translated items go onto `out`.
    fn feed(&mut self, bytes: &[u8], out: &mut VecDeque<Result<StreamItem, AttemptError>>);
    /// The body ended: flush what is left.
    fn finish(&mut self, out: &mut VecDeque<Result<StreamItem, AttemptError>>);
}

/// SSE events, each handed to `decode(event_name, data)`.
pub(crate) struct Sse<F> {
    parser: SseParser,
    events: Vec<SseEvent>,
    decode: F,
}

impl<F> Sse<F>
where
    F: FnMut(Option<&str>, &str) -> Result<Vec<StreamItem>, TranslateError> + Send + 'static,
{
    /// Frames SSE for `decode`.
    pub(crate) fn new(decode: F) -> Self {
        Self { parser: SseParser::new(), events: Vec::new(), decode }
    }

    fn drain(&mut self, out: &mut VecDeque<Result<StreamItem, AttemptError>>) {
        for ev in self.events.drain(..) {
            push(out, (self.decode)(ev.event.as_deref(), &ev.data));
        }
    }
}

impl<F> Framing for Sse<F>
where
    F: FnMut(Option<&str>, &str) -> Result<Vec<StreamItem>, TranslateError> + Send + 'static,
{
    fn feed(&mut self, bytes: &[u8], out: &mut VecDeque<Result<StreamItem, AttemptError>>) {
        if self.parser.feed(bytes, &mut self.events).is_err() {
            out.push_back(Err(AttemptError::new(Failure::BrokenBody, "an SSE event was too large")));
        }
        self.drain(out);
    }

    fn finish(&mut self, out: &mut VecDeque<Result<StreamItem, AttemptError>>) {
        self.parser.finish(&mut self.events);
        self.drain(out);
    }
}

/// Newline-delimited lines (Yandex's NDJSON), each handed to `decode(line)`.
pub(crate) struct Lines<F> {
    buf: Vec<u8>,
    decode: F,
}

impl<F> Lines<F>
where
    F: FnMut(&str) -> Result<Vec<StreamItem>, TranslateError> + Send + 'static,
{
    /// Frames lines for `decode`.
    pub(crate) fn new(decode: F) -> Self {
        Self { buf: Vec::new(), decode }
    }

    fn line(&mut self, line: &[u8], out: &mut VecDeque<Result<StreamItem, AttemptError>>) {
        match std::str::from_utf8(line) {
            Ok(text) => push(out, (self.decode)(text)),
            Err(_) => out.push_back(Err(AttemptError::new(Failure::BrokenBody, "a stream line is not UTF-8"))),
        }
    }
}

impl<F> Framing for Lines<F>
where
    F: FnMut(&str) -> Result<Vec<StreamItem>, TranslateError> + Send + 'static,
{
    fn feed(&mut self, bytes: &[u8], out: &mut VecDeque<Result<StreamItem, AttemptError>>) {
        self.buf.extend_from_slice(bytes);
        while let Some(at) = self.buf.iter().position(|&b| b == b'\n') {
            let rest = self.buf.split_off(at + 1);
            let line = std::mem::replace(&mut self.buf, rest);
            self.line(&line[..at], out);
        }
        if self.buf.len() > MAX_LINE {
            self.buf = Vec::new();
            out.push_back(Err(AttemptError::new(Failure::BrokenBody, "a stream line was too long")));
        }
    }

    fn finish(&mut self, out: &mut VecDeque<Result<StreamItem, AttemptError>>) {
        let last = std::mem::take(&mut self.buf);
        if !last.iter().all(u8::is_ascii_whitespace) {
            self.line(&last, out);
        }
    }
}

fn push(out: &mut VecDeque<Result<StreamItem, AttemptError>>, decoded: Result<Vec<StreamItem>, TranslateError>) {
    match decoded {
        Ok(items) => out.extend(items.into_iter().map(Ok)),
        Err(e) => out.push_back(Err(translate_failure(e))),
    }
}

/// Runs `framing` over a body stream. The stream stops after the first
/// terminal item (`Done` or an error); a body that ends without `Done`
/// simply ends, which the runner treats as a broken body unless a finish
/// chunk came first.
pub(crate) fn decoded_stream<S, E, D>(bytes: S, framing: D) -> ChunkStream
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
    E: Into<AttemptErrorSource>,
    D: Framing,
{
    struct State<S, D> {
        bytes: std::pin::Pin<Box<S>>,
        framing: D,
        pending: VecDeque<Result<StreamItem, AttemptError>>,
        eof: bool,
        finished: bool,
    }
    let state = State { bytes: Box::pin(bytes), framing, pending: VecDeque::new(), eof: false, finished: false };
    futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if st.finished {
                return None;
            }
            if let Some(item) = st.pending.pop_front() {
                st.finished = item.is_err() || matches!(item, Ok(StreamItem::Done));
                return Some((item, st));
            }
            if st.eof {
                return None;
            }
            match st.bytes.next().await {
                Some(Ok(chunk)) => st.framing.feed(&chunk, &mut st.pending),
                Some(Err(e)) => {
                    let src: AttemptErrorSource = e.into();
                    st.pending.push_back(Err(src.0));
                }
                None => {
                    st.framing.finish(&mut st.pending);
                    st.eof = true;
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(parts: &'static [&'static str]) -> Vec<String> {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let framing = Lines::new(move |line: &str| {
            sink.lock().unwrap().push(line.to_owned());
            Ok(Vec::new())
        });
        let body = futures_util::stream::iter(
            parts.iter().map(|p| Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(p.as_bytes()))),
        );
        let _: Vec<_> = decoded_stream(body, framing).collect().await;
        let out = seen.lock().unwrap().clone();
        out
    }

    #[tokio::test]
    async fn lines_are_split_across_chunks() {
        assert_eq!(lines(&["{\"a\"", ":1}\n{\"b\":2}\n", "{\"c\":3}"]).await, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
    }

    #[tokio::test]
    async fn a_decoder_error_ends_the_stream() {
        let framing = Sse::new(|_: Option<&str>, data: &str| {
            if data == "bad" {
                Err(TranslateError::Malformed { format: "test", detail: "bad".into() })
            } else {
                Ok(vec![StreamItem::Chunk(serde_json::json!({"choices": []}))])
            }
        });
        let body = futures_util::stream::iter(
            ["data: ok\n\n", "data: bad\n\n", "data: ok\n\n"]
                .map(|p| Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(p.as_bytes()))),
        );
        let items: Vec<_> = decoded_stream(body, framing).collect().await;
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].as_ref().unwrap_err().failure, Failure::BrokenBody);
    }

    #[test]
    fn translate_errors_are_classified() {
        let upstream = |class| TranslateError::Upstream { class, message: String::new() };
        assert_eq!(translate_failure(upstream(ErrorClass::ContentFilter)).failure, Failure::ContentFilter);
        assert_eq!(translate_failure(upstream(ErrorClass::InvalidRequest)).failure, Failure::Upstream { status: None });
        assert_eq!(translate_failure(TranslateError::Unsupported("x".into())).failure, Failure::CapabilityMismatch);
    }
}
