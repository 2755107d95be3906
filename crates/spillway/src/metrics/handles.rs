//! Pre-built handles for the request path: one [`TargetMetrics`] per
//! cascade target and one [`CascadeMetrics`] per cascade, so an attempt
//! only increments atomics and builds no label strings.

use super::console::TargetTallies;
use super::labels::{CostLabels, ModelLabels, QualityLabels, ReasonLabels, TokenLabels};
use super::Metrics;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use std::sync::atomic::AtomicU64;

/// Handles for one cascade target, indexed by result / tier.
#[derive(Debug)]
pub struct TargetMetrics {
    pub(super) attempts: Vec<Counter<u64, AtomicU64>>,
    pub(super) failures: FailureHandles,
    pub(super) served: Vec<Counter<u64, AtomicU64>>,
    /// TTFT histogram of the model.
    pub ttft: Histogram,
    pub(super) normalize: Vec<Counter<u64, AtomicU64>>,
    /// Cost and token series, looked up once.
    pub usage: UsageHandles,
    /// `spillway_in_flight{cascade, provider}` (shared by the provider's
    /// models in the cascade): up while an attempt's ticket is unsettled.
    pub in_flight: Gauge,
    /// The console's since-start counts, which a re-ranking does not reset.
    pub(super) tallies: TargetTallies,
    /// `spillway_quality_answers_total`, created on the first judged answer.
    pub(super) quality: QualityHandles,
}

/// A target's quality series: one per signal and `ok`, made together the
/// first time one of its answers is judged (cascades without `quality:`
/// add none).
#[derive(Debug)]
pub(super) struct QualityHandles {
    pub(super) family: Family<QualityLabels, Counter>,
    pub(super) cascade: String,
    pub(super) provider: String,
    pub(super) model: String,
    pub(super) by_signal: std::sync::OnceLock<Vec<Counter>>,
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
pub(super) struct FailureHandles {
    pub(super) family: Family<ReasonLabels, Counter>,
    pub(super) cascade: String,
    pub(super) provider: String,
    pub(super) model: String,
    pub(super) by_reason: [std::sync::OnceLock<Counter>; crate::outcome::REASONS.len()],
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

    /// Answers this target's model served in its cascade since start, at
    /// whatever rank it stood.
    pub fn served_count(&self) -> u64 {
        self.tallies.model()
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

    /// Counts a judged answer: each of its signals, or `ok`.
    pub fn quality(&self, signals: crate::quality::Signals) {
        let q = &self.quality;
        let all = q.by_signal.get_or_init(|| {
            crate::quality::LABELS
                .iter()
                .chain([&crate::quality::OK_LABEL])
                .map(|&signal| {
                    let labels = QualityLabels {
                        cascade: q.cascade.clone(),
                        provider: q.provider.clone(),
                        model: q.model.clone(),
                        signal,
                    };
                    q.family.get_or_create(&labels).clone()
                })
                .collect()
        });
        if signals.is_empty() {
            if let Some(c) = all.get(crate::quality::LABELS.len()) {
                c.inc();
            }
        }
        for s in signals.iter() {
            if let Some(c) = all.get(s.index()) {
                c.inc();
            }
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
        self.tallies.served(index);
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
