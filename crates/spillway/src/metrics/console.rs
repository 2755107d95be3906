//! What the console and `/admin/state` show as "answers since start":
//! counters kept apart from the Prometheus families (not exported), keyed
//! by what does not change when a discovered cascade is re-ranked.
//!
//! `spillway_served_total` carries a `rank` label, so a model's series
//! starts again at 0 whenever a re-ranking (by TTFT, a listing change)
//! moves it; reading the series of its current rank made a model's
//! `served` and `share` fall to 0 in `/admin/state`. Here a model's answers
//! are counted per model in its cascade, and the shares per tier and per
//! rank are figures of their own.

use super::labels::{ServedTally, TallyKey};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// Answers per tier or per rank label, in a fixed order.
pub type Counts = [(&'static str, u64); 4];

/// The since-start counters, shared by every target of every cascade.
#[derive(Debug, Default, Clone)]
pub struct Tallies {
    family: Family<TallyKey, Counter>,
}

impl Tallies {
    fn counter(&self, cascade: &str, what: ServedTally, name: &str) -> Counter {
        self.family.get_or_create(&TallyKey { cascade: cascade.into(), what, name: name.into() }).clone()
    }

    /// The counters one target increments per answer: its model, its tier
    /// (by tier index), its rank.
    pub fn for_target(&self, cascade: &str, model_ref: &str, rank_label: &str) -> TargetTallies {
        TargetTallies {
            model: self.counter(cascade, ServedTally::Model, model_ref),
            tiers: crate::outcome::TIERS.map(|tier| self.counter(cascade, ServedTally::Tier, tier)),
            rank: self.counter(cascade, ServedTally::Rank, rank_label),
        }
    }

    /// Answers of `model_ref` in `cascade` since start, at any rank.
    pub fn model(&self, cascade: &str, model_ref: &str) -> u64 {
        self.counter(cascade, ServedTally::Model, model_ref).get()
    }

    /// Answers of `cascade` since start per tier (`TIERS` order) and per
    /// rank label (`1`, `2`, `3`, `4+`), zeros included.
    pub fn shares(&self, cascade: &str) -> (Counts, Counts) {
        let tiers = crate::outcome::TIERS.map(|t| (t, self.counter(cascade, ServedTally::Tier, t).get()));
        let ranks = ["1", "2", "3", "4+"].map(|r| (r, self.counter(cascade, ServedTally::Rank, r).get()));
        (tiers, ranks)
    }
}

/// One target's since-start counters.
#[derive(Debug)]
pub struct TargetTallies {
    model: Counter,
    tiers: [Counter; crate::outcome::TIERS.len()],
    rank: Counter,
}

impl TargetTallies {
    /// Counts an answer at `TIERS[tier]`.
    pub fn served(&self, tier: usize) {
        self.model.inc();
        if let Some(c) = self.tiers.get(tier) {
            c.inc();
        }
        self.rank.inc();
    }

    /// This target's model's answers since start, at any rank.
    pub fn model(&self) -> u64 {
        self.model.get()
    }
}
