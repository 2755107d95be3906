//! Every Prometheus metric Spillway exports, in one place (SPEC §10).
//!
//! Label values come from enums with bounded labels (`metric_label()`, `reason()`) or from
//! config names, never from client input — except the model id of a direct
//! `provider/model` request and ids an upstream lists, which are why every
//! label value is escaped when it is written ([`label_sets!`]): prometheus-client
//! 0.24 writes label values as they are. Handles for the request path are
//! created once per cascade target ([`TargetMetrics`]) so an attempt only
//! increments atomics — no label strings are built per request.

mod clients;
mod console;
mod handles;
pub mod keys;
mod labels;
pub mod names;
mod process;
mod telemetry;
mod text;

pub use clients::{ClientMetrics, CutLabels};
pub use console::Tallies;
pub use handles::{CascadeMetrics, TargetMetrics, UsageHandles, NORMALIZE_RESULTS};
pub use labels::*;
pub use telemetry::{SignalLabels, TelemetryMetrics};
pub use text::to_prometheus_text;

use handles::{FailureHandles, QualityHandles};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The upper bounds of `spillway_request_duration_seconds`: from 5 ms to
/// an hour, so a request that runs to `health.timeouts.total` (the config
/// refuses one above [`REQUEST_DURATION_MAX_S`]) still lands below `+Inf`.
pub const REQUEST_DURATION_BUCKETS: [f64; 21] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0,
    1200.0, 1800.0, 3600.0,
];

/// The largest finite bucket of the request duration, in seconds.
pub const REQUEST_DURATION_MAX_S: u64 = 3600;

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_DURATION_BUCKETS)
}

fn latency_histogram() -> Histogram {
    // 1 ms .. ~65 s
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
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
    /// `spillway_server_connections`
    pub connections: Family<WorkerLabels, Gauge>,
    /// `spillway_quality_answers_total`
    pub quality_answers: Family<QualityLabels, Counter>,
    /// `spillway_quality_demoted`
    pub quality_demoted: Family<ModelLabels, Gauge<i64, AtomicI64Compat>>,
    /// Answers since start per model, tier and rank of each cascade, for
    /// `/admin/state` and the console (not exported).
    pub tallies: Tallies,
    /// `spillway_slow_client_cuts_total`
    pub clients: ClientMetrics,
    /// `spillway_key_*`
    pub keys: keys::KeyMetrics,
    /// `spillway_telemetry_dropped_total`, `spillway_telemetry_export_failures_total`
    pub telemetry: TelemetryMetrics,
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
        let connections = Family::default();
        let quality_answers = Family::default();
        let quality_demoted = Family::default();
        registry.register(
            names::QUALITY_ANSWERS,
            "Judged answers by cascade, model and quality signal (ok when none)",
            quality_answers.clone(),
        );
        registry.register(
            names::QUALITY_DEMOTED,
            "1 while a model is demoted for the quality of its answers",
            quality_demoted.clone(),
        );
        registry.register(names::IN_FLIGHT, "Upstream attempts in flight by cascade and provider", in_flight.clone());
        registry.register(names::SERVER_CONNECTIONS, "Open client connections by serving thread", connections.clone());
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
        let clients = ClientMetrics::register(&mut registry);
        let keys = keys::KeyMetrics::register(&mut registry);
        let telemetry = TelemetryMetrics::register(&mut registry);
        Self {
            keys,
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
            quality_answers,
            quality_demoted,
            normalize,
            prompt_variants,
            in_flight,
            connections,
            tallies: Tallies::default(),
            clients,
            telemetry,
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
            quality: QualityHandles {
                family: self.quality_answers.clone(),
                cascade: cascade.into(),
                provider: provider.into(),
                model: model.into(),
                by_signal: std::sync::OnceLock::new(),
            },
            tallies: self.tallies.for_target(cascade, &format!("{provider}/{model}"), rank_label(rank)),
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

#[cfg(test)]
mod tests;
