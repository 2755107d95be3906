//! The two rules a discovered cascade gets after its cut to `size`: it
//! keeps one paid model when its filters allow paid ones ([`paid`]), and
//! with `preferred_order: price_class` its entries are ordered by price
//! class, preferred models leading theirs ([`by_price_class`]).
//!
//! Both come from the free-model product (incident 000): its author ranks
//! "free first, then the cheapest paid", names a paid model in `preferred`
//! as the *fallback*, and allows paid models up to $0.50/M so that "the
//! cascade is never empty". Preferred-first put that paid fallback at rank
//! 2, ahead of every free model (84 % free instead of 95 %); without it,
//! `size` filled with free models and the overflow went straight to the
//! expensive last resort.

use super::rank::Ranked;
use super::{same_model, CascadeEntry, CascadeSpec, Reason};
use crate::discovery::model::ModelMeta;

/// Known to cost something (an unknown price is not counted as paid here:
/// it cannot pass `max_cost_per_1m`, which is what this rule is about).
fn is_paid(m: &ModelMeta) -> bool {
    !m.free && m.max_price_per_1m().is_some_and(|p| p > 0.0)
}

/// When the cascade allows paid models (`max_cost_per_1m` above 0, not
/// `free_only`) and none made the cut, the best-ranked paid candidate
/// below it replaces the lowest-ranked model that is neither preferred nor
/// needed for `min_other_providers`. Returns the model kept, which goes
/// last; `chosen` loses the model it replaced.
pub(super) fn paid<'a>(
    spec: &CascadeSpec,
    preferred: &[CascadeEntry],
    chosen: &mut Vec<&'a Ranked<'a>>,
    swapped_in: &[&'a Ranked<'a>],
    rest: &'a [Ranked<'a>],
) -> Option<&'a Ranked<'a>> {
    let allows_paid = !spec.filters.free_only && spec.filters.max_cost_per_1m.is_some_and(|max| max > 0.0);
    if !allows_paid {
        return None;
    }
    let placed = || chosen.iter().chain(swapped_in);
    if preferred.iter().any(|e| is_paid(&e.meta)) || placed().any(|r| is_paid(r.meta)) {
        return None;
    }
    let incoming = rest.iter().find(|r| is_paid(r.meta) && !placed().any(|c| same_model(c.meta, r.meta)))?;
    // A model from another provider than the primary may leave only while
    // enough others stay.
    let is_other = |m: &ModelMeta| spec.providers.first().is_some_and(|primary| m.provider != *primary);
    let others = preferred.iter().filter(|e| is_other(&e.meta)).count()
        + placed().filter(|r| is_other(r.meta)).count()
        + usize::from(is_other(incoming.meta));
    let may_leave = |r: &Ranked<'_>| !is_other(r.meta) || others > spec.min_other_providers;
    let out = chosen.iter().rposition(|r| may_leave(r))?;
    chosen.remove(out);
    Some(incoming)
}

/// Orders entries by price class, keeping the order within each: preferred
/// free models, the other free ones, preferred paid ones, the other paid
/// ones (unknown prices count as paid).
pub(super) fn by_price_class(entries: &mut [CascadeEntry]) {
    entries.sort_by_key(|e| (!e.meta.free, !matches!(e.reason, Reason::Preferred { .. })));
}
