//! A run's report, per cascade: success rate, the share each tier and
//! model served (over the whole run and step by step), latency
//! percentiles, the valid-output rate and the cost — as text, JSON and
//! (in [`super::svg`]) a chart.
//!
//! - `build`: from a run's samples to the report.
//! - `text`: the report as text for a terminal.
//! - this file: the report's types, as JSON writes them.

mod build;
mod text;

pub use super::marks::{AlertRow, Check};
pub use super::times::clock;
pub use super::units::{pct, secs};
pub use build::build;
use indexmap::IndexMap;
use serde::Serialize;

/// The report of one drill.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Virtual seconds of traffic.
    pub duration_s: f64,
    /// Seconds per row of `steps`.
    pub step_s: f64,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// Requests sent.
    pub requests: usize,
    /// Per cascade (the traffic's `model`), in scenario order.
    pub cascades: Vec<CascadeReport>,
    /// The fault windows.
    pub faults: Vec<FaultRow>,
    /// Alerts that went out.
    pub alerts: Vec<AlertRow>,
    /// The load each monitored provider read: per provider, the mean per
    /// step (`None` where it read nothing).
    pub load: IndexMap<String, Vec<Option<f64>>>,
    /// Per model that answered JSON: how much of it was valid as the model
    /// sent it, and after normalization (extraction, repair, renaming).
    pub json: Vec<JsonRow>,
    /// Over every model's JSON answers: share valid as sent.
    pub json_valid_as_sent: Option<f64>,
    /// Over every model's JSON answers: share valid after normalization.
    pub json_valid_after: Option<f64>,
    /// The pass marks and how they went.
    pub checks: Vec<Check>,
}

/// One model's JSON answers.
#[derive(Debug, Clone, Serialize)]
pub struct JsonRow {
    /// Model ref.
    pub model: String,
    /// JSON answers (content and tool arguments) it gave.
    pub answers: u64,
    /// Share valid exactly as sent.
    pub valid_as_sent: f64,
    /// Share valid after normalization.
    pub valid_after: f64,
}

/// One cascade's figures.
#[derive(Debug, Clone, Serialize)]
pub struct CascadeReport {
    /// Its name.
    pub cascade: String,
    /// Requests sent to it.
    pub requests: usize,
    /// Share answered by a model.
    pub success_rate: f64,
    /// Share queued for a person.
    pub handoff_rate: f64,
    /// Share that got an error, by error code.
    pub failed: IndexMap<String, usize>,
    /// Share of model answers whose content was valid.
    pub valid_rate: Option<f64>,
    /// Answers the models of bad-answer faults gave during them.
    pub fault_model_answers: usize,
    /// Latency of every request to its last byte, seconds.
    pub latency_s: Percentiles,
    /// Until the first byte (TTFT for streams), seconds.
    pub first_byte_s: Percentiles,
    /// Mean latency inside any fault window, and outside all of them
    /// (`None` where no request was sent).
    pub latency_in_faults_s: Option<f64>,
    /// See `latency_in_faults_s`.
    pub latency_outside_faults_s: Option<f64>,
    /// Share each model served (and `handoff`, `failed`) of the requests
    /// sent inside a fault window; empty without one.
    pub served_in_faults: IndexMap<String, f64>,
    /// Requests that failed before any upstream call (every model skipped,
    /// or refused by the gateway itself); they count among the failures.
    pub failed_without_attempt: usize,
    /// Share of requests by the answering model's 1-based position in the
    /// cascade as it stood (`1`, `2`, `3`, `4+`), then `handoff` and `failed`.
    pub ranks: IndexMap<String, f64>,
    /// Share of requests answered by a free model (last resort excluded).
    pub free_share: f64,
    /// Share answered by a model of known, non-zero price, last resort excluded.
    pub paid_share: f64,
    /// Share answered by a model whose price nobody gave (a self-hosted
    /// model without `price_per_1m`: it costs $0 in the report), last
    /// resort excluded.
    pub unpriced_share: f64,
    /// Share that got an error (from the counts, so never below 0).
    pub failed_rate: f64,
    /// The cascade as discovery built it, with its notes (`None` for a
    /// fixed chain).
    pub discovered: Option<super::discovered::Discovered>,
    /// Share answered by the cascade's `last_resort`.
    pub last_resort_share: f64,
    /// `cost_usd` extrapolated to 30 days of the same traffic.
    pub cost_per_month_usd: f64,
    /// Per model that answered: share, mean latency, and its own latency
    /// (mean over its answers that took one attempt).
    pub models: IndexMap<String, ModelRow>,
    /// Per load profile the answers were served under (`none` without one),
    /// lightest first: how long and how fast the answers were.
    pub profiles: IndexMap<String, ProfileRow>,
    /// Per caller class (traffic with `class`), in the order they first
    /// appear: what each sent and how long its answers were.
    pub classes: IndexMap<String, super::classes::ClassRow>,
    /// Upstream calls per request, mean.
    pub attempts_mean: f64,
    /// USD.
    pub cost_usd: f64,
    /// Share of requests each model served (and `handoff`, `failed`), whole run.
    pub served: IndexMap<String, f64>,
    /// Share of requests each tier served.
    pub tiers: IndexMap<String, f64>,
    /// Step by step.
    pub steps: Vec<Step>,
}

/// One model's answers in a cascade.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRow {
    /// Share of the cascade's requests it answered.
    pub share: f64,
    /// Mean latency of its answers, seconds.
    pub latency_mean_s: f64,
    /// Mean latency of its answers that took one attempt (no failed model
    /// before it): the model's own speed. `None` when it never answered first.
    pub latency_own_s: Option<f64>,
}

/// The answers of one load profile.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileRow {
    /// Answers served under it.
    pub answers: usize,
    /// Mean completion tokens.
    pub tokens_mean: f64,
    /// Mean latency, seconds.
    pub latency_mean_s: f64,
    /// p99 of the time to the first byte, seconds.
    pub first_byte_p99_s: f64,
}

/// p50 / p90 / p99 and the mean.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th.
    pub p90: f64,
    /// 99th.
    pub p99: f64,
}

/// One row of the report over time.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Start of the step, seconds.
    pub from_s: f64,
    /// Requests sent in it.
    pub requests: usize,
    /// Share answered by a model.
    pub success_rate: f64,
    /// Median latency, seconds.
    pub p50_s: f64,
    /// Mean latency, seconds.
    pub mean_s: f64,
    /// Share per model, `handoff` and `failed` (same keys as `served`).
    pub served: IndexMap<String, f64>,
    /// Share per tier, `handoff` and `failed` (same keys as `tiers`).
    pub tiers: IndexMap<String, f64>,
}

/// A fault window.
#[derive(Debug, Clone, Serialize)]
pub struct FaultRow {
    /// Start, seconds.
    pub from_s: f64,
    /// End, seconds.
    pub until_s: f64,
    /// What it does.
    pub label: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_and_units_read_like_a_person_writes_them() {
        assert_eq!((clock(0.0), clock(125.0), clock(3725.0)), ("0:00".into(), "2:05".into(), "1:02:05".into()));
        assert_eq!((secs(0.152), secs(1.5)), ("152 ms".to_string(), "1.50 s".to_string()));
        assert_eq!(pct(0.987), "98.7%");
        // 1 − 0.9 − 0.1 is a hair below zero in floating point.
        assert_eq!((pct(1.0 - 0.9 - 0.1), pct(-0.0)), ("0.0%".to_string(), "0.0%".to_string()));
    }
}
