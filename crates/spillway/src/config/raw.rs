//! The config file as written: raw serde types, one struct per section.
//!
//! These mirror SPEC §4 field for field. They only describe *shape*
//! (unknown keys are rejected, types are checked by serde); every semantic
//! rule — durations, sizes, model refs, cascade shape — lives in
//! [`super::compile`], which turns a [`RawConfig`] into a
//! [`super::Config`] or a list of every error with its YAML path. The same
//! types generate `docs/spillway.schema.json` for editors.
//!
//! Durations are strings such as `250ms`, `2s`, `10m`, `12h`, `30d`; byte
//! sizes are strings such as `4MiB` or plain integers.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

pub use super::raw_keys::*;
pub use super::raw_responses::*;
pub use super::raw_size::RawSize;
pub use super::raw_telemetry::*;

/// A whole `spillway.yaml`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Spillway configuration")]
pub struct RawConfig {
    /// The HTTP listener and client-facing limits.
    pub server: Option<RawServer>,
    /// Where dead marks, breaker state and statistics live.
    pub state: Option<RawState>,
    /// Upstream API accounts by name; the name is the first part of a model ref.
    #[serde(default)]
    pub providers: IndexMap<String, RawProvider>,
    /// Dead marks, circuit breakers, retries and deadlines.
    pub health: Option<RawHealth>,
    /// How often providers' model listings are re-read.
    pub discovery: Option<RawDiscovery>,
    /// Named cascades; clients select one with the request's `model`. The first is `auto`.
    #[serde(default)]
    pub cascades: IndexMap<String, RawCascade>,
    /// Per-model prompt variants, first match wins.
    #[serde(default)]
    pub prompts: Vec<RawPrompt>,
    /// Rules that switch a request to another cascade.
    #[serde(default)]
    pub escalation: Vec<RawEscalation>,
    /// Where operator alerts go.
    pub alerts: Option<RawAlerts>,
    /// The human-operator queue, the last tier.
    pub handoff: Option<RawHandoff>,
    /// What the gateway keeps of the Responses API (stored responses).
    pub responses: Option<RawResponses>,
    /// Virtual client keys, each with its own limits, budget and cascades.
    #[serde(default)]
    pub keys: Vec<RawKey>,
    /// How a shared free quota is shared between callers (keys and end users).
    pub fairness: Option<RawFairness>,
    /// The request log and OpenTelemetry traces.
    pub telemetry: Option<RawTelemetry>,
    /// Canaries: a known prompt sent to models every `interval`, its answer
    /// checked; results feed quality health (off unless listed).
    #[serde(default)]
    pub canaries: Vec<RawCanary>,
}

/// One entry of `canaries:`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCanary {
    /// A name for logs and `spillway canary` (default: `canary-N`).
    pub name: Option<String>,
    /// Send it to every model of this cascade (give this or `model`).
    pub cascade: Option<String>,
    /// Send it to this model ref only.
    pub model: Option<String>,
    /// The user message sent.
    pub prompt: String,
    /// What the answer must satisfy.
    #[serde(default)]
    pub check: RawCanaryCheck,
    /// How often it runs (default `5m`).
    pub interval: Option<String>,
}

/// `canaries[*].check`: every check given must pass.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCanaryCheck {
    /// The answer is JSON valid against this JSON Schema.
    pub json_schema: Option<serde_json::Value>,
    /// The answer matches this regular expression.
    pub regex: Option<String>,
    /// Texts the answer must contain.
    pub contains: Option<Vec<String>>,
    /// Texts the answer must not contain.
    pub not_contains: Option<Vec<String>>,
    /// The script most of the answer's letters are in: `latin`, `cyrillic` or `cjk`.
    pub script: Option<String>,
    /// The answer arrives within this long.
    pub max_latency: Option<String>,
}

/// `server:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    /// Address to listen on, `host:port` (default `127.0.0.1:8080`); the
    /// host an IP address or a name (`localhost:4000`, resolved once).
    pub listen: Option<String>,
    /// Client keys; when set, clients must send `Authorization: Bearer <key>`.
    pub api_keys: Option<Vec<String>>,
    /// Token for `/admin` and `/ui`; when unset those are disabled (404).
    pub admin_token: Option<String>,
    /// Largest accepted request body (default `4MiB`); larger gets 413.
    pub max_body_bytes: Option<RawSize>,
    /// Requests served at once (default 10000); above it clients get 503 with `Retry-After`.
    pub max_concurrent_requests: Option<u64>,
    /// How long a client may take to send its request headers (default `10s`).
    pub header_read_timeout: Option<String>,
    /// How long a client may take to send its request body (default `10s`);
    /// slower gets 408. The body is read before a concurrency slot is taken.
    pub body_read_timeout: Option<String>,
    /// How long a client may accept no bytes of an answer being written
    /// (default `30s`); then its connection is closed and a stream it was
    /// reading ends, releasing its concurrency slot and upstream call.
    /// `health.timeouts.total` ends a stream whose client reads too
    /// slowly even when some bytes keep getting through.
    pub client_write_timeout: Option<String>,
    /// How long in-flight requests may run after SIGTERM/SIGINT (default `30s`).
    pub shutdown_grace: Option<String>,
    /// Threads serving requests, each with its own event loop and upstream
    /// connections (default: one per CPU).
    pub workers: Option<u64>,
    /// Cross-origin requests from browsers (off when absent): which
    /// origins may call the API, and the preflight's answers.
    pub cors: Option<RawCors>,
    /// How often the config file is checked, and reloaded when its content
    /// changed (a Kubernetes ConfigMap update swaps the file); default `5s`,
    /// `0s` turns it off (SIGHUP and `POST /admin/config/reload` still work).
    pub watch_config: Option<String>,
    /// After SIGTERM, how long `/readyz` answers 503 while new connections
    /// are still accepted, so a load balancer stops sending before the
    /// listener closes (default `0s`; a few seconds behind a Kubernetes Service).
    pub drain_delay: Option<String>,
    /// Serve a non-loopback `listen` address without `api_keys` (default
    /// false: such a config is refused, since anyone who reaches the
    /// gateway could spend the providers' keys).
    pub allow_unauthenticated: Option<bool>,
    /// Make an admin token at each start, print it and keep it in
    /// `state.data_dir/admin-token` for `spillway status` (default false;
    /// loopback `listen` only; not with `admin_token`). The demo uses it.
    pub generate_admin_token: Option<bool>,
}

/// `server.cors:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCors {
    /// Origins allowed to call the API (`https://app.example.com`), or `"*"` for any.
    pub allow_origins: Vec<String>,
    /// Request headers a browser may send (default: what the official
    /// browser SDKs send — `authorization`, `content-type`, `accept`,
    /// `user-agent`, `x-api-key`, `x-request-id`, `x-spillway-escalate`,
    /// `openai-organization`, `openai-project`, `openai-beta`,
    /// `anthropic-version`, `anthropic-beta`,
    /// `anthropic-dangerous-direct-browser-access`, `api-key`,
    /// `x-goog-api-key` and every `x-stainless-*`); a `prefix-*` entry
    /// allows every header that starts with `prefix-`; `"*"` for any.
    pub allow_headers: Option<Vec<String>>,
    /// How long a browser may cache a preflight's answer (default `10m`).
    pub max_age: Option<String>,
}

/// `state:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawState {
    /// `memory` (one instance) or `redis` (several instances share everything).
    pub backend: Option<String>,
    /// `redis://` or `rediss://` URL, with user and password if needed; a Sentinel set
    /// (`redis+sentinel://host:26379,host2:26379/mymaster`) or a Cluster
    /// (`redis+cluster://host:7000,host2:7001`); `valkey` works for `redis` throughout.
    pub redis_url: Option<String>,
    /// Prefix of every Redis key (default `spillway:`).
    pub key_prefix: Option<String>,
    /// Directory of the embedded durable store (default `./spillway-data`).
    pub data_dir: Option<String>,
}

/// One entry under `providers:`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProvider {
    /// Wire format: `openai`, `anthropic`, `gigachat`, `yandex`, `azure`, `gemini`, `bedrock` or `mock`.
    pub kind: String,
    /// API base URL (for `openai` required; the others have defaults).
    pub base_url: Option<String>,
    /// API key (use `${VAR}`); sent as the provider's auth header.
    pub api_key: Option<String>,
    /// Extra headers sent with every request to this provider.
    pub headers: Option<IndexMap<String, String>>,
    /// Attempts this provider may hold at once (default: no limit); more are skipped as `saturated`.
    pub max_in_flight: Option<u64>,
    /// Whether and how to read the provider's model listing.
    pub discovery: Option<RawProviderDiscovery>,
    /// GigaChat: the authorization key for the OAuth endpoint.
    pub auth_key: Option<String>,
    /// GigaChat: OAuth scope (`GIGACHAT_API_PERS`, `GIGACHAT_API_B2B`, `GIGACHAT_API_CORP`).
    pub scope: Option<String>,
    /// GigaChat: OAuth endpoint (default Sber's).
    pub auth_url: Option<String>,
    /// PEM file with extra root certificates to trust (e.g. the Russian root CA).
    pub ca_file: Option<String>,
    /// Yandex: the cloud folder id.
    pub folder_id: Option<String>,
    /// Yandex: an IAM token instead of an API key.
    pub iam_token: Option<String>,
    /// Anthropic: the `anthropic-version` header (default `2023-06-01`).
    /// Azure (required): the `api-version`, dated (`2024-10-21`) for
    /// per-deployment URLs, or `v1` for the v1 API.
    pub api_version: Option<String>,
    /// Static models: a fixed list, or hints merged into discovered models.
    pub models: Option<Vec<RawStaticModel>>,
    /// `max_tokens` sent when the client sets none (Anthropic needs one; load profiles scale it).
    pub default_max_tokens: Option<u32>,
    /// Route around this provider while it is in its last load profile.
    pub skip_when_lazy: Option<bool>,
    /// Whether the provider honours `response_format` natively (default true for `openai`, `anthropic`,
    /// `azure`, `gemini` and `bedrock`).
    pub native_json: Option<bool>,
    /// Load-aware degradation (SPEC §9).
    pub load: Option<RawLoad>,
    /// How this provider's models continue a stream another model broke
    /// off: `prefill` (the API continues a final assistant message),
    /// `instruct` (the partial answer plus an instruction to go on) or
    /// `none` (never used to continue); default by kind and model.
    pub continuation: Option<String>,
    /// Let clients name any model of this provider as `provider/model`
    /// (default false: only models the config names or the listing has).
    pub allow_any_model: Option<bool>,
    /// Read a request without `stream: true` from this provider as a
    /// stream and assemble it, so `timeouts.first_token` bounds only the
    /// first token (default true for `openai`, `anthropic`, `gigachat`,
    /// `azure`, `gemini` and `bedrock`;
    /// false sends it whole: cheaper for the gateway, but the whole answer
    /// must then arrive within `first_token`).
    pub whole_as_stream: Option<bool>,
    /// Price of every model of this provider whose listing and static
    /// `models:` hint give none, USD per 1M tokens (Groq's free plan:
    /// `{ input: 0, output: 0 }`). A static hint wins over it, a listed
    /// price over both.
    pub price_per_1m: Option<RawPrice>,
    /// `health.breaker` for this provider's models; unset fields keep
    /// `health.breaker`'s.
    pub breaker: Option<RawBreaker>,
    /// Gemini only: the key's project is on Google's free tier (default
    /// true), so its models cost nothing and `free_only` cascades take
    /// them; false (billing enabled) leaves them unpriced until
    /// `price_per_1m` or a model's price says.
    pub free_tier: Option<bool>,
    /// Bedrock (required): the AWS region, such as `us-east-1`.
    pub region: Option<String>,
    /// Bedrock: the access key id to sign with (default: the environment's
    /// `AWS_ACCESS_KEY_ID`); use `${VAR}`.
    pub aws_access_key_id: Option<String>,
    /// Bedrock: its secret (default: `AWS_SECRET_ACCESS_KEY`); use `${VAR}`.
    pub aws_secret_access_key: Option<String>,
    /// Bedrock: the session token of temporary credentials (default:
    /// `AWS_SESSION_TOKEN`).
    pub aws_session_token: Option<String>,
    /// The first-token deadline of this provider's models, over
    /// `health.timeouts.first_token` (a provider that hangs rather than
    /// fails — a half-open probe waits this long — or one that is always
    /// slow to start).
    pub first_token: Option<String>,
    /// Mock providers only: the model listing discovery reads, as a real
    /// provider's `/models` would list them (ids, context, prices, free
    /// flags); turns discovery on for the mock. A listed model the mock
    /// has no `models:` entry for answers with the default behaviour.
    pub listing: Option<Vec<RawListedModel>>,
}

/// One model of a mock provider's `listing:`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawListedModel {
    /// Model id as the listing spells it.
    pub id: String,
    /// Context window in tokens (unknown when left out).
    pub context: Option<u64>,
    /// Listed price in USD per 1M tokens (unknown when left out).
    pub price_per_1m: Option<RawPrice>,
    /// Marked free by the listing (as OpenRouter's `:free` models are).
    pub free: Option<bool>,
}

/// `providers.*.discovery`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProviderDiscovery {
    /// Read the listing (default true when this block is present).
    pub enabled: Option<bool>,
    /// Listing format: `openai`, `groq`, `openrouter`, `anthropic`, `gigachat`, `ollama`, `vllm`, `azure`, `gemini`.
    pub format: Option<String>,
}

/// A static model of a provider.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStaticModel {
    /// Model id as the provider names it (may contain `/`).
    pub id: String,
    /// Context window in tokens.
    pub context: Option<u64>,
    /// Price in USD per 1M tokens.
    pub price_per_1m: Option<RawPrice>,
    /// Quality hint for `quality_first` (larger is better).
    pub quality: Option<f64>,
    /// Embedding models: the length of the vectors it returns. An embedding
    /// cascade falls back only across models of one dimension; mock models
    /// need it to serve `/v1/embeddings`.
    pub dimensions: Option<u32>,
    /// Mock providers only: how this model behaves.
    pub behavior: Option<RawMockBehavior>,
    /// How this model continues a stream another model broke off:
    /// `prefill`, `instruct` or `none` (default: the provider's).
    pub continuation: Option<String>,
}

/// `price_per_1m: { input, output }`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPrice {
    /// USD per 1M prompt tokens.
    pub input: f64,
    /// USD per 1M completion tokens.
    pub output: f64,
}

/// How a `kind: mock` model behaves (SPEC §11).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMockBehavior {
    /// Delay before the whole answer (non-stream) or before the response starts.
    pub latency: Option<String>,
    /// Delay before the first token of a stream.
    pub first_token: Option<String>,
    /// Streaming speed; 0 or unset sends tokens as fast as possible.
    pub tokens_per_s: Option<f64>,
    /// Share of requests (0..1) that fail with `error_status`.
    pub error_rate: Option<f64>,
    /// Status of the injected failures (default 503).
    pub error_status: Option<u16>,
    /// Requests per minute before answering 429 with `Retry-After`.
    pub rate_limit_per_min: Option<u32>,
    /// Requests per day (days of 24 h counted from start-up) before
    /// answering 429 as Groq does when its daily cap is reached:
    /// `x-ratelimit-remaining-requests: 0` and `x-ratelimit-reset-requests`
    /// giving the rest of the day (`5h12m0s`), read as any 429's headers are.
    pub requests_per_day: Option<u32>,
    /// Tokens (prompt and completion) per day before answering 429 with
    /// `x-ratelimit-remaining-tokens: 0` and `x-ratelimit-reset-tokens`.
    pub tokens_per_day: Option<u64>,
    /// Requests the model works on at once, as a vLLM server's
    /// `max_num_seqs`: more wait in a queue, first come first served, for a
    /// free place (their first token comes later; none is refused). Default:
    /// no queue.
    pub concurrency: Option<u32>,
    /// Share of requests (0..1) answered with an empty reply.
    pub empty_rate: Option<f64>,
    /// Share of streamed answers (0..1) cut off halfway (the connection
    /// breaks after half the answer's tokens).
    pub cut_rate: Option<f64>,
    /// JSON answers: `plain`, `fenced` (wrapped in a markdown fence), `renamed` (field names changed), `broken` (no JSON at all), or the share of answers damaged each way: `{ fenced: 0.3, renamed: 0.2, broken: 0.06 }` (the rest plain).
    pub json: Option<RawMockJson>,
    /// Natural length of a text answer, in tokens (words); default: one sentence naming the model. The request's `max_tokens` cuts it (finish reason `length`); a load profile's `system_prompt` in the request shortens it by the profile's `max_tokens_factor`.
    pub reply_tokens: Option<u32>,
    /// Requests in flight to this provider (all its models) served at full speed; with more, the first token and every token take `in_flight / saturate_at` times as long, as a saturated GPU server does (default: never saturates).
    pub saturate_at: Option<u32>,
    /// Fixed reply text (default: a short sentence naming the model).
    pub reply: Option<String>,
    /// Never answer (the connection hangs until a deadline gives up).
    pub hang: Option<bool>,
    /// Windows, counted from start-up, in which every request fails.
    pub outages: Option<Vec<RawOutage>>,
    /// Share of text answers (0..1) in the wrong script: English to a
    /// prompt in Cyrillic, Russian to any other (a drifting model).
    pub wrong_script_rate: Option<f64>,
    /// Share of text answers (0..1) that are near-empty (`.`).
    pub near_empty_rate: Option<f64>,
    /// Share of text answers (0..1) that loop (one sentence over and over).
    pub repeat_rate: Option<f64>,
    /// Windows, counted from start-up, outside which the three shares
    /// above do not apply (default: always apply).
    pub bad_windows: Option<Vec<RawWindow>>,
}

/// A window of time counted from start-up.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWindow {
    /// Start, as a duration after the gateway started.
    pub start: String,
    /// Length of the window.
    pub duration: String,
}

/// `behavior.json`: one kind of damage for every JSON answer, or shares.
#[derive(Debug, Clone, JsonSchema)]
#[serde(untagged)]
pub enum RawMockJson {
    /// `plain`, `fenced`, `renamed` or `broken`: every JSON answer so.
    Mode(String),
    /// The share of JSON answers damaged each way.
    Shares(RawMockJsonShares),
}

/// Shares (0..1, adding up to at most 1) of a mock's JSON answers damaged
/// each way; each answer draws one.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMockJsonShares {
    /// Wrapped in a markdown fence with prose around it (normalization repairs it).
    pub fenced: Option<f64>,
    /// Field names in another case (normalization renames them back).
    pub renamed: Option<f64>,
    /// Prose with no JSON in it: beyond repair, the next model answers.
    pub broken: Option<f64>,
}

// By hand rather than `#[serde(untagged)]`: an untagged enum buffers its
// input and reports "did not match any variant", losing the field path and
// `deny_unknown_fields`' message for a misspelt share.
impl<'de> Deserialize<'de> for RawMockJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawMockJson;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "`plain`, `fenced`, `renamed`, `broken`, or a map of shares such as { fenced: 0.3, broken: 0.05 }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawMockJson, E> {
                Ok(RawMockJson::Mode(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawMockJson, A::Error> {
                RawMockJsonShares::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(RawMockJson::Shares)
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// An outage window of a mock model.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOutage {
    /// Start, as a duration after the gateway started.
    pub start: String,
    /// Length of the window.
    pub duration: String,
    /// Status returned during the window (default 502); `0` hangs instead.
    pub status: Option<u16>,
}

/// `providers.*.load`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLoad {
    /// `vllm_metrics`, `nvml`, `inflight`, `token_velocity` or `emulated`.
    pub source: String,
    /// vllm_metrics: the Prometheus endpoint.
    pub url: Option<String>,
    /// nvml: GPU indices (the load is their maximum).
    pub devices: Option<Vec<u32>>,
    /// inflight / token_velocity: the value that means full load.
    pub capacity: Option<f64>,
    /// Poll interval (default `1s`).
    pub interval: Option<String>,
    /// Profiles from lightest to heaviest; the last has no `below`.
    pub profiles: Vec<RawProfile>,
    /// Margin that keeps the profile from flapping (default 0.03).
    pub hysteresis: Option<f64>,
}

/// A load profile.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProfile {
    /// Profile name (`normal`, `tired`, `lazy`, …).
    pub name: String,
    /// Applies while the load is below this (0..1); the last profile has none.
    pub below: Option<f64>,
    /// Added as a system message while this profile applies.
    pub system_prompt: Option<String>,
    /// `max_tokens` becomes `ceil(factor × (client max_tokens or default_max_tokens))`.
    pub max_tokens_factor: Option<f64>,
}

/// `health:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHealth {
    /// How long a dead mark lasts when the upstream gives no reset time (default `1h`).
    pub dead_ttl: Option<String>,
    /// Circuit breaker per model ref.
    pub breaker: Option<RawBreaker>,
    /// Retries of connect errors and resets; of 429s that name a short
    /// `Retry-After` and of listed 5xx statuses only when configured.
    pub retries: Option<RawRetries>,
    /// Deadlines.
    pub timeouts: Option<RawTimeouts>,
    /// What a stream may get wrong before it counts as broken.
    pub streams: Option<RawStreams>,
}

/// `health.streams`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStreams {
    /// Stream events per attempt that cannot be read (not JSON, broken
    /// format) which are skipped and counted in
    /// `spillway_stream_events_skipped_total`; one more fails the attempt as
    /// a broken body (default 3; 0 fails at the first).
    pub max_skipped_events: Option<u32>,
}

/// `health.breaker`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBreaker {
    /// Rolling window of the failure-rate rule (default `60s`).
    pub window: Option<String>,
    /// Failures in a row that open the breaker (default 5).
    pub consecutive_failures: Option<u32>,
    /// Failure share over the window that opens it (default 0.30).
    pub failure_rate: Option<f64>,
    /// Requests in the window before the rate rule applies (default 10).
    pub min_requests: Option<u32>,
    /// The longest it stays open before one probe (default `120s`).
    pub open_for: Option<String>,
    /// How long the first open lasts (default `10s`); each failed probe
    /// doubles it, up to `open_for` and up to half as long as the model has
    /// been failing; an answered probe resets it.
    pub open_min: Option<String>,
}

/// `health.retries`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRetries {
    /// Retries per attempt (default 1).
    pub max: Option<u32>,
    /// Base backoff between retries (default `50ms`).
    pub backoff: Option<String>,
    /// Random extra backoff as a share of `backoff` (default 0.5; 0 in tests).
    pub jitter: Option<f64>,
    /// A 429 whose `Retry-After` is at most this long is waited out and the
    /// same model retried once, instead of failing over at once with a dead
    /// mark (default `0`: never wait).
    pub wait_retry_after_up_to: Option<String>,
    /// 5xx statuses on which the same model is retried once, after
    /// `backoff`, before failing over (default none: fail over at once).
    pub on_status: Option<Vec<u16>>,
}

/// `health.timeouts`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTimeouts {
    /// TCP/TLS connect (default `2s`).
    pub connect: Option<String>,
    /// Until the first token (default `15s`), streamed or not: a whole answer
    /// is read from the upstream as a stream where its kind can stream.
    pub first_token: Option<String>,
    /// Until the first token of the last model a request can still use —
    /// none after it is alive, fits the request or has its breaker closed —
    /// where failing over has nowhere to go and a slow answer beats an
    /// error (default: `total`; set it to `first_token` to give up there
    /// too).
    pub last_model_first_token: Option<String>,
    /// Longest silence in the middle of a stream (default `30s`).
    pub idle: Option<String>,
    /// Whole request, every attempt included (default `120s`).
    pub total: Option<String>,
}

/// `discovery:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDiscovery {
    /// Refresh period (default `12h`).
    pub interval: Option<String>,
    /// How long built cascades stay cached (default `24h`).
    pub cache_ttl: Option<String>,
}

/// One entry under `cascades:`: a fixed chain (`models`) or discovery settings.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCascade {
    /// `chat` (default: serves chat completions, Responses and Messages) or
    /// `embedding` (serves `/v1/embeddings`; needs `models`).
    pub kind: Option<String>,
    /// A fixed chain of model refs (excludes the discovery settings).
    pub models: Option<Vec<String>>,
    /// `speed_first`, `quality_first` or `cheapest_first`.
    pub strategy: Option<String>,
    /// Providers discovered models may come from; the first is the primary.
    pub providers: Option<Vec<String>>,
    /// Model refs placed first, in this order, when they exist and pass the filters.
    pub preferred: Option<Vec<String>>,
    /// Which discovered models qualify.
    pub filters: Option<RawFilters>,
    /// At least this many models not from the primary provider.
    pub min_other_providers: Option<u32>,
    /// Models kept (default 10).
    pub size: Option<u32>,
    /// Where `preferred` models go: `price_class` (default: preferred free
    /// models first, then the other free ones, then preferred paid ones,
    /// then the other paid ones) or `strict` (every preferred model first,
    /// paid or free).
    pub preferred_order: Option<String>,
    /// Tried after the cascade.
    pub last_resort: Option<String>,
    /// Queue the request for a person when everything failed.
    pub handoff: Option<bool>,
    /// No first token by then: also start the next model.
    pub hedge_after: Option<String>,
    /// Spending cap.
    pub budget: Option<RawBudget>,
    /// A stream that breaks after its first byte is finished by the next
    /// model (default true).
    pub continue_streams: Option<bool>,
    /// `health.breaker` overrides per model of this cascade, by model ref
    /// (`local/t-lite: { failure_rate: 0.8 }`); unset fields keep the
    /// provider's or `health.breaker`'s. Wins over `providers.*.breaker`.
    pub breakers: Option<IndexMap<String, RawBreaker>>,
    /// Quality health: answers that come back 200 but bad (empty, in the
    /// wrong script, looping, invalid JSON) demote their model behind the
    /// healthy ones. Off unless set; `quality: {}` takes the defaults.
    pub quality: Option<RawQuality>,
}

/// `cascades.*.quality`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawQuality {
    /// Recent answers kept per model (default 50).
    pub window: Option<u32>,
    /// Answers in the window before the rule applies (default 10).
    pub min_answers: Option<u32>,
    /// Share of bad answers in the window over which the model is demoted
    /// (default 0.3).
    pub max_bad_share: Option<f64>,
    /// Signals that make an answer bad (default: json_invalid,
    /// tool_args_invalid, empty, wrong_script, repetition, continued,
    /// feedback, canary; json_repaired and refusal are counted but off).
    pub signals: Option<Vec<String>>,
    /// Content with fewer visible characters is near-empty, when the
    /// prompt is at least four times as long (default 1: only empty).
    pub min_chars: Option<u32>,
    /// How long the first demotion lasts (default `1m`); each failed probe
    /// round doubles it, up to `demote_max`.
    pub demote_for: Option<String>,
    /// The longest demotion (default `30m`).
    pub demote_max: Option<String>,
    /// After the demotion period, one request in this many tries the
    /// demoted model at its own place as a probe (default 10).
    pub probe_every: Option<u32>,
    /// Probe answers judged before the model is restored or demoted again
    /// (default 3).
    pub probe_answers: Option<u32>,
}

/// `cascades.*.filters`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFilters {
    /// Smallest context window (tokens); unknown context fails it.
    pub min_context: Option<u64>,
    /// Highest price, USD per 1M tokens, input and output both; unknown price fails it.
    pub max_cost_per_1m: Option<f64>,
    /// Only free models.
    pub free_only: Option<bool>,
    /// Case-insensitive substrings of model ids to leave out.
    pub exclude_patterns: Option<Vec<String>>,
}

/// `cascades.*.budget`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBudget {
    /// USD per UTC day; past it, paid models are skipped.
    pub daily_usd: f64,
}

/// One entry under `prompts:`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPrompt {
    /// Glob over model refs (`yandex/*`).
    #[serde(rename = "match")]
    pub match_: String,
    /// Version label recorded in metrics.
    pub version: Option<u32>,
    /// Text prepended to the system message.
    pub system_prefix: Option<String>,
    /// MiniJinja template over the messages, relative to the config file.
    pub template: Option<String>,
    /// What the template renders: `text` (default), the one user message;
    /// or `messages`, a JSON array of messages, with every `{{ value }}`
    /// JSON-escaped so that message content cannot add messages.
    pub output: Option<String>,
}

/// One entry under `escalation:`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEscalation {
    /// Cascade the rule applies to.
    pub from: String,
    /// Cascade to switch to.
    pub to: String,
    /// Condition: `frustrated`.
    pub when: String,
}

/// `alerts:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAlerts {
    /// Telegram Bot API sink.
    pub telegram: Option<RawTelegram>,
    /// JSON POST sink.
    pub webhook: Option<RawWebhook>,
    /// Alert when a fallback tier carries too much traffic.
    pub fallback_share: Option<RawFallbackShare>,
    /// The same alert at most this often (default `30m`); repeats within
    /// it are counted and sent as one digest when it ends.
    pub repeat_after: Option<String>,
    /// Language of the message text: `en` (default) or `ru`. Event kinds
    /// and metric names stay English.
    pub language: Option<String>,
}

/// `alerts.telegram`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTelegram {
    /// Bot token (secret).
    pub bot_token: String,
    /// Chat to post to.
    pub chat_id: String,
    /// Bot API base URL, for a proxy or a test (default `https://api.telegram.org`).
    pub api_base: Option<String>,
}

/// `alerts.webhook`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWebhook {
    /// URL receiving a JSON POST per alert.
    pub url: String,
}

/// `alerts.fallback_share`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFallbackShare {
    /// Share (0..1) of a cascade's traffic served by a later tier.
    pub above: f64,
    /// For at least this long.
    #[serde(rename = "for")]
    pub for_: String,
}

/// `handoff:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHandoff {
    /// The completion text a client receives when its request was queued.
    pub reply: Option<String>,
    /// URL called (JSON POST) for each new item.
    pub webhook: Option<String>,
    /// How long items are kept (default `30d`).
    pub retention: Option<String>,
}
