//! The send-and-decode path the native adapters (`anthropic`, `gigachat`,
//! `yandex`, `gemini`, `bedrock`) share.
//!
//! Each native adapter translates the runner's OpenAI body with its pure
//! translator and hands the result here: [`encode`], [`send`] with the
//! fixed headers ([`Upstream`]), then [`read`] — a non-2xx status is
//! classified by the format's own rules, a whole 2xx body goes through its
//! converter, a stream through its decoder ([`super::framing`]). What
//! differs between formats is one [`Wire`] implementation each, called
//! statically. The runner's deadlines bound the whole call from outside.
//!
//! Also here: the pooled `reqwest` client of a native provider (with
//! `ca_file`), which discovery's listings use too.

use super::classify::{failure_from_class, translate_failure, transport_error};
use super::framing::{decoded_stream, Framing};
use super::translate::{ErrorClass, TranslateError};
use super::types::{AttemptRequest, BuildError, Reply};
use crate::config::{HealthConfig, ProviderConfig};
use crate::outcome::{AttemptError, Failure};
use bytes::Bytes;
use http::header::{HeaderMap, CONTENT_TYPE};
use serde_json::Value;
use std::time::Duration;

pub(crate) use super::headers::{base_headers, secret_header};

/// The pooled client of one provider: the system's roots plus `ca_file`
/// (GigaChat's Russian root CA). The OpenAI adapter has its own
/// (`super::http`), built for the request path's load.
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

/// A native wire format, as the shared path reads its answers.
pub(crate) trait Wire {
    /// How its streamed body is cut into what its decoder reads.
    type Framing: Framing;

    /// A non-2xx answer: how the runner treats it, and a message for the
    /// attempt log.
    fn classify(status: u16, body: &[u8]) -> (ErrorClass, String);

    /// A whole 2xx body as an OpenAI `chat.completion` (not yet stamped).
    fn completion(body: &[u8]) -> Result<Value, TranslateError>;

    /// The decoder of one streamed answer.
    fn framing(include_usage: bool) -> Self::Framing;

    /// [`Self::classify`] for formats whose error name is in a header
    /// (Bedrock's `x-amzn-ErrorType`).
    fn classify_headers(status: u16, _headers: &HeaderMap, body: &[u8]) -> (ErrorClass, String) {
        Self::classify(status, body)
    }

    /// The wait a non-2xx body asks for, when the format puts it there
    /// (Gemini's `RetryInfo.retryDelay`); the headers' wait comes first.
    fn retry_after(_body: &[u8]) -> Option<Duration> {
        None
    }
}

/// Where a native adapter sends its attempts: the pooled client, the URL
/// and the fixed headers, prepared when the provider is built.
#[derive(Debug)]
pub(crate) struct Upstream {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
}

impl Upstream {
    pub(crate) fn new(client: reqwest::Client, url: String, headers: HeaderMap) -> Self {
        Self { client, url, headers }
    }

    /// A POST of `body` with the fixed headers; the caller may add more.
    pub(crate) fn post(&self, body: Bytes) -> reqwest::RequestBuilder {
        self.post_to(&self.url, body)
    }

    /// [`Self::post`] to another URL of the same API (Gemini's and
    /// Bedrock's URLs name the model and whether it streams).
    pub(crate) fn post_to(&self, url: &str, body: Bytes) -> reqwest::RequestBuilder {
        self.client.post(url).headers(self.headers.clone()).body(body)
    }

    /// The URL given at build (an API's root where calls name their own).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// One attempt with nothing more to it: [`encode`], [`send`] (with
    /// the client request's id), [`read`]; the upstream's own id goes to
    /// the attempt's hints.
    pub(crate) async fn call<W: Wire>(
        &self,
        body: &Value,
        asked: Asked,
        ids: super::types::CallIds<'_>,
        hints: &super::types::UpstreamHints,
    ) -> Result<Reply, AttemptError> {
        self.call_at::<W>(&self.url, body, asked, ids, hints).await
    }

    /// [`Self::call`] to `url`.
    pub(crate) async fn call_at<W: Wire>(
        &self,
        url: &str,
        body: &Value,
        asked: Asked,
        ids: super::types::CallIds<'_>,
        hints: &super::types::UpstreamHints,
    ) -> Result<Reply, AttemptError> {
        let mut post = self.post_to(url, encode(body)?);
        for (name, value) in super::headers::call_headers(ids) {
            post = post.header(name, value);
        }
        let resp = send(post).await?;
        hints.set_upstream_id(super::headers::upstream_request_id(resp.headers()));
        read::<W>(resp, asked).await
    }
}

/// How an attempt wants its answer read (from its [`AttemptRequest`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked {
    pub(crate) stream: bool,
    pub(crate) include_usage: bool,
    pub(crate) accept_whole: bool,
}

impl Asked {
    pub(crate) fn of(req: &AttemptRequest<'_>) -> Self {
        Self { stream: req.stream, include_usage: req.include_usage, accept_whole: req.accept_whole }
    }
}

/// A translated body as the bytes to send.
pub(crate) fn encode(body: &Value) -> Result<Bytes, AttemptError> {
    serde_json::to_vec(body).map(Bytes::from).map_err(|e| AttemptError::new(Failure::BrokenBody, e.to_string()))
}

/// Sends a request; no response head is a classified transport failure.
pub(crate) async fn send(request: reqwest::RequestBuilder) -> Result<reqwest::Response, AttemptError> {
    request.send().await.map_err(|e| transport_error(&e))
}

/// Reads an answer in format `W`: a non-2xx status as the format
/// classifies it, a stream through its decoder, a whole body through its
/// converter — also when a stream was asked for only to read a whole
/// answer (`accept_whole`) and the upstream sent a whole body anyway.
pub(crate) async fn read<W: Wire>(resp: reqwest::Response, req: Asked) -> Result<Reply, AttemptError> {
    if !resp.status().is_success() {
        return Err(error_from_response::<W>(resp).await);
    }
    let kind = W::Framing::CONTENT_TYPE;
    let whole_instead = req.accept_whole && kind.is_some_and(|k| !has_content_type(&resp, k));
    if req.stream && !whole_instead {
        if let Some(kind) = kind {
            require_content_type(&resp, kind)?;
        }
        return Ok(Reply::Stream(decoded_stream(resp.bytes_stream(), W::framing(req.include_usage))));
    }
    let body = body_bytes(resp).await?;
    let value = W::completion(&body).map_err(translate_failure)?;
    Ok(Reply::Complete(value.into()))
}

/// Classifies a non-2xx answer with the format's rules; the rate-limit
/// reset comes from `Retry-After` or the provider's reset headers.
///
/// The body of a client error is not passed on: it is not OpenAI-shaped, so
/// the runner renders its own error from the detail instead.
async fn error_from_response<W: Wire>(resp: reqwest::Response) -> AttemptError {
    let status = resp.status().as_u16();
    let retry = crate::health::ratelimit::rate_limit_reset(resp.headers(), std::time::SystemTime::now());
    let headers = resp.headers().clone();
    let body = resp.bytes().await.unwrap_or_default();
    let retry = retry.or_else(|| W::retry_after(&body));
    let (class, message) = W::classify_headers(status, &headers, &body);
    let failure = failure_from_class(class, status, None, retry);
    let message: String = message.chars().take(300).collect();
    AttemptError::new(failure, format!("HTTP {status}: {message}"))
}

/// Fails unless the answer to a stream request has the stream's content type.
fn require_content_type(resp: &reqwest::Response, kind: &str) -> Result<(), AttemptError> {
    if has_content_type(resp, kind) {
        Ok(())
    } else {
        Err(AttemptError::new(Failure::BrokenBody, format!("a stream was asked for but the response is not {kind}")))
    }
}

fn has_content_type(resp: &reqwest::Response, kind: &str) -> bool {
    resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with(kind))
}

/// Reads a whole 2xx body, classifying a transport failure (also for
/// GigaChat's token endpoint).
pub(crate) async fn body_bytes(resp: reqwest::Response) -> Result<Bytes, AttemptError> {
    resp.bytes().await.map_err(|e| {
        let mut err = transport_error(&e);
        if err.failure == Failure::ConnectError {
            err.failure = Failure::BrokenBody;
        }
        err
    })
}
