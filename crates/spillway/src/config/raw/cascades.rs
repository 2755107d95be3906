//! `cascades:` (with their quality rules, filters and budgets), `prompts:` and `escalation:`.

use super::RawBreaker;
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

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
