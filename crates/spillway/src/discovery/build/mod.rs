//! Building one discovered cascade from the models its providers listed,
//! exactly as SPEC §4 "Building a discovered cascade" says.
//!
//! [`build_cascade`] is pure and cheap (well under a millisecond for 2,000
//! models): the refresh job calls it for every cascade after each listing
//! round, and `spillway discover` calls it to print the tables. The order of
//! work: pool → [`check_filters`] → preferred in → free before paid →
//! strategy (`rank`) → cut to `size` → swap for `min_other_providers` →
//! keep one paid model within `max_cost_per_1m` (`reserve`) → order by
//! price class (`preferred_order`).

mod filter;
#[cfg(test)]
mod fixture_tests;
mod rank;
mod reserve;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use filter::{check_filters, Filters, Rejection};
pub use rank::{RankKey, Reason};

use super::model::ModelMeta;

/// How the non-preferred models of a cascade are ordered (after free
/// before paid): the config's own type.
pub use crate::config::Strategy;

/// Where `preferred` models go (first in their price class, or first of
/// all): the config's own type.
pub use crate::config::PreferredOrder;

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown strategy name; says which ones exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown strategy `{0}`; expected one of speed_first, quality_first, cheapest_first")]
pub struct UnknownStrategy(pub String);

impl FromStr for Strategy {
    type Err = UnknownStrategy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::SpeedFirst, Self::QualityFirst, Self::CheapestFirst]
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownStrategy(s.to_owned()))
    }
}

/// The discovery half of one cascade's config, already validated.
#[derive(Debug, Clone, PartialEq)]
pub struct CascadeSpec {
    /// Cascade name (`extraction`), for diffs and notes.
    pub name: String,
    /// How to order what is not preferred.
    pub strategy: Strategy,
    /// Providers whose listed models may be used; the first is the primary
    /// that `min_other_providers` counts against. Empty: every model passed
    /// to [`build_cascade`] is a candidate and there is no primary.
    pub providers: Vec<String>,
    /// Model refs to put first, in this order, when they are listed and
    /// pass the filters; their provider need not be in `providers`.
    pub preferred: Vec<String>,
    /// What a model must satisfy to be in the cascade at all.
    pub filters: Filters,
    /// At most this many entries.
    pub size: usize,
    /// At least this many entries not from the primary provider, when there
    /// are that many candidates.
    pub min_other_providers: usize,
    /// Where the preferred models go.
    pub preferred_order: PreferredOrder,
}

/// One model in a built cascade.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CascadeEntry {
    /// `provider/id`.
    pub model_ref: String,
    /// Why it is here and at this place.
    pub reason: Reason,
    /// What discovery knew about it when the cascade was built.
    pub meta: ModelMeta,
}

/// A built cascade, plus what an operator should know about how it came out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuiltCascade {
    /// In the order the runner tries them.
    pub entries: Vec<CascadeEntry>,
    /// Preferred models that are missing or filtered out (and why), and a
    /// `min_other_providers` that could not be met. One line each, for
    /// `spillway discover` and a WARN log.
    pub notes: Vec<String>,
    /// Models left out that an operator may have meant to be in: every
    /// preferred one, and any of the cascade's providers left out for an
    /// unknown price or context (a WARN: a hint fixes it).
    #[serde(default)]
    pub left_out: Vec<LeftOut>,
}

/// A model a cascade left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    /// `provider/id`.
    pub model_ref: String,
    /// Named in `preferred`.
    pub preferred: bool,
    /// The filter it failed.
    pub why: Rejection,
}

impl LeftOut {
    /// Failed for what the listing did not say (price or context unknown).
    pub fn is_unknown(&self) -> bool {
        self.why.is_unknown()
    }
}

impl fmt::Display for LeftOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let provider = self.model_ref.split_once('/').map_or("", |(p, _)| p);
        let kind = if self.preferred { "preferred " } else { "" };
        write!(f, "{kind}{} is left out: {}", self.model_ref, self.why)?;
        if let Some(fix) = self.why.fix(provider) {
            write!(f, " — {fix}")?;
        }
        Ok(())
    }
}

impl BuiltCascade {
    /// The model refs in order, which is what the runner, the cache and
    /// [`super::diff::diff`] take.
    pub fn model_refs(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.model_ref.clone()).collect()
    }
}

/// Builds one cascade (SPEC §4).
///
/// `models` is everything the providers listed, static hints applied (see
/// [`super::model::apply_hints`]); models of providers not in
/// `spec.providers` are ignored unless preferred. `ttft_ms` gives the
/// runner's measured median time-to-first-token for a model ref, `None`
/// when it has not been measured; only `speed_first` asks.
///
/// Choices SPEC §4 leaves open, made here:
/// - inactive models (Groq `active:false`) and models whose listed output
///   modalities lack `text` never qualify (see [`check_filters`]);
/// - a listed model ref seen twice counts once (the first);
/// - preferred models are never swapped out for `min_other_providers` or
///   cut by `size` before other models: the operator named them, so they
///   outrank the diversity rule — but with `preferred_order: price_class`
///   (the default) they lead their price class rather than the cascade, so
///   a paid model named as the fallback is tried after the free ones;
/// - models swapped in for diversity go after the others of their class,
///   in rank order;
/// - a cascade whose `max_cost_per_1m` allows paid models keeps the best
///   one that qualifies even when free models would fill `size`: it is the
///   cheap tier between the free models and the last resort (a cascade of
///   free models alone sends their overflow straight to the dear one);
/// - ties within a strategy fall back to provider order, then listing order,
///   so the same input always builds the same cascade (no spurious diffs).
pub fn build_cascade(spec: &CascadeSpec, models: &[ModelMeta], ttft_ms: &dyn Fn(&str) -> Option<f64>) -> BuiltCascade {
    let mut notes = Vec::new();
    let mut left_out = Vec::new();
    let patterns = filter::Patterns::new(&spec.filters.exclude_patterns);
    let in_pool = |m: &ModelMeta| spec.providers.is_empty() || spec.providers.contains(&m.provider);

    // Preferred first, in their listed order, when present and passing.
    let mut preferred: Vec<CascadeEntry> = Vec::new();
    for wanted in &spec.preferred {
        let Some(m) = models.iter().find(|m| m.is_ref(wanted)) else {
            notes.push(format!("preferred {wanted} is not listed by its provider"));
            continue;
        };
        if let Err(why) = filter::check(&spec.filters, &patterns, m) {
            let out = LeftOut { model_ref: wanted.clone(), preferred: true, why };
            notes.push(out.to_string());
            left_out.push(out);
            continue;
        }
        if !preferred.iter().any(|e| same_model(&e.meta, m)) {
            let position = preferred.len() + 1;
            preferred.push(CascadeEntry {
                model_ref: wanted.clone(),
                reason: Reason::Preferred { position },
                meta: m.clone(),
            });
        }
    }

    // Everything else that qualifies, ranked: free before paid, then the
    // strategy (see `rank`).
    let mut candidates: Vec<&ModelMeta> = Vec::new();
    for m in models.iter().filter(|m| in_pool(m) && !preferred.iter().any(|e| same_model(&e.meta, m))) {
        match filter::check(&spec.filters, &patterns, m) {
            Ok(()) => candidates.push(m),
            Err(why) if why.is_unknown() && !left_out.iter().any(|l: &LeftOut| l.model_ref == m.model_ref()) => {
                left_out.push(LeftOut { model_ref: m.model_ref(), preferred: false, why });
            }
            Err(_) => {}
        }
    }
    let ranked = rank::rank(spec, candidates, ttft_ms);

    let mut entries = preferred;
    entries.truncate(spec.size);
    let room = spec.size - entries.len();
    // Take the best `room`, skipping a model listed twice. Deduplicating
    // here, among at most `size` picks, is cheaper than hashing every model.
    let mut chosen: Vec<&rank::Ranked<'_>> = Vec::with_capacity(room);
    let mut rest_start = ranked.len();
    for (i, r) in ranked.iter().enumerate() {
        if chosen.len() == room {
            rest_start = i;
            break;
        }
        if !chosen.iter().any(|c| same_model(c.meta, r.meta)) {
            chosen.push(r);
        }
    }
    let rest = ranked.get(rest_start..).unwrap_or_default();

    let swapped_in = swap_for_diversity(spec, &entries, &mut chosen, rest, &mut notes);
    let reserve = reserve::paid(spec, &entries, &mut chosen, &swapped_in, rest);
    entries.extend(chosen.into_iter().map(|r| r.entry(false)));
    entries.extend(swapped_in.into_iter().map(|r| r.entry(true)));
    entries.extend(reserve.map(rank::Ranked::reserve_entry));
    match spec.preferred_order {
        PreferredOrder::PriceClass => reserve::by_price_class(&mut entries),
        PreferredOrder::Strict => notes.extend(paid_ahead_of_free(&entries)),
    }
    BuiltCascade { entries, notes, left_out }
}

/// With `preferred_order: strict`, a paid preferred model ahead of free
/// ones decides what most traffic costs: one line says so.
fn paid_ahead_of_free(entries: &[CascadeEntry]) -> Option<String> {
    // Known to cost something; an unknown price is said elsewhere.
    let is_paid = |e: &CascadeEntry| {
        matches!(e.reason, Reason::Preferred { .. })
            && !e.meta.free
            && e.meta.max_price_per_1m().is_some_and(|p| p > 0.0)
    };
    let paid: Vec<&str> = entries.iter().filter(|e| is_paid(e)).map(|e| e.model_ref.as_str()).collect();
    let first_paid = entries.iter().position(is_paid)?;
    let free_after = entries.iter().skip(first_paid + 1).filter(|e| e.meta.free).count();
    (free_after > 0).then(|| {
        format!(
            "preferred {} {} paid and placed ahead of {free_after} free model(s): most traffic will be paid",
            paid.join(", "),
            if paid.len() == 1 { "is" } else { "are" }
        )
    })
}

pub(super) fn same_model(a: &ModelMeta, b: &ModelMeta) -> bool {
    a.id == b.id && a.provider == b.provider
}

/// Swaps the lowest-ranked non-preferred primary-provider models in `chosen`
/// for the best other-provider models in `rest` until `min_other_providers`
/// hold; returns the models swapped in, in rank order.
fn swap_for_diversity<'a>(
    spec: &CascadeSpec,
    preferred: &[CascadeEntry],
    chosen: &mut Vec<&'a rank::Ranked<'a>>,
    rest: &'a [rank::Ranked<'a>],
    notes: &mut Vec<String>,
) -> Vec<&'a rank::Ranked<'a>> {
    if spec.min_other_providers == 0 {
        return Vec::new();
    }
    let Some(primary) = spec.providers.first() else {
        notes.push("min_other_providers has no effect: the cascade lists no providers".to_owned());
        return Vec::new();
    };
    let is_other = |m: &ModelMeta| m.provider != *primary;
    let have =
        preferred.iter().filter(|e| is_other(&e.meta)).count() + chosen.iter().filter(|r| is_other(r.meta)).count();
    let mut missing = spec.min_other_providers.saturating_sub(have);
    let mut others = rest.iter().filter(|r| is_other(r.meta));
    let mut swapped_in: Vec<&rank::Ranked<'_>> = Vec::new();
    while missing > 0 {
        let Some(out) = chosen.iter().rposition(|r| !is_other(r.meta)) else {
            break;
        };
        let duplicate = |r: &&rank::Ranked<'_>| chosen.iter().chain(&swapped_in).any(|c| same_model(c.meta, r.meta));
        let Some(incoming) = others.by_ref().find(|r| !duplicate(r)) else {
            break;
        };
        chosen.remove(out);
        swapped_in.push(incoming);
        missing -= 1;
    }
    if missing > 0 {
        notes.push(format!(
            "min_other_providers is {} but only {} models from providers other than {primary} could be placed",
            spec.min_other_providers,
            spec.min_other_providers - missing
        ));
    }
    swapped_in
}
