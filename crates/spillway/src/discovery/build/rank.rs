//! Ranking the qualifying, non-preferred models: free before paid, then the
//! cascade's strategy, then provider order, then listing order. Every entry
//! keeps the key it was ranked by, so an operator can see *why* it is where
//! it is.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::{CascadeEntry, CascadeSpec, Strategy};
use crate::discovery::model::ModelMeta;

/// The value a model was ranked by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum RankKey {
    /// `speed_first`: measured median time-to-first-token.
    Ttft {
        /// Milliseconds.
        ms: f64,
    },
    /// `speed_first`, not measured yet: after every measured model, in
    /// provider order.
    Unmeasured,
    /// `quality_first`: the static `quality` hint (hinted models rank above
    /// the rest, because hint scores and parameter counts are not on one
    /// scale).
    Quality {
        /// The hint.
        score: f64,
    },
    /// `quality_first`: parameter count read from the id or the listing.
    Params {
        /// Billions.
        billions: f64,
    },
    /// `quality_first` with neither hint nor parameter count: by context.
    Context {
        /// Tokens.
        tokens: u32,
    },
    /// `quality_first` with nothing to go by.
    QualityUnknown,
    /// `cheapest_first`: input plus output price.
    Price {
        /// USD per 1M input tokens.
        input: f64,
        /// USD per 1M output tokens.
        output: f64,
    },
    /// `cheapest_first`, price unknown (possible only without
    /// `max_cost_per_1m`): last.
    PriceUnknown,
}

impl fmt::Display for RankKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ttft { ms } => write!(f, "ttft {ms:.0}ms"),
            Self::Unmeasured => f.write_str("ttft unmeasured, provider order"),
            Self::Quality { score } => write!(f, "quality hint {score}"),
            Self::Params { billions } => write!(f, "quality {billions}b"),
            Self::Context { tokens } => write!(f, "context {tokens}"),
            Self::QualityUnknown => f.write_str("quality unknown"),
            Self::Price { input, output } => write!(f, "price ${input}/${output} per 1M"),
            Self::PriceUnknown => f.write_str("price unknown"),
        }
    }
}

/// Why an entry is in its cascade.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// Named in `preferred`; `position` counts from 1 among those placed.
    Preferred {
        /// 1-based.
        position: usize,
    },
    /// Free, ranked among the free ones by `key`.
    Free {
        /// The strategy's key.
        key: RankKey,
    },
    /// Paid, ranked by `key`.
    Ranked {
        /// The strategy's key.
        key: RankKey,
    },
    /// Below the cut, swapped in for a primary-provider model to meet
    /// `min_other_providers`.
    Diversity {
        /// The strategy's key.
        key: RankKey,
    },
    /// Below the cut, kept as the cascade's one paid model: its
    /// `max_cost_per_1m` allows paid models, and free ones filled `size`.
    PaidReserve {
        /// The strategy's key.
        key: RankKey,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Preferred { position } => write!(f, "preferred #{position}"),
            Self::Free { key } => write!(f, "free, by {key}"),
            Self::Ranked { key } => write!(f, "rank by {key}"),
            Self::Diversity { key } => write!(f, "other provider (min_other_providers), by {key}"),
            Self::PaidReserve { key } => write!(f, "paid tier kept (max_cost_per_1m), by {key}"),
        }
    }
}

/// A candidate with its place decided.
pub(super) struct Ranked<'a> {
    pub(super) meta: &'a ModelMeta,
    key: RankKey,
}

impl Ranked<'_> {
    pub(super) fn entry(&self, swapped_for_diversity: bool) -> CascadeEntry {
        let key = self.key;
        let reason = if swapped_for_diversity {
            Reason::Diversity { key }
        } else if self.meta.free {
            Reason::Free { key }
        } else {
            Reason::Ranked { key }
        };
        CascadeEntry { model_ref: self.meta.model_ref(), reason, meta: self.meta.clone() }
    }

    /// The entry of the paid model kept for `max_cost_per_1m`.
    pub(super) fn reserve_entry(&self) -> CascadeEntry {
        CascadeEntry {
            model_ref: self.meta.model_ref(),
            reason: Reason::PaidReserve { key: self.key },
            meta: self.meta.clone(),
        }
    }
}

/// The sort key, computed once per model: sorting compares these, never
/// recomputes them (TTFT look-ups may go through a lock in the caller).
struct SortKey {
    paid: bool,
    /// Within a strategy: 0 best-known … 2 nothing known.
    tier: u8,
    /// Smaller first.
    primary: f64,
    /// Smaller first.
    secondary: f64,
    provider: usize,
    listed: usize,
}

impl SortKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.paid
            .cmp(&other.paid)
            .then(self.tier.cmp(&other.tier))
            .then(self.primary.total_cmp(&other.primary))
            .then(self.secondary.total_cmp(&other.secondary))
            .then(self.provider.cmp(&other.provider))
            .then(self.listed.cmp(&other.listed))
    }
}

/// Orders `candidates` (already filtered, unique, preferred ones removed).
pub(super) fn rank<'a>(
    spec: &CascadeSpec,
    candidates: Vec<&'a ModelMeta>,
    ttft_ms: &dyn Fn(&str) -> Option<f64>,
) -> Vec<Ranked<'a>> {
    // One buffer for the model refs handed to `ttft_ms`, instead of an
    // allocation per model.
    let mut model_ref = String::new();
    let mut keyed: Vec<(SortKey, Ranked<'a>)> = candidates
        .into_iter()
        .enumerate()
        .map(|(listed, meta)| {
            let provider = spec.providers.iter().position(|p| *p == meta.provider).unwrap_or(spec.providers.len());
            let (tier, primary, secondary, key) = strategy_key(spec.strategy, meta, ttft_ms, &mut model_ref);
            let sort = SortKey { paid: !meta.free, tier, primary, secondary, provider, listed };
            (sort, Ranked { meta, key })
        })
        .collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().map(|(_, r)| r).collect()
}

/// `(tier, primary, secondary, shown key)` for one model; larger-is-better
/// values are negated so that every comparison is "smaller first".
fn strategy_key(
    strategy: Strategy,
    m: &ModelMeta,
    ttft_ms: &dyn Fn(&str) -> Option<f64>,
    model_ref: &mut String,
) -> (u8, f64, f64, RankKey) {
    let neg_context = m.context.map_or(f64::INFINITY, |c| -f64::from(c));
    match strategy {
        Strategy::SpeedFirst => {
            model_ref.clear();
            model_ref.push_str(&m.provider);
            model_ref.push('/');
            model_ref.push_str(&m.id);
            match ttft_ms(model_ref).filter(|ms| ms.is_finite() && *ms >= 0.0) {
                Some(ms) => (0, ms, 0.0, RankKey::Ttft { ms }),
                None => (1, 0.0, 0.0, RankKey::Unmeasured),
            }
        }
        Strategy::QualityFirst => match (m.quality.filter(|q| q.is_finite()), m.params_b, m.context) {
            (Some(score), ..) => (0, -score, neg_context, RankKey::Quality { score }),
            (None, Some(billions), _) => (1, -billions, neg_context, RankKey::Params { billions }),
            (None, None, Some(tokens)) => (2, neg_context, 0.0, RankKey::Context { tokens }),
            (None, None, None) => (3, 0.0, 0.0, RankKey::QualityUnknown),
        },
        Strategy::CheapestFirst => match (m.price_in_per_1m, m.price_out_per_1m) {
            (Some(input), Some(output)) => (0, input + output, neg_context, RankKey::Price { input, output }),
            _ => (1, 0.0, neg_context, RankKey::PriceUnknown),
        },
    }
}
