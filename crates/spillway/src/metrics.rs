//! Every Prometheus metric Spillway exports, in one place (SPEC §10).
//!
//! Label values come from enums with bounded labels (`metric_label()`, `reason()`) or from
//! config names, never from client input — except the model id of a direct
//! `provider/model` request and ids an upstream lists, which are why every
//! label value is escaped when it is written ([`label_sets!`]): prometheus-client
//! 0.24 writes label values as they are. Handles for the request path are
//! created once per cascade target ([`TargetMetrics`]) so an attempt only
//! increments atomics — no label strings are built per request.

mod process;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabel, EncodeLabelSet, EncodeLabelValue, LabelSetEncoder, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Names, so tests and docs refer to the same strings.
pub mod names {
    /// Requests by cascade and outcome.
    pub const REQUESTS: &str = "spillway_requests";
    /// Upstream attempts by result (SPEC §10's set).
    pub const ATTEMPTS: &str = "spillway_attempts";
    /// Failed attempts and skips by their finer reason.
    pub const ATTEMPT_FAILURES: &str = "spillway_attempt_failures";
    /// Answers by tier.
    pub const SERVED: &str = "spillway_served";
    /// Request latency.
    pub const REQUEST_DURATION: &str = "spillway_request_duration_seconds";
    /// Time to first token.
    pub const TTFT: &str = "spillway_ttft_seconds";
    /// Breaker state per model.
    pub const BREAKER_STATE: &str = "spillway_breaker_state";
    /// Dead mark per model.
    pub const MODEL_DEAD: &str = "spillway_model_dead";
    /// Load of a monitored provider (0..1; NaN while unknown).
    pub const LOAD: &str = "spillway_load";
    /// 1 for a monitored provider's active load profile, 0 for the others.
    pub const LOAD_PROFILE: &str = "spillway_load_profile";
    /// 1 while a provider's load source has failed three intervals in a row.
    pub const LOAD_STALE: &str = "spillway_load_stale";
    /// Spend in USD by cascade and model.
    pub const COST: &str = "spillway_cost_usd";
    /// Tokens by model and kind.
    pub const TOKENS: &str = "spillway_tokens";
    /// Answers of models without a known price (cost counted as 0).
    pub const UNPRICED: &str = "spillway_unpriced_answers";
    /// Open items in the handoff queue.
    pub const HANDOFF_QUEUE_DEPTH: &str = "spillway_handoff_queue_depth";
    /// Streams continued on another model after breaking mid-answer.
    pub const CONTINUATIONS: &str = "spillway_continuations";
    /// Stream events an upstream sent that could not be read, skipped.
    pub const STREAM_EVENTS_SKIPPED: &str = "spillway_stream_events_skipped";
    /// Requests whose client went away before the answer ended.
    pub const CLIENT_DISCONNECTS: &str = "spillway_client_disconnects";
    /// Requests switched to another cascade by an escalation rule.
    pub const ESCALATIONS: &str = "spillway_escalations";
    /// JSON answers by normalization result.
    pub const NORMALIZE: &str = "spillway_normalize";
    /// Attempts by prompt variant and version.
    pub const PROMPT_VARIANTS: &str = "spillway_prompt_variants";
    /// Upstream attempts in flight by cascade and provider.
    pub const IN_FLIGHT: &str = "spillway_in_flight";
    /// 1, with the version and build as labels.
    pub const BUILD_INFO: &str = "spillway_build_info";
}

/// The upper bounds of `spillway_request_duration_seconds`: from 5 ms to
/// an hour, so a request that runs to `health.timeouts.total` (the config
/// refuses one above [`REQUEST_DURATION_MAX_S`]) still lands below `+Inf`.
pub const REQUEST_DURATION_BUCKETS: [f64; 21] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0,
    1200.0, 1800.0, 3600.0,
];

/// The largest finite bucket of the request duration, in seconds.
pub const REQUEST_DURATION_MAX_S: u64 = 3600;

/// OpenMetrics text (what the registry writes) as the Prometheus text
/// format 0.0.4: a counter's `# HELP`/`# TYPE` name its `_total` samples,
/// and `# UNIT` and `# EOF`, which 0.0.4 does not know, are left out.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "].iter().find_map(|p| line.strip_prefix(p).map(|rest| (*p, rest)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let suffix = if counters.contains(name) && !name.ends_with("_total") { "_total" } else { "" };
                out.push_str(prefix);
                out.push_str(name);
                out.push_str(suffix);
                if !tail.is_empty() {
                    out.push(' ');
                    out.push_str(tail);
                }
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// A label value as both text formats (0.0.4 and OpenMetrics) require it:
/// `\`, `"` and a line feed escaped. Without this a model id such as
/// `x"} 1\nforged 1` would end its label set early and write lines of its own.
struct Escaped<'a>(&'a str);

impl EncodeLabelValue for Escaped<'_> {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        let mut rest = self.0;
        // Copies the runs between special characters in one write each.
        while let Some(at) = rest.find(['\\', '"', '\n']) {
            let (run, tail) = rest.split_at(at);
            encoder.write_str(run)?;
            let mut chars = tail.chars();
            encoder.write_str(match chars.next() {
                Some('\\') => "\\\\",
                Some('"') => "\\\"",
                _ => "\\n",
            })?;
            rest = chars.as_str();
        }
        encoder.write_str(rest)
    }
}

/// `EncodeLabelSet` for label structs, in field order, each value through
/// [`Escaped`]. The derive of prometheus-client would write them raw.
macro_rules! label_sets {
    ($($ty:ident { $($field:ident),+ $(,)? })+) => {$(
        impl EncodeLabelSet for $ty {
            fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
                $( (stringify!($field), Escaped(&self.$field)).encode(encoder.encode_label())?; )+
                Ok(())
            }
        }
    )+};
}

label_sets! {
    RequestLabels { cascade, outcome }
    AttemptLabels { cascade, provider, model, result }
    ServedLabels { cascade, tier, provider, model, rank }
    CascadeLabels { cascade }
    SkippedLabels { cascade, provider }
    ModelLabels { provider, model }
    ProviderLabels { provider }
    LoadProfileLabels { provider, profile }
    CostLabels { cascade, provider, model }
    TokenLabels { provider, model, kind }
    EscalationLabels { from, to, reason }
    ReasonLabels { cascade, provider, model, reason }
    PromptLabels { provider, model, variant, version }
    NormalizeLabels { provider, model, result }
    InFlightLabels { cascade, provider }
}

/// `cascade`, `provider`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct InFlightLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name.
    pub provider: String,
}

/// `version`, `commit` of `spillway_build_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    /// The crate's version.
    pub version: &'static str,
    /// The git commit it was built from (`SPILLWAY_GIT_COMMIT` at build
    /// time), or `unknown`.
    pub commit: &'static str,
    /// `debug` or `release`.
    pub profile: &'static str,
}

impl BuildLabels {
    /// This build's.
    pub fn current() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION"),
            commit: option_env!("SPILLWAY_GIT_COMMIT").unwrap_or("unknown"),
            profile: if cfg!(debug_assertions) { "debug" } else { "release" },
        }
    }
}

/// `cascade`, `outcome`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct RequestLabels {
    /// Cascade name (or `direct`).
    pub cascade: String,
    /// `ok`, `handoff`, `error`.
    pub outcome: &'static str,
}

/// `cascade`, `provider`, `model`, `result`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct AttemptLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Attempt result label.
    pub result: &'static str,
}

/// `cascade`, `tier`, `provider`, `model`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ServedLabels {
    /// Cascade name.
    pub cascade: String,
    /// Tier.
    pub tier: &'static str,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// 1-based position of the model in its cascade when it answered,
    /// bounded: `1`, `2`, `3`, `4+` (`handoff` for the handoff series).
    pub rank: &'static str,
}

/// The bounded `rank` label of a 1-based cascade position.
pub fn rank_label(rank: usize) -> &'static str {
    match rank {
        0 | 1 => "1",
        2 => "2",
        3 => "3",
        _ => "4+",
    }
}

/// `cascade`, `provider`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct SkippedLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name (from the config).
    pub provider: String,
}

/// `cascade`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct CascadeLabels {
    /// Cascade name.
    pub cascade: String,
}

/// `provider`, `model`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ModelLabels {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
}

/// `provider`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ProviderLabels {
    /// Provider name.
    pub provider: String,
}

/// `provider`, `profile`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct LoadProfileLabels {
    /// Provider name.
    pub provider: String,
    /// Load profile name (from config).
    pub profile: String,
}

/// `cascade`, `provider`, `model`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct CostLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
}

/// `provider`, `model`, `kind`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct TokenLabels {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// `input` or `output`.
    pub kind: &'static str,
}

/// `from`, `to`, `reason`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct EscalationLabels {
    /// Cascade the request asked for.
    pub from: String,
    /// Cascade that served it.
    pub to: String,
    /// `frustrated` or `header`.
    pub reason: &'static str,
}

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_DURATION_BUCKETS)
}

fn latency_histogram() -> Histogram {
    // 1 ms .. ~65 s
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// `cascade`, `provider`, `model`, `reason`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ReasonLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Failure reason ([`crate::outcome::REASONS`]).
    pub reason: &'static str,
}

/// The registry and every family.
pub struct Metrics {
    registry: Registry,
    /// `spillway_requests_total`
    pub requests: Family<RequestLabels, Counter>,
    /// `spillway_attempts_total`
    pub attempts: Family<AttemptLabels, Counter>,
    /// `spillway_attempt_failures_total`
    pub attempt_failures: Family<ReasonLabels, Counter>,
    /// `spillway_served_total`
    pub served: Family<ServedLabels, Counter>,
    /// `spillway_request_duration_seconds`
    pub request_duration: Family<CascadeLabels, Histogram, fn() -> Histogram>,
    /// `spillway_ttft_seconds`
    pub ttft: Family<ModelLabels, Histogram, fn() -> Histogram>,
    /// `spillway_breaker_state`
    pub breaker_state: Family<ModelLabels, Gauge>,
    /// `spillway_model_dead`
    pub model_dead: Family<ModelLabels, Gauge<i64, AtomicI64Compat>>,
    /// `spillway_load`
    pub load: Family<ProviderLabels, Gauge<f64, AtomicU64>>,
    /// `spillway_load_profile`
    pub load_profile: Family<LoadProfileLabels, Gauge>,
    /// `spillway_load_stale`
    pub load_stale: Family<ProviderLabels, Gauge>,
    /// `spillway_cost_usd_total`
    pub cost: Family<CostLabels, Counter<f64, AtomicU64>>,
    /// `spillway_tokens_total`
    pub tokens: Family<TokenLabels, Counter>,
    /// `spillway_unpriced_answers_total`
    pub unpriced: Family<ModelLabels, Counter>,
    /// `spillway_handoff_queue_depth`
    pub handoff_queue_depth: Gauge,
    /// `spillway_escalations_total`
    pub escalations: Family<EscalationLabels, Counter>,
    /// `spillway_client_disconnects_total`
    pub client_disconnects: Family<CascadeLabels, Counter>,
    /// `spillway_stream_events_skipped_total`
    pub stream_events_skipped: Family<SkippedLabels, Counter>,
    /// `spillway_continuations_total`
    pub continuations: Family<ContinuationLabels, Counter>,
    /// `spillway_normalize_total`
    pub normalize: Family<NormalizeLabels, Counter>,
    /// `spillway_prompt_variants_total`
    pub prompt_variants: Family<PromptLabels, Counter>,
    /// `spillway_in_flight`
    pub in_flight: Family<InFlightLabels, Gauge>,
}

/// `cascade`, `from`, `to`, `mode`, `result`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ContinuationLabels {
    pub cascade: String,
    /// The model ref whose stream broke (`-` when not known at that point).
    pub from: String,
    /// The model ref that continued it (`none` when none could).
    pub to: String,
    /// `prefill`, `instruct` or `none`.
    pub mode: &'static str,
    /// `ok` (ended cleanly), `failed` (broke again), `rejected` (refused
    /// before a first token), `none` (no model could continue).
    pub result: &'static str,
}

/// `provider`, `model`, `variant` (the rule's pattern), `version`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct PromptLabels {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// The matching rule's pattern.
    pub variant: String,
    /// Its version (`-` when unset).
    pub version: String,
}

/// `provider`, `model`, `result` (`valid`, `repaired`, `invalid`)
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct NormalizeLabels {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Normalization result.
    pub result: &'static str,
}

/// Gauge storage type alias kept for readability.
type AtomicI64Compat = std::sync::atomic::AtomicI64;

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every family.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::default();
        let attempts = Family::default();
        let attempt_failures = Family::default();
        let served = Family::default();
        let request_duration = Family::new_with_constructor(request_histogram as fn() -> Histogram);
        let ttft = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        let breaker_state = Family::default();
        let model_dead = Family::default();
        let load = Family::default();
        let load_profile = Family::default();
        let load_stale = Family::default();
        let cost = Family::default();
        let tokens = Family::default();
        let unpriced = Family::default();
        let handoff_queue_depth = Gauge::default();
        let escalations = Family::default();
        let client_disconnects = Family::default();
        let stream_events_skipped = Family::default();
        let continuations = Family::default();
        let normalize = Family::default();
        let prompt_variants = Family::default();
        let in_flight = Family::default();
        registry.register(names::IN_FLIGHT, "Upstream attempts in flight by cascade and provider", in_flight.clone());
        let build_info: Family<BuildLabels, Gauge> = Family::default();
        build_info.get_or_create(&BuildLabels::current()).set(1);
        registry.register(names::BUILD_INFO, "1; the labels say which Spillway this is", build_info);
        registry.register(names::PROMPT_VARIANTS, "Attempts by prompt variant and version", prompt_variants.clone());
        registry.register(
            names::NORMALIZE,
            "JSON answers by normalization result (valid, repaired, invalid)",
            normalize.clone(),
        );
        registry.register(names::REQUESTS, "Client requests by cascade and outcome", requests.clone());
        registry.register(names::ATTEMPTS, "Upstream attempts by result", attempts.clone());
        registry.register(
            names::ATTEMPT_FAILURES,
            "Failed attempts and skipped models by reason (finer than the attempts' result)",
            attempt_failures.clone(),
        );
        registry.register(names::SERVED, "Answers by cascade, tier and model", served.clone());
        registry.register(names::REQUEST_DURATION, "Request latency in seconds", request_duration.clone());
        registry.register(names::TTFT, "Upstream time to first token in seconds", ttft.clone());
        registry.register(
            names::BREAKER_STATE,
            "Circuit breaker state: 0 closed, 1 open, 2 half-open",
            breaker_state.clone(),
        );
        registry.register(names::MODEL_DEAD, "1 while a model has a dead mark", model_dead.clone());
        registry.register(names::LOAD, "Load of a monitored provider, 0..1 (NaN while unknown)", load.clone());
        registry.register(
            names::LOAD_PROFILE,
            "1 for the active load profile of a provider, 0 for the others",
            load_profile.clone(),
        );
        registry.register(
            names::LOAD_STALE,
            "1 while a provider's load source has failed three intervals in a row",
            load_stale.clone(),
        );
        registry.register(names::COST, "Spend in USD: usage times the model's price", cost.clone());
        registry.register(names::TOKENS, "Tokens by model and kind (input, output)", tokens.clone());
        registry.register(names::UNPRICED, "Answers of models without a known price (cost 0)", unpriced.clone());
        registry.register(names::HANDOFF_QUEUE_DEPTH, "Open items in the handoff queue", handoff_queue_depth.clone());
        registry.register(names::ESCALATIONS, "Requests escalated to another cascade", escalations.clone());
        registry.register(
            names::CONTINUATIONS,
            "Streams that broke mid-answer, continued on another model, by result (ok, failed, rejected, none)",
            continuations.clone(),
        );
        registry.register(
            names::CLIENT_DISCONNECTS,
            "Requests whose client disconnected before the answer ended (neither ok nor error)",
            client_disconnects.clone(),
        );
        registry.register(
            names::STREAM_EVENTS_SKIPPED,
            "Stream events an upstream sent that could not be read (not JSON, broken format), skipped",
            stream_events_skipped.clone(),
        );
        Self {
            registry,
            requests,
            attempts,
            attempt_failures,
            served,
            request_duration,
            ttft,
            breaker_state,
            model_dead,
            load,
            load_profile,
            load_stale,
            cost,
            tokens,
            unpriced,
            handoff_queue_depth,
            escalations,
            client_disconnects,
            stream_events_skipped,
            continuations,
            normalize,
            prompt_variants,
            in_flight,
        }
    }

    /// The OpenMetrics text exposition, the process's own metrics
    /// (`process_*`, read from `/proc/self` on Linux) included.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        let process = process::render();
        match out.rfind("# EOF") {
            Some(at) => out.insert_str(at, &process),
            None => out.push_str(&process),
        }
        out
    }

    /// Counts one continuation outcome (off the hot path: only streams
    /// that broke get here).
    pub fn continued(&self, cascade: &str, from: &str, to: &str, mode: &'static str, result: &'static str) {
        let labels = ContinuationLabels { cascade: cascade.into(), from: from.into(), to: to.into(), mode, result };
        self.continuations.get_or_create(&labels).inc();
    }

    /// A stream event of `provider` that could not be read was skipped
    /// (rare: the labels are built here, not per request).
    pub fn skipped_event(&self, cascade: &str, provider: &str) {
        let labels = SkippedLabels { cascade: cascade.into(), provider: provider.into() };
        self.stream_events_skipped.get_or_create(&labels).inc();
    }

    /// Pre-built handles for one target of one cascade.
    pub fn target(&self, cascade: &str, provider: &str, model: &str) -> Arc<TargetMetrics> {
        self.target_at(cascade, provider, model, 1)
    }

    /// Pre-built handles for the model at 1-based position `rank` of a
    /// cascade (the `rank` label of `spillway_served_total`).
    pub fn target_at(&self, cascade: &str, provider: &str, model: &str, rank: usize) -> Arc<TargetMetrics> {
        let attempts = crate::outcome::RESULT_LABELS
            .iter()
            .map(|&result| {
                self.attempts
                    .get_or_create(&AttemptLabels {
                        cascade: cascade.into(),
                        provider: provider.into(),
                        model: model.into(),
                        result,
                    })
                    .clone()
            })
            .collect();
        // A model never serves the handoff tier: that series belongs to the
        // cascade (see `CascadeMetrics::served_handoff`).
        let served = crate::outcome::TIERS
            .iter()
            .filter(|&&tier| tier != crate::outcome::Tier::Handoff.as_str())
            .map(|&tier| {
                self.served
                    .get_or_create(&ServedLabels {
                        cascade: cascade.into(),
                        tier,
                        provider: provider.into(),
                        model: model.into(),
                        rank: rank_label(rank),
                    })
                    .clone()
            })
            .collect();
        let ttft = self.ttft.get_or_create(&ModelLabels { provider: provider.into(), model: model.into() }).clone();
        let normalize = NORMALIZE_RESULTS
            .iter()
            .map(|&result| {
                self.normalize
                    .get_or_create(&NormalizeLabels { provider: provider.into(), model: model.into(), result })
                    .clone()
            })
            .collect();
        let failures = FailureHandles {
            family: self.attempt_failures.clone(),
            cascade: cascade.into(),
            provider: provider.into(),
            model: model.into(),
            by_reason: std::array::from_fn(|_| std::sync::OnceLock::new()),
        };
        let in_flight = self
            .in_flight
            .get_or_create(&InFlightLabels { cascade: cascade.into(), provider: provider.into() })
            .clone();
        Arc::new(TargetMetrics {
            attempts,
            failures,
            served,
            ttft,
            normalize,
            usage: UsageHandles::default(),
            in_flight,
        })
    }

    /// Pre-built handles for one cascade.
    pub fn cascade(&self, cascade: &str) -> Arc<CascadeMetrics> {
        let outcome =
            |outcome| self.requests.get_or_create(&RequestLabels { cascade: cascade.into(), outcome }).clone();
        Arc::new(CascadeMetrics {
            ok: outcome("ok"),
            handoff: outcome("handoff"),
            error: outcome("error"),
            duration: self.request_duration.get_or_create(&CascadeLabels { cascade: cascade.into() }).clone(),
            disconnected: self.client_disconnects.get_or_create(&CascadeLabels { cascade: cascade.into() }).clone(),
            served_handoff: self
                .served
                .get_or_create(&ServedLabels {
                    cascade: cascade.into(),
                    tier: crate::outcome::Tier::Handoff.as_str(),
                    provider: "spillway".into(),
                    model: "handoff".into(),
                    rank: "handoff",
                })
                .clone(),
        })
    }
}

/// Handles for one cascade target, indexed by result / tier.
#[derive(Debug)]
pub struct TargetMetrics {
    attempts: Vec<Counter<u64, AtomicU64>>,
    failures: FailureHandles,
    served: Vec<Counter<u64, AtomicU64>>,
    /// TTFT histogram of the model.
    pub ttft: Histogram,
    normalize: Vec<Counter<u64, AtomicU64>>,
    /// Cost and token series, looked up once.
    pub usage: UsageHandles,
    /// `spillway_in_flight{cascade, provider}` (shared by the provider's
    /// models in the cascade): up while an attempt's ticket is unsettled.
    pub in_flight: Gauge,
}

/// The usage series of one target, each created on first use (so a model
/// that never reports usage, or always has a price, adds no empty series).
/// The request path would otherwise build label strings and hash them into
/// the families for every answer.
#[derive(Debug, Default)]
pub struct UsageHandles {
    tokens: std::sync::OnceLock<[Counter; 2]>,
    unpriced: std::sync::OnceLock<Counter>,
    cost: std::sync::OnceLock<Counter<f64, AtomicU64>>,
}

impl UsageHandles {
    /// `spillway_tokens_total` for `input` and `output`.
    pub fn tokens(&self, m: &Metrics, provider: &str, model: &str) -> &[Counter; 2] {
        self.tokens.get_or_init(|| {
            ["input", "output"].map(|kind| {
                m.tokens.get_or_create(&TokenLabels { provider: provider.into(), model: model.into(), kind }).clone()
            })
        })
    }

    /// `spillway_unpriced_answers_total`.
    pub fn unpriced(&self, m: &Metrics, provider: &str, model: &str) -> &Counter {
        self.unpriced.get_or_init(|| {
            m.unpriced.get_or_create(&ModelLabels { provider: provider.into(), model: model.into() }).clone()
        })
    }

    /// `spillway_cost_usd_total`.
    pub fn cost(&self, m: &Metrics, cascade: &str, provider: &str, model: &str) -> &Counter<f64, AtomicU64> {
        self.cost.get_or_init(|| {
            let labels = CostLabels { cascade: cascade.into(), provider: provider.into(), model: model.into() };
            m.cost.get_or_create(&labels).clone()
        })
    }
}

/// The `result` values of `spillway_normalize_total`.
pub const NORMALIZE_RESULTS: [&str; 3] = ["valid", "repaired", "invalid"];

/// A target's `spillway_attempt_failures_total` series, each created on
/// first use (most targets never see most reasons).
#[derive(Debug)]
struct FailureHandles {
    family: Family<ReasonLabels, Counter>,
    cascade: String,
    provider: String,
    model: String,
    by_reason: [std::sync::OnceLock<Counter>; crate::outcome::REASONS.len()],
}

impl TargetMetrics {
    /// Counts an answered attempt.
    /// Attempts that reached the upstream (skips left out) and how many
    /// of them failed, since start: the console's request and error rates.
    pub fn attempt_counts(&self) -> (u64, u64) {
        let skips = ["skipped_dead", "skipped_open", "saturated"];
        let mut total = 0;
        let mut failed = 0;
        for (label, c) in crate::outcome::RESULT_LABELS.iter().zip(&self.attempts) {
            if skips.contains(label) {
                continue;
            }
            total += c.get();
            if *label != crate::outcome::RESULT_LABELS[crate::outcome::OK_RESULT] {
                failed += c.get();
            }
        }
        (total, failed)
    }

    /// Answers this target served, since start.
    pub fn served_count(&self) -> u64 {
        self.served.iter().map(Counter::get).sum()
    }

    pub fn attempt_ok(&self) {
        if let Some(c) = self.attempts.get(crate::outcome::OK_RESULT) {
            c.inc();
        }
    }

    /// Counts a failed attempt or a skip: its SPEC result and its reason.
    pub fn attempt_failed(&self, failure: &crate::outcome::Failure) {
        if let Some(c) = failure.result_index().and_then(|i| self.attempts.get(i)) {
            c.inc();
        }
        let f = &self.failures;
        let i = failure.reason_index();
        if let Some(slot) = f.by_reason.get(i) {
            slot.get_or_init(|| {
                let labels = ReasonLabels {
                    cascade: f.cascade.clone(),
                    provider: f.provider.clone(),
                    model: f.model.clone(),
                    reason: failure.reason(),
                };
                f.family.get_or_create(&labels).clone()
            })
            .inc();
        }
    }

    /// Counts a normalization result (`valid`, `repaired`, `invalid`).
    pub fn normalized(&self, result: &str) {
        if let Some(i) = NORMALIZE_RESULTS.iter().position(|r| *r == result) {
            self.normalize[i].inc();
        }
    }

    /// Counts an answer served at `TIERS[index]`.
    pub fn served(&self, index: usize) {
        if let Some(c) = self.served.get(index) {
            c.inc();
        }
    }
}

/// Handles for one cascade.
#[derive(Debug)]
pub struct CascadeMetrics {
    /// Outcome `ok`.
    pub ok: Counter,
    /// Outcome `handoff`.
    pub handoff: Counter,
    /// Outcome `error`.
    pub error: Counter,
    /// Request duration.
    pub duration: Histogram,
    /// The client went away mid-answer (`spillway_client_disconnects_total`).
    pub disconnected: Counter,
    /// `spillway_served_total{tier="handoff", provider="spillway", model="handoff"}`:
    /// answers a person will give.
    pub served_handoff: Counter,
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
