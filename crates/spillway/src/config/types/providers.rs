//! `providers:` as compiled: kinds, models, prices, continuation, mock behaviour.

use super::{BreakerConfig, LoadConfig};
use crate::secret::Secret;
use std::path::PathBuf;
use std::time::Duration;

/// A provider's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// Any OpenAI-compatible API.
    OpenAi,
    /// Anthropic Messages API.
    Anthropic,
    /// Sber GigaChat.
    GigaChat,
    /// Yandex Foundation Models (native).
    Yandex,
    /// In-process mock (SPEC §11).
    Mock,
    /// Azure OpenAI (deployments, `api-version`, `api-key`).
    Azure,
    /// Google Gemini's own API (`generateContent`).
    Gemini,
    /// AWS Bedrock's Converse API (SigV4).
    Bedrock,
}

impl ProviderKind {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::GigaChat => "gigachat",
            Self::Yandex => "yandex",
            Self::Mock => "mock",
            Self::Azure => "azure",
            Self::Gemini => "gemini",
            Self::Bedrock => "bedrock",
        }
    }
}

/// One provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Its name (the first part of model refs).
    pub name: String,
    /// Wire format.
    pub kind: ProviderKind,
    /// API base URL, without a trailing `/`.
    pub base_url: Option<String>,
    /// API key.
    pub api_key: Option<Secret>,
    /// Extra headers (values treated as secrets: they often carry keys).
    pub headers: Vec<(String, Secret)>,
    /// Bulkhead size.
    pub max_in_flight: Option<u64>,
    /// Listing format when discovery is on.
    pub discovery_format: Option<String>,
    /// GigaChat auth key.
    pub auth_key: Option<Secret>,
    /// GigaChat scope.
    pub scope: Option<String>,
    /// GigaChat OAuth URL.
    pub auth_url: Option<String>,
    /// Extra root certificates.
    pub ca_file: Option<PathBuf>,
    /// Yandex folder.
    pub folder_id: Option<String>,
    /// Yandex IAM token.
    pub iam_token: Option<Secret>,
    /// Anthropic API version header; Azure's `api-version`.
    pub api_version: Option<String>,
    /// Static models.
    pub models: Vec<StaticModel>,
    /// Default `max_tokens`.
    pub default_max_tokens: Option<u32>,
    /// Route around while lazy.
    pub skip_when_lazy: bool,
    /// Honours `response_format` natively.
    pub native_json: bool,
    /// `continuation:` as written (the default by kind and model is applied
    /// per target, see `cascade::continuation`).
    pub continuation: Option<ContinuationMode>,
    /// Clients may name models of this provider that neither the config nor
    /// the listing knows (`provider/anything`); their per-model state is
    /// capped (see `gateway::build`).
    pub allow_any_model: bool,
    /// Whole requests are read from this provider as streams
    /// (`cascade::whole`); false keeps the whole-body pass-through.
    pub whole_as_stream: bool,
    /// Load monitoring.
    pub load: Option<LoadConfig>,
    /// `price_per_1m`: the price of models nothing else prices.
    pub price: Option<Price>,
    /// `breaker`: this provider's breaker rules, `health.breaker` filled in.
    pub breaker: Option<BreakerConfig>,
    /// Mock providers: the model listing discovery reads instead of a
    /// `/models` endpoint (`None`: the mock lists nothing).
    pub listing: Option<Vec<ListedModel>>,
    /// Bedrock: the region and the credentials to sign with.
    pub aws: Option<AwsConfig>,
    /// `first_token`: this provider's first-token deadline, over
    /// `health.timeouts.first_token`.
    pub first_token: Option<std::time::Duration>,
}

/// Where and as whom a `kind: bedrock` provider signs its calls.
#[derive(Debug, Clone)]
pub struct AwsConfig {
    /// The AWS region (`us-east-1`): the endpoint's and the signature's.
    pub region: String,
    /// Configured keys; without them the environment's are read when the
    /// provider is built (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_SESSION_TOKEN`).
    pub access_key_id: Option<Secret>,
    pub secret_access_key: Option<Secret>,
    pub session_token: Option<Secret>,
}

/// One model of a mock provider's `listing:`, as a real listing gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedModel {
    /// Model id.
    pub id: String,
    /// Context window in tokens.
    pub context: Option<u64>,
    /// USD per 1M tokens, when the listing gives prices.
    pub price: Option<Price>,
    /// Marked free (OpenRouter's `:free`), whatever the prices say.
    pub free: bool,
}

/// A static model.
#[derive(Debug, Clone)]
pub struct StaticModel {
    /// Model id.
    pub id: String,
    /// Context window.
    pub context: Option<u64>,
    /// USD per 1M tokens.
    pub price: Option<Price>,
    /// Quality hint.
    pub quality: Option<f64>,
    /// Length of its embedding vectors, for embedding models.
    pub dimensions: Option<u32>,
    /// Mock behaviour (mock providers only).
    pub behavior: Option<MockBehavior>,
    /// Overrides the provider's `continuation`.
    pub continuation: Option<ContinuationMode>,
}

/// How a model continues a stream another model broke off (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContinuationMode {
    /// The partial answer as the final assistant message, which the API
    /// continues token by token.
    Prefill,
    /// The partial answer as the assistant's message and an instruction
    /// to continue exactly where it stops.
    Instruct,
    /// Never used to continue a stream.
    None,
}

impl ContinuationMode {
    /// The name used in the config file and in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prefill => "prefill",
            Self::Instruct => "instruct",
            Self::None => "none",
        }
    }
}

/// Price per 1M tokens, USD.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Prompt tokens.
    pub input: f64,
    /// Completion tokens.
    pub output: f64,
}

/// How a mock model's JSON answers are damaged: the share of answers
/// damaged each way (each answer draws one; the rest are plain).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MockJson {
    /// Wrapped in a markdown fence with a sentence before it.
    pub fenced: f64,
    /// Field names changed (camelCase / capitalised).
    pub renamed: f64,
    /// Prose with no JSON: beyond repair.
    pub broken: f64,
}

/// An outage window of a mock model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outage {
    /// Start after gateway start.
    pub start: Duration,
    /// Length.
    pub duration: Duration,
    /// Status (0 = hang).
    pub status: u16,
}

/// Behaviour of a mock model.
#[derive(Debug, Clone, Default)]
pub struct MockBehavior {
    /// Delay before answering.
    pub latency: Duration,
    /// Extra delay before the first streamed token.
    pub first_token: Duration,
    /// Streaming speed (0: unthrottled).
    pub tokens_per_s: f64,
    /// Share of injected failures.
    pub error_rate: f64,
    /// Their status.
    pub error_status: u16,
    /// Requests per minute before 429.
    pub rate_limit_per_min: Option<u32>,
    /// Requests per day (from start-up) before a 429 with Groq's headers.
    pub requests_per_day: Option<u32>,
    /// Tokens per day (from start-up) before a 429 with Groq's headers.
    pub tokens_per_day: Option<u64>,
    /// Requests worked on at once; more wait in a queue.
    pub concurrency: Option<u32>,
    /// Share of empty replies.
    pub empty_rate: f64,
    /// Share of streamed answers cut off halfway.
    pub cut_rate: f64,
    /// JSON damage.
    pub json: MockJson,
    /// Natural length of a text answer in tokens (default: one sentence).
    pub reply_tokens: Option<u32>,
    /// In-flight requests to the provider served at full speed.
    pub saturate_at: Option<u32>,
    /// Fixed reply text.
    pub reply: Option<String>,
    /// Never answer.
    pub hang: bool,
    /// Outage windows.
    pub outages: Vec<Outage>,
    /// Share of text answers in the wrong script.
    pub wrong_script_rate: f64,
    /// Share of near-empty text answers.
    pub near_empty_rate: f64,
    /// Share of looping text answers.
    pub repeat_rate: f64,
    /// `(start, length)` windows the three shares apply in (empty: always).
    pub bad_windows: Vec<(Duration, Duration)>,
}

impl MockBehavior {
    /// The bad-answer shares in force `elapsed` after start-up:
    /// wrong script, near-empty, looping.
    pub fn bad_shares(&self, elapsed: Duration) -> (f64, f64, f64) {
        let inside =
            self.bad_windows.is_empty() || self.bad_windows.iter().any(|(s, d)| elapsed >= *s && elapsed < *s + *d);
        if inside {
            (self.wrong_script_rate, self.near_empty_rate, self.repeat_rate)
        } else {
            (0.0, 0.0, 0.0)
        }
    }
}
