//! Configuration: read `spillway.yaml`, compile it, report every error.
//!
//! The file is parsed into the raw serde types of [`raw`], `${VAR}`s are
//! substituted ([`env`]), and [`compile::compile`] checks every rule and
//! produces the typed [`Config`] the gateway runs on — or all errors at
//! once, each with its YAML path. `spillway check`, start-up and hot reload
//! share this one path. Nothing here does I/O beyond reading the file.

pub mod compile;
pub mod env;
pub mod raw;
pub mod shape;
pub mod template;
pub mod units;

pub use crate::secret::Secret;
use indexmap::IndexMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The demo config, embedded so `spillway serve` works with no file at all.
pub const DEMO_YAML: &str = include_str!("../../../../examples/demo.yaml");

/// One config error: where (a YAML path such as
/// `cascades.extraction.filters.max_cost_per_1m`) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted YAML path; empty for the whole file.
    pub path: String,
    /// What is wrong, secret-free.
    pub message: String,
}

impl ConfigError {
    /// Builds an error at `path`.
    pub fn new(path: &str, message: impl Into<String>) -> Self {
        Self { path: path.to_string(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Every error found in one config file.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// The compiled configuration the gateway runs on.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from (relative paths such as templates resolve against its folder).
    pub source: Option<PathBuf>,
    /// `server:`
    pub server: ServerConfig,
    /// `state:`
    pub state: StateConfig,
    /// `providers:` in file order.
    pub providers: IndexMap<String, ProviderConfig>,
    /// `health:`
    pub health: HealthConfig,
    /// `discovery:`
    pub discovery: DiscoveryConfig,
    /// `cascades:` in file order; the first is `auto`.
    pub cascades: IndexMap<String, CascadeConfig>,
    /// `prompts:`
    pub prompts: Vec<PromptRule>,
    /// `escalation:`
    pub escalation: Vec<EscalationRule>,
    /// `alerts:`
    pub alerts: AlertsConfig,
    /// `handoff:`
    pub handoff: HandoffConfig,
}

/// `server:`
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Listen address.
    pub listen: SocketAddr,
    /// Accepted client keys (empty: no client auth).
    pub api_keys: Vec<Secret>,
    /// Admin token (none: admin API disabled).
    pub admin_token: Option<Secret>,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Requests in flight before 503.
    pub max_concurrent_requests: usize,
    /// Deadline for a client's request headers.
    pub header_read_timeout: Duration,
    /// Deadline for a client's request body (a slow body never holds a
    /// concurrency slot: it is read first).
    pub body_read_timeout: Duration,
    /// Grace period for in-flight requests at shutdown.
    pub shutdown_grace: Duration,
    /// Serving threads (`spillway serve`).
    pub workers: usize,
    /// Cross-origin requests (none: off).
    pub cors: Option<CorsConfig>,
}

/// `server.cors`, compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsConfig {
    /// Allowed origins, exactly as browsers send them; empty with `any`.
    pub allow_origins: Vec<String>,
    /// `"*"` was listed: any origin.
    pub any_origin: bool,
    /// `Access-Control-Allow-Headers`, lower case, comma-separated.
    pub allow_headers: String,
    /// `Access-Control-Max-Age`.
    pub max_age: Duration,
}

/// Where shared state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateBackend {
    /// In-process only.
    Memory,
    /// Shared through Redis.
    Redis,
}

/// `state:`
#[derive(Debug, Clone)]
pub struct StateConfig {
    /// Backend.
    pub backend: StateBackend,
    /// Redis URL (may hold a password).
    pub redis_url: Option<Secret>,
    /// Prefix of every Redis key.
    pub key_prefix: String,
    /// Embedded durable store directory.
    pub data_dir: PathBuf,
}

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
    /// Anthropic API version header.
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
}

/// Load source of a provider.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadSource {
    /// vLLM's Prometheus endpoint.
    VllmMetrics {
        /// Its URL.
        url: String,
    },
    /// NVIDIA GPUs through NVML.
    Nvml {
        /// Device indices.
        devices: Vec<u32>,
    },
    /// The gateway's own in-flight attempts.
    Inflight {
        /// Full load.
        capacity: f64,
    },
    /// Tokens per second measured by the gateway.
    TokenVelocity {
        /// Full load.
        capacity: f64,
    },
    /// Set through the admin API.
    Emulated,
}

/// A load profile.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadProfile {
    /// Name.
    pub name: String,
    /// Upper bound (none for the last).
    pub below: Option<f64>,
    /// Extra system prompt.
    pub system_prompt: Option<String>,
    /// `max_tokens` factor.
    pub max_tokens_factor: Option<f64>,
}

/// `providers.*.load`
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Source.
    pub source: LoadSource,
    /// Poll interval.
    pub interval: Duration,
    /// Profiles, lightest first.
    pub profiles: Vec<LoadProfile>,
    /// Anti-flap margin.
    pub hysteresis: f64,
}

/// `health:`
#[derive(Debug, Clone)]
pub struct HealthConfig {
    /// Default dead-mark length.
    pub dead_ttl: Duration,
    /// Breaker rules.
    pub breaker: BreakerConfig,
    /// Connect retries.
    pub retries: RetryConfig,
    /// Deadlines.
    pub timeouts: TimeoutConfig,
    /// Stream events that may be skipped.
    pub streams: StreamRules,
}

/// `health.streams`
#[derive(Debug, Clone, Copy)]
pub struct StreamRules {
    /// Unreadable events skipped per attempt before it is a broken body.
    pub max_skipped_events: u32,
}

/// `health.breaker`
#[derive(Debug, Clone, Copy)]
pub struct BreakerConfig {
    /// Rolling window.
    pub window: Duration,
    /// Failures in a row.
    pub consecutive_failures: u32,
    /// Failure share.
    pub failure_rate: f64,
    /// Minimum requests for the rate rule.
    pub min_requests: u32,
    /// The longest open period.
    pub open_for: Duration,
    /// The first open period; doubled by each failed probe up to `open_for`.
    pub open_min: Duration,
}

impl BreakerConfig {
    /// How long the breaker stays open after `reopens` failed probes in a
    /// row, for a model that has been failing for `failing_for` (since its
    /// last answer): `open_min` doubled that often, never past `open_for`,
    /// and never past half of `failing_for` (nor below `open_min`: an
    /// `open_for` below the default `open_min` means that fixed period).
    ///
    /// The half bound is what keeps a short outage short: an open period is
    /// a bet that the outage outlasts it, and (on the heavy-tailed view of
    /// outages) one that has lasted `T` so far is as likely as not to end
    /// within another `T`; waiting
    /// longer than `T / 2` overshoots the recovery of short outages by
    /// tens of seconds to save a probe or two on long ones (a 60 s outage
    /// is noticed within ~10 s of its end instead of ~30 s; a 38-minute one
    /// costs 26 probes instead of 22).
    pub fn open_period(&self, reopens: u32, failing_for: Duration) -> Duration {
        let doubled = self.open_min.saturating_mul(1 << reopens.min(20));
        doubled.min(self.open_for).min((failing_for / 2).max(self.open_min))
    }
}

/// `health.retries`
#[derive(Debug, Clone, Copy)]
pub struct RetryConfig {
    /// Retries.
    pub max: u32,
    /// Base backoff.
    pub backoff: Duration,
    /// Jitter share.
    pub jitter: f64,
    /// Longest `Retry-After` of a 429 that is waited out (zero: never).
    pub wait_retry_after_up_to: Duration,
    /// 5xx statuses retried once on the same model (bit `s - 500`).
    pub on_status: u128,
}

impl RetryConfig {
    /// `status` is listed in `on_status`.
    pub fn retries_status(&self, status: u16) -> bool {
        status.checked_sub(500).is_some_and(|bit| bit < 100 && self.on_status & (1u128 << bit) != 0)
    }
}

/// `health.timeouts`
#[derive(Debug, Clone, Copy)]
pub struct TimeoutConfig {
    /// Connect.
    pub connect: Duration,
    /// First token / response headers.
    pub first_token: Duration,
    /// Mid-stream silence.
    pub idle: Duration,
    /// Whole request.
    pub total: Duration,
}

/// `discovery:`
#[derive(Debug, Clone, Copy)]
pub struct DiscoveryConfig {
    /// Refresh period.
    pub interval: Duration,
    /// Cache lifetime.
    pub cache_ttl: Duration,
}

/// A model ref, `provider/model-id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelRef {
    /// Provider name.
    pub provider: String,
    /// Model id (may contain `/`).
    pub model: String,
}

impl ModelRef {
    /// Splits at the first `/`.
    pub fn parse(text: &str) -> Option<Self> {
        let (provider, model) = text.split_once('/')?;
        if provider.is_empty() || model.is_empty() {
            return None;
        }
        Some(Self { provider: provider.to_string(), model: model.to_string() })
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// Discovery strategy of a cascade: how its non-preferred models are
/// ordered (after free before paid). Serialized as written in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Measured median time-to-first-token, then provider order.
    SpeedFirst,
    /// `quality` hint, else parameter count from the id, larger first, then
    /// context.
    QualityFirst,
    /// Input plus output price, cheaper first, then larger context.
    CheapestFirst,
}

impl Strategy {
    /// As written in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SpeedFirst => "speed_first",
            Self::QualityFirst => "quality_first",
            Self::CheapestFirst => "cheapest_first",
        }
    }
}

/// `cascades.*.filters`
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Smallest context.
    pub min_context: Option<u64>,
    /// Highest price per 1M.
    pub max_cost_per_1m: Option<f64>,
    /// Only free models.
    pub free_only: bool,
    /// Id substrings to leave out.
    pub exclude_patterns: Vec<String>,
}

/// The discovery settings of a cascade.
#[derive(Debug, Clone)]
pub struct DiscoverySpec {
    /// Ranking.
    pub strategy: Strategy,
    /// Source providers, primary first.
    pub providers: Vec<String>,
    /// Preferred refs.
    pub preferred: Vec<ModelRef>,
    /// Filters.
    pub filters: Filters,
    /// Diversity floor.
    pub min_other_providers: u32,
    /// Models kept.
    pub size: u32,
}

/// Where a cascade's models come from.
#[derive(Debug, Clone)]
pub enum CascadeSource {
    /// A fixed chain.
    Fixed(Vec<ModelRef>),
    /// Built by discovery.
    Discovered(DiscoverySpec),
}

/// What a cascade serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CascadeKind {
    /// Chat completions, and the Responses and Messages APIs translated to them.
    #[default]
    Chat,
    /// `/v1/embeddings`.
    Embedding,
}

impl CascadeKind {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Embedding => "embedding",
        }
    }
}

/// One cascade.
#[derive(Debug, Clone)]
pub struct CascadeConfig {
    /// Name.
    pub name: String,
    /// What it serves.
    pub kind: CascadeKind,
    /// Its models.
    pub source: CascadeSource,
    /// Tried after the cascade.
    pub last_resort: Option<ModelRef>,
    /// Queue for a person when everything failed.
    pub handoff: bool,
    /// Hedge delay.
    pub hedge_after: Option<Duration>,
    /// Daily budget, USD.
    pub daily_budget_usd: Option<f64>,
    /// Continue streams that break after their first byte.
    pub continue_streams: bool,
    /// `breakers`: breaker rules per model ref of this cascade, the
    /// provider's and `health.breaker` filled in.
    pub breakers: Vec<(ModelRef, BreakerConfig)>,
}

impl CascadeConfig {
    /// The breaker rules for `model` in this cascade, when they differ
    /// from `health.breaker`: the cascade entry's, else the provider's.
    pub fn breaker_for(&self, model: &ModelRef, providers: &IndexMap<String, ProviderConfig>) -> Option<BreakerConfig> {
        self.breakers
            .iter()
            .find(|(r, _)| r == model)
            .map(|(_, b)| *b)
            .or_else(|| providers.get(&model.provider).and_then(|p| p.breaker))
    }
}

/// A prompt variant rule.
#[derive(Debug, Clone)]
pub struct PromptRule {
    /// Glob over model refs.
    pub pattern: String,
    /// Version label.
    pub version: Option<u32>,
    /// System prefix.
    pub system_prefix: Option<String>,
    /// Template path, resolved against the config's folder.
    pub template: Option<PathBuf>,
    /// The template's text, read and syntax-checked at compile time.
    pub template_source: Option<String>,
    /// Its name in the prompt environment (set when prompts are built).
    pub template_name: Option<String>,
    /// How the template's output becomes the messages.
    pub output: TemplateOutput,
}

/// What a prompt template renders (`prompts[].output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TemplateOutput {
    /// Text: the one user message sent, whatever it looks like. Client text
    /// in it stays text, even text that looks like a JSON message list.
    #[default]
    Text,
    /// A JSON array of messages. Every `{{ value }}` is written JSON-escaped
    /// (MiniJinja's JSON auto-escaping), so client text can fill a string
    /// but never add a message; the list is then checked like a client's.
    Messages,
}

/// An escalation rule.
#[derive(Debug, Clone)]
pub struct EscalationRule {
    /// From cascade.
    pub from: String,
    /// To cascade.
    pub to: String,
}

/// `alerts:`
#[derive(Debug, Clone, Default)]
pub struct AlertsConfig {
    /// Telegram: bot token, chat id, API base.
    pub telegram: Option<(Secret, String, String)>,
    /// Webhook URL.
    pub webhook: Option<Secret>,
    /// Fallback-share rule: share and duration.
    pub fallback_share: Option<(f64, Duration)>,
    /// Dedup window.
    pub repeat_after: Duration,
    /// Language of the message text.
    pub language: AlertLanguage,
}

/// `alerts.language`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AlertLanguage {
    /// English (default).
    #[default]
    En,
    /// Russian.
    Ru,
}

/// `handoff:`
#[derive(Debug, Clone)]
pub struct HandoffConfig {
    /// Reply text.
    pub reply: String,
    /// Webhook URL.
    pub webhook: Option<Secret>,
    /// Retention.
    pub retention: Duration,
}

/// Reads and compiles a config file.
pub fn load_file(path: &Path) -> Result<Config, ConfigErrors> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigErrors(vec![ConfigError::new("", format!("cannot read {}: {e}", path.display()))]))?;
    let lookup = |name: &str| std::env::var(name).ok();
    load_str(&text, Some(path), &lookup)
}

/// Compiles config text; `source` anchors relative paths.
pub fn load_str(text: &str, source: Option<&Path>, lookup: env::Lookup<'_>) -> Result<Config, ConfigErrors> {
    let raw = shape::parse(text, lookup)?;
    compile::compile(raw, source)
}

/// The JSON Schema of the config file (draft 2020-12), for editors; kept in
/// `docs/spillway.schema.json` (a test fails when that copy is stale).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(raw::RawConfig);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
