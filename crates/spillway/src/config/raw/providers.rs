//! `providers:`: one entry per upstream, its listed and static models, prices, and the mock behaviour and outage windows a `mock` provider plays.

use super::{RawBreaker, RawLoad};
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

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
