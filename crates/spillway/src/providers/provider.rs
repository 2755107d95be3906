//! [`Provider`]: one configured provider — its adapter, picked by wire
//! format, and its bulkhead counter — as the runner calls it.
//!
//! The top of `providers/`: it names every adapter; nothing in
//! `providers/` imports it back. Built once per config generation by the
//! gateway; a request reaches it through its cascade's targets.

use super::embed::{Embedder, MockEmbedder};
use super::types::{AttemptRequest, BuildError, Reply};
use super::{anthropic, azure, bedrock, gemini, gigachat, mock, openai_compat, yandex};
use crate::api::embeddings::{EmbeddingRequest, Vectors};
use crate::config::{HealthConfig, ProviderConfig, ProviderKind};
use crate::outcome::AttemptError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    /// Azure OpenAI deployments.
    Azure(azure::AzureAdapter),
    /// Google Gemini's own API.
    Gemini(gemini::GeminiAdapter),
    /// AWS Bedrock's Converse API.
    Bedrock(bedrock::BedrockAdapter),
}

/// A configured provider: its adapter and bookkeeping.
#[derive(Debug)]
pub struct Provider {
    pub config: ProviderConfig,
    pub adapter: Adapter,
    /// Its embeddings call, for the kinds that have one.
    pub embedder: Embedder,
    /// Attempts in flight right now (the bulkhead reads it).
    in_flight: AtomicU64,
    /// Masks this provider's secrets in whatever its upstream says.
    redactor: Arc<crate::redact::Redactor>,
}

impl Provider {
    /// Builds the adapter for a compiled provider config.
    pub fn build(config: ProviderConfig, health: &HealthConfig) -> Result<Arc<Self>, BuildError> {
        let adapter = match config.kind {
            ProviderKind::Mock => Adapter::Mock(mock::MockProvider::new(&config)),
            ProviderKind::OpenAi => Adapter::OpenAi(openai_compat::OpenAiCompat::new(&config, health)?),
            ProviderKind::Anthropic => Adapter::Anthropic(anthropic::AnthropicAdapter::new(&config, health)?),
            ProviderKind::GigaChat => Adapter::GigaChat(gigachat::GigaChatAdapter::new(&config, health)?),
            ProviderKind::Yandex => Adapter::Yandex(yandex::YandexAdapter::new(&config, health)?),
            ProviderKind::Azure => Adapter::Azure(azure::AzureAdapter::new(&config, health)?),
            ProviderKind::Gemini => Adapter::Gemini(gemini::GeminiAdapter::new(&config, health)?),
            ProviderKind::Bedrock => Adapter::Bedrock(bedrock::BedrockAdapter::new(&config, health)?),
        };
        let embedder = match &adapter {
            Adapter::OpenAi(a) => Embedder::openai(&config, a.endpoint())?,
            Adapter::Mock(_) => Embedder::Mock(MockEmbedder::new(&config)),
            _ => Embedder::Unsupported(config.kind),
        };
        let redactor = Arc::new(crate::redact::Redactor::for_provider(&config));
        Ok(Arc::new(Self { config, adapter, embedder, in_flight: AtomicU64::new(0), redactor }))
    }

    /// Sends one attempt through the adapter of its wire format.
    ///
    /// The native adapters' futures are boxed: a future is as large as its
    /// largest variant, and the whole request's future (moved and boxed by
    /// the server) would otherwise carry their token refreshes and
    /// translations on every OpenAI-compatible call too.
    ///
    /// Every error leaves through the provider's redactor: a call's here,
    /// a stream's as the cascade reads it ([`Self::redact`], in the one
    /// layer every stream is read through, which also drops unreadable
    /// events: a layer of its own cost ~80 instructions an event). An
    /// upstream's text reaches clients and logs only past the redactor.
    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let reply = match &self.adapter {
            Adapter::OpenAi(a) => a.call(req).await,
            Adapter::Mock(m) => Box::pin(m.call(req)).await,
            Adapter::Anthropic(a) => Box::pin(a.call(req)).await,
            Adapter::GigaChat(g) => Box::pin(g.call(req)).await,
            Adapter::Yandex(y) => Box::pin(y.call(req)).await,
            Adapter::Azure(a) => Box::pin(a.call(req)).await,
            Adapter::Gemini(g) => Box::pin(g.call(req)).await,
            Adapter::Bedrock(b) => Box::pin(b.call(req)).await,
        };
        reply.map_err(|e| self.redact(e))
    }

    /// `e` with the provider's secrets replaced (see [`Self::call`]).
    pub fn redact(&self, e: AttemptError) -> AttemptError {
        self.redactor.attempt_error(e)
    }

    /// Embeds one attempt's input with `model_id` (boxed, as the native
    /// adapters are, to keep the caller's future small).
    pub async fn embed(&self, model_id: &str, req: &EmbeddingRequest) -> Result<Vectors, AttemptError> {
        Box::pin(self.embedder.embed(model_id, req)).await
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

    /// Attempts in flight (the `inflight` load source reads it).
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
