//! Upstream providers: one adapter per wire format behind one interface.
//!
//! The runner hands an adapter an OpenAI-shaped request body (already
//! rewritten for this attempt) and gets back either a whole completion or a
//! stream of OpenAI chunks ([`Reply`]), or a classified [`AttemptError`].
//! Adapters never decide *what happens next* — only what the upstream said.

pub mod anthropic;
pub mod gigachat;
pub mod http;
pub mod mock;
pub(crate) mod native;
pub mod openai_compat;
pub mod proxy;
pub mod translate;
pub mod yandex;

use crate::config::{ProviderConfig, ProviderKind};
use crate::outcome::{AttemptError, Failure};
use futures_util::stream::BoxStream;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
pub use translate::StreamItem;

/// Chunks of a streamed answer, as OpenAI `chat.completion.chunk` values.
pub type ChunkStream = BoxStream<'static, Result<StreamItem, AttemptError>>;

/// What an upstream answered.
pub enum Reply {
    /// A whole `chat.completion` (not yet stamped).
    Complete(crate::api::completion::Completion),
    /// A stream of chunks.
    Stream(ChunkStream),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Complete(v) => f.debug_tuple("Complete").field(v).finish(),
            Self::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// One attempt's request, as the runner prepared it.
#[derive(Debug)]
pub struct AttemptRequest<'a> {
    /// The model id at the provider.
    pub model_id: &'a str,
    /// The OpenAI request body for this attempt (its `model` is replaced by
    /// the adapter); borrowed from the client's request when not rewritten.
    pub body: crate::api::request::Outgoing<'a>,
    /// Stream the answer.
    pub stream: bool,
    /// The client asked for a usage chunk.
    pub include_usage: bool,
    /// Where the adapter reports what the upstream's headers said about its
    /// limits (read by the runner after the call).
    pub hints: &'a UpstreamHints,
}

/// What an upstream's answer said about its limits, beyond the answer.
#[derive(Debug, Default)]
pub struct UpstreamHints {
    /// Milliseconds until the quota resets, when an answer said it is used
    /// up (`x-ratelimit-remaining-*: 0`); 0 when not.
    exhausted_ms: std::sync::atomic::AtomicU64,
}

impl UpstreamHints {
    /// Records the quota reset an answer announced (`reset_hint`).
    pub fn set_exhausted_for(&self, d: std::time::Duration) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1);
        self.exhausted_ms.store(ms, Ordering::Release);
    }

    /// Reads it back.
    pub fn exhausted_for(&self) -> Option<std::time::Duration> {
        let ms = self.exhausted_ms.load(Ordering::Acquire);
        (ms > 0).then(|| std::time::Duration::from_millis(ms))
    }
}

/// The adapter of one provider, by wire format.
#[derive(Debug)]
pub enum Adapter {
    /// OpenAI-compatible HTTP APIs.
    OpenAi(openai_compat::OpenAiCompat),
    /// In-process mock.
    Mock(mock::MockProvider),
    /// Anthropic Messages API.
    Anthropic(anthropic::AnthropicAdapter),
    /// GigaChat v1 chat (OAuth token cache).
    GigaChat(gigachat::GigaChatAdapter),
    /// Yandex Foundation Models native completion.
    Yandex(yandex::YandexAdapter),
}

/// A configured provider: its adapter and bookkeeping.
#[derive(Debug)]
pub struct Provider {
    /// Its config.
    pub config: ProviderConfig,
    /// Its adapter.
    pub adapter: Adapter,
    /// Attempts in flight right now (the bulkhead reads it).
    in_flight: AtomicU64,
    /// Masks this provider's secrets in whatever its upstream says.
    redactor: Arc<crate::redact::Redactor>,
}

/// Errors building a provider (bad CA file, TLS setup).
#[derive(Debug, thiserror::Error)]
#[error("provider `{provider}`: {message}")]
pub struct BuildError {
    /// Provider name.
    pub provider: String,
    /// What failed.
    pub message: String,
}

impl Provider {
    /// Builds the adapter for a compiled provider config.
    pub fn build(config: ProviderConfig, health: &crate::config::HealthConfig) -> Result<Arc<Self>, BuildError> {
        let adapter = match config.kind {
            ProviderKind::Mock => Adapter::Mock(mock::MockProvider::new(&config)),
            ProviderKind::OpenAi => Adapter::OpenAi(openai_compat::OpenAiCompat::new(&config, health)?),
            ProviderKind::Anthropic => Adapter::Anthropic(anthropic::AnthropicAdapter::new(&config, health)?),
            ProviderKind::GigaChat => Adapter::GigaChat(gigachat::GigaChatAdapter::new(&config, health)?),
            ProviderKind::Yandex => Adapter::Yandex(yandex::YandexAdapter::new(&config, health)?),
        };
        let redactor = Arc::new(crate::redact::Redactor::for_provider(&config));
        Ok(Arc::new(Self { config, adapter, in_flight: AtomicU64::new(0), redactor }))
    }

    /// Sends one attempt.
    ///
    /// The native adapters' futures are boxed: a future is as large as its
    /// largest variant, and the whole request's future (moved and boxed by
    /// the server) would otherwise carry their token refreshes and
    /// translations on every OpenAI-compatible call too.
    ///
    /// Every error leaves through the provider's redactor, those of a
    /// stream too: an upstream's text reaches clients and logs only from here.
    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let reply = match &self.adapter {
            Adapter::OpenAi(a) => a.call(req).await,
            Adapter::Mock(m) => Box::pin(m.call(req)).await,
            Adapter::Anthropic(a) => Box::pin(a.call(req)).await,
            Adapter::GigaChat(g) => Box::pin(g.call(req)).await,
            Adapter::Yandex(y) => Box::pin(y.call(req)).await,
        };
        match reply {
            Ok(Reply::Stream(s)) => {
                use futures_util::TryStreamExt;
                let redactor = Arc::clone(&self.redactor);
                Ok(Reply::Stream(Box::pin(s.map_err(move |e| redactor.attempt_error(e)))))
            }
            Ok(done) => Ok(done),
            Err(e) => Err(self.redactor.attempt_error(e)),
        }
    }

    /// Takes a bulkhead slot; `None` when the provider is at `max_in_flight`.
    pub fn try_acquire(self: &Arc<Self>) -> Option<InFlight> {
        let now = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        if self.config.max_in_flight.is_some_and(|max| now > max) {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(InFlight(Arc::clone(self)))
    }

    /// Attempts in flight.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Acquire)
    }
}

/// A held bulkhead slot; released on drop (also when a stream ends or the
/// client goes away).
#[derive(Debug)]
pub struct InFlight(Arc<Provider>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Classifies a non-2xx OpenAI-style error (also used by the mock).
pub fn classify_openai_error(status: u16, retry_after: Option<std::time::Duration>, body: &[u8]) -> Failure {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let err = parsed.as_ref().and_then(|v| v.get("error"));
    let code = err.and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("");
    let kind = err.and_then(|e| e.get("type")).and_then(Value::as_str).unwrap_or("");
    let message = err
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .or_else(|| parsed.as_ref().and_then(|v| v.get("message")).and_then(Value::as_str))
        .unwrap_or("")
        .to_ascii_lowercase();
    let context_words = [
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "prompt is too long",
        "too many tokens",
    ];
    let is_context = code == "context_length_exceeded" || context_words.iter().any(|w| message.contains(w));
    match status {
        401 => Failure::AuthRejected,
        402 => Failure::QuotaExhausted,
        403 => Failure::Forbidden,
        404 if message.contains("no endpoints found that support") => Failure::CapabilityMismatch,
        404 => Failure::NotFound,
        408 => Failure::Timeout,
        // Groq: 413 is a tokens-per-minute limit, not the client's fault.
        413 if code == "rate_limit_exceeded" || kind == "tokens" => Failure::RateLimited { retry_after },
        413 => Failure::ContextLength,
        429 if code == "insufficient_quota"
            || kind == "insufficient_quota"
            || message.contains("free-models-per-day") =>
        {
            Failure::QuotaExhausted
        }
        429 => Failure::RateLimited { retry_after },
        400 | 422 if code == "model_decommissioned" => Failure::NotFound,
        400 | 422 if is_context => Failure::ContextLength,
        400 | 422 if matches!(code, "unsupported_parameter" | "unsupported_value" | "tool_use_failed") => {
            Failure::CapabilityMismatch
        }
        400..=499 if !matches!(status, 409 | 424 | 498 | 499) => {
            // An OpenAI-shaped error goes back to the client unchanged.
            let body = err.is_some().then(|| bytes::Bytes::copy_from_slice(body));
            Failure::InvalidRequest { status, body }
        }
        _ => Failure::Upstream { status: Some(status) },
    }
}

/// Turns a translator's [`translate::ErrorClass`] into the runner's
/// [`Failure`] (the native adapters classify with it).
pub fn failure_from_class(
    class: translate::ErrorClass,
    status: u16,
    body: Option<bytes::Bytes>,
    retry_after: Option<std::time::Duration>,
) -> Failure {
    use translate::ErrorClass as C;
    match class {
        C::RateLimited => Failure::RateLimited { retry_after },
        C::QuotaExhausted => Failure::QuotaExhausted,
        C::Forbidden => Failure::Forbidden,
        C::NotFound => Failure::NotFound,
        C::AuthRejected => Failure::AuthRejected,
        C::ContextLength => Failure::ContextLength,
        C::CapabilityMismatch => Failure::CapabilityMismatch,
        C::ContentFilter => Failure::ContentFilter,
        C::InvalidRequest => Failure::InvalidRequest { status, body },
        C::Upstream => Failure::Upstream { status: (status != 0).then_some(status) },
    }
}
