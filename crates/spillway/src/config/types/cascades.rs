//! `discovery:` and `cascades:` as compiled: model refs, strategies, filters, cascade kinds.

use super::{BreakerConfig, ProviderConfig};
use indexmap::IndexMap;
use std::fmt;
use std::time::Duration;

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
    /// Where `preferred` models go: first in their price class, or first of all.
    pub preferred_order: PreferredOrder,
}

/// `cascades.*.preferred_order`: where a discovered cascade places its
/// `preferred` models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreferredOrder {
    /// Preferred models lead their price class: preferred free, the other
    /// free, preferred paid, the other paid. A paid model named as the
    /// fallback stays the fallback.
    #[default]
    PriceClass,
    /// Every preferred model ahead of every other, paid or free (the rule
    /// before `price_class`).
    Strict,
}

impl PreferredOrder {
    /// As written in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PriceClass => "price_class",
            Self::Strict => "strict",
        }
    }
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
    /// `quality`: when set, answers are judged and bad models demoted.
    pub quality: Option<QualityConfig>,
}

/// `cascades.*.quality` as compiled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityConfig {
    /// Recent answers kept per model.
    pub window: u32,
    /// Answers in the window before the rule applies.
    pub min_answers: u32,
    /// Bad share over which a model is demoted.
    pub max_bad_share: f64,
    /// Signals that make an answer bad.
    pub signals: crate::quality::Signals,
    /// The text judge's rules.
    pub text: crate::quality::text::TextRules,
    /// The first demotion's length.
    pub demote_for: Duration,
    /// The longest demotion.
    pub demote_max: Duration,
    /// One request in this many probes a demoted model whose period is over.
    pub probe_every: u32,
    /// Probe answers judged before restoring or demoting again.
    pub probe_answers: u32,
}

impl QualityConfig {
    /// The signals on unless a config names others: the ones a false
    /// positive rarely causes. `json_repaired` (small models often need a
    /// fence removed — that is what repair is for) and `refusal` (some
    /// prompts should be refused) are counted but off.
    pub fn default_signals() -> crate::quality::Signals {
        use crate::quality::Signal as S;
        crate::quality::Signals::of(&[
            S::JsonInvalid,
            S::ToolArgsInvalid,
            S::Empty,
            S::WrongScript,
            S::Repetition,
            S::Continued,
            S::Feedback,
            S::Canary,
        ])
    }

    /// How long the `level`-th demotion in a row lasts: `demote_for`
    /// doubled per level, at most `demote_max` (the breaker's backoff).
    pub fn period(&self, level: u32) -> Duration {
        self.demote_for.saturating_mul(1 << level.min(20)).min(self.demote_max)
    }
}

impl Default for QualityConfig {
    fn default() -> Self {
        Self {
            window: 50,
            min_answers: 10,
            max_bad_share: 0.3,
            signals: Self::default_signals(),
            text: crate::quality::text::TextRules::default(),
            demote_for: Duration::from_secs(60),
            demote_max: Duration::from_secs(1800),
            probe_every: 10,
            probe_answers: 3,
        }
    }
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
