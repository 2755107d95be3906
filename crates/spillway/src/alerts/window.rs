//! The fallback-share rule: "a tier other than the cascade's first serves
//! more than `fallback_share.above` of its traffic for longer than
//! `fallback_share.for`".
//!
//! The request path counts each answer in [`Traffic`]: a ring of ten
//! buckets per cascade, each a tenth of `for` wide, so the share over the
//! last `for` costs one short lock to record and ten additions to read.
//! [`super::rule::ShareRule`] reads it bucket by bucket ([`Series`]) on the
//! job's tick; a window with fewer than [`MIN_REQUESTS`] answers says
//! nothing.
//!
//! Counters are per instance. With a shared store (`backend: redis`) the
//! [`super::share::ShareJob`] adds each bucket's new answers to shared
//! counters and decides from every instance's totals ([`Traffic::take_unsent`]
//! says what is new); without one, each instance decides from its own.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Buckets per window.
const SLOTS: usize = 10;
/// Fewer answers than this in a window: no share is computed.
pub const MIN_REQUESTS: u64 = 5;

#[derive(Debug, Clone, Default)]
struct Slot {
    /// `now_ms / width_ms` when this bucket was last reset.
    index: u64,
    total: u64,
    fallback: u64,
    /// How much of `total` and `fallback` the shared store has already, so
    /// each answer is added to the shared counters once.
    sent_total: u64,
    sent_fallback: u64,
    /// Fallback answers per model ref (this instance's), for the alert's
    /// "carried by"; a cascade has a handful of models, so a short list.
    carriers: Vec<(String, u64)>,
}

/// Answers of one cascade in one bucket that the shared store has not seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsent {
    /// Cascade name.
    pub cascade: String,
    /// The bucket: `now_ms / width_ms`, the same number on every instance.
    pub index: u64,
    /// New answers.
    pub total: u64,
    /// Of which a later tier served.
    pub fallback: u64,
}

/// One bucket of a cascade's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bucket {
    /// `now_ms / width_ms` of its time, the same on every instance.
    pub index: u64,
    /// Answers.
    pub total: u64,
    /// Of which a later tier served.
    pub fallback: u64,
}

/// A cascade's answers over the window, bucket by bucket (those with
/// answers, in any order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Cascade name.
    pub cascade: String,
    /// Its buckets within the window.
    pub buckets: Vec<Bucket>,
}

impl Series {
    /// The share over the whole window, when it had enough answers.
    pub fn share(&self) -> Option<f64> {
        let (total, fallback) = self.buckets.iter().fold((0, 0), |(t, f), b| (t + b.total, f + b.fallback));
        share(total, fallback)
    }
}

/// A cascade's fallback share, when `total` answers are enough to say.
pub fn share(total: u64, fallback: u64) -> Option<f64> {
    (total >= MIN_REQUESTS).then(|| fallback as f64 / total as f64)
}

#[derive(Debug)]
struct Rings {
    width_ms: u64,
    by_cascade: HashMap<String, [Slot; SLOTS]>,
}

/// Sliding per-cascade counters of answers and fallback answers.
#[derive(Debug, Default)]
pub struct Traffic {
    // None until a dispatcher with a fallback_share rule configures it:
    // without the rule, recording costs nothing.
    inner: Mutex<Option<Rings>>,
}

impl Traffic {
    /// Sets the window (`fallback_share.for`); a changed window starts empty.
    pub fn configure(&self, window: Option<Duration>) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let width_ms = window.map(|w| (u64::try_from(w.as_millis()).unwrap_or(u64::MAX) / SLOTS as u64).max(1));
        match (width_ms, inner.as_ref()) {
            (None, _) => *inner = None,
            (Some(w), Some(r)) if r.width_ms == w => {}
            (Some(w), _) => *inner = Some(Rings { width_ms: w, by_cascade: HashMap::new() }),
        }
    }

    /// Counts one answer of `cascade`; `fallback` when a model other than
    /// the cascade's first served it.
    pub fn record(&self, cascade: &str, fallback: bool, now_ms: u64) {
        self.record_model(cascade, "", fallback, now_ms);
    }

    /// [`Traffic::record`], naming the model ref that answered (`""`: not
    /// named), so the alert can say which models carry the fallback share.
    /// `at_ms` is when the request came in: a request that waited out a
    /// hanging model's first-token deadline fell back when it arrived, not
    /// when its answer came. One whose bucket has left the window is not
    /// counted.
    pub fn record_model(&self, cascade: &str, model: &str, fallback: bool, at_ms: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(rings) = inner.as_mut() else { return };
        let index = at_ms / rings.width_ms;
        let ring = match rings.by_cascade.get_mut(cascade) {
            Some(r) => r,
            None => {
                rings.by_cascade.entry(cascade.to_string()).or_insert_with(|| std::array::from_fn(|_| Slot::default()))
            }
        };
        let slot = &mut ring[(index % SLOTS as u64) as usize];
        if slot.index > index {
            return;
        }
        if slot.index != index {
            *slot = Slot { index, ..Slot::default() };
        }
        slot.total += 1;
        slot.fallback += u64::from(fallback);
        if fallback && !model.is_empty() {
            match slot.carriers.iter_mut().find(|(m, _)| m == model) {
                Some((_, n)) => *n += 1,
                None => slot.carriers.push((model.to_string(), 1)),
            }
        }
    }

    /// The models that carried `cascade`'s fallback answers over the window
    /// on this instance, each with its share of all answers, largest first.
    pub fn carriers(&self, cascade: &str, now_ms: u64) -> Vec<(String, f64)> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(rings) = inner.as_ref() else { return Vec::new() };
        let Some(ring) = rings.by_cascade.get(cascade) else { return Vec::new() };
        let current = now_ms / rings.width_ms;
        let oldest = current.saturating_sub(SLOTS as u64 - 1);
        let mut total = 0;
        let mut counts: Vec<(String, u64)> = Vec::new();
        for slot in ring.iter().filter(|s| s.index >= oldest && s.index <= current) {
            total += slot.total;
            for (model, n) in &slot.carriers {
                match counts.iter_mut().find(|(m, _)| m == model) {
                    Some((_, c)) => *c += n,
                    None => counts.push((model.clone(), *n)),
                }
            }
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        counts.into_iter().map(|(m, n)| (m, n as f64 / total.max(1) as f64)).collect()
    }

    /// Each cascade's fallback share over the window, when it had enough traffic.
    pub fn shares(&self, now_ms: u64) -> Vec<(String, f64)> {
        self.series(now_ms).into_iter().filter_map(|s| s.share().map(|share| (s.cascade, share))).collect()
    }

    /// Each cascade's answers over the window, bucket by bucket.
    pub fn series(&self, now_ms: u64) -> Vec<Series> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(rings) = inner.as_ref() else { return Vec::new() };
        let current = now_ms / rings.width_ms;
        let oldest = current.saturating_sub(SLOTS as u64 - 1);
        rings
            .by_cascade
            .iter()
            .map(|(name, ring)| Series {
                cascade: name.clone(),
                buckets: ring
                    .iter()
                    .filter(|s| s.index >= oldest && s.index <= current && s.total > 0)
                    .map(|s| Bucket { index: s.index, total: s.total, fallback: s.fallback })
                    .collect(),
            })
            .collect()
    }

    /// Bucket width in ms; `None` when no rule is configured.
    pub fn width_ms(&self) -> Option<u64> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(|r| r.width_ms)
    }

    /// Cascades that answered here since the window was configured.
    pub fn cascades(&self) -> Vec<String> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.as_ref().map(|r| r.by_cascade.keys().cloned().collect()).unwrap_or_default()
    }

    /// The answers of buckets still in the window that the shared store has
    /// not seen, marked as seen; hand back what could not be sent with
    /// [`Traffic::restore`].
    pub fn take_unsent(&self, now_ms: u64) -> Vec<Unsent> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(rings) = inner.as_mut() else { return Vec::new() };
        let current = now_ms / rings.width_ms;
        let oldest = current.saturating_sub(SLOTS as u64 - 1);
        let mut out = Vec::new();
        for (name, ring) in &mut rings.by_cascade {
            for slot in ring.iter_mut().filter(|s| s.index >= oldest && s.index <= current) {
                let (total, fallback) = (slot.total - slot.sent_total, slot.fallback - slot.sent_fallback);
                if total > 0 {
                    out.push(Unsent { cascade: name.clone(), index: slot.index, total, fallback });
                    (slot.sent_total, slot.sent_fallback) = (slot.total, slot.fallback);
                }
            }
        }
        out
    }

    /// Marks `unsent` as not sent again (the store failed), unless its
    /// bucket has been reused since.
    pub fn restore(&self, unsent: &Unsent) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(ring) = inner.as_mut().and_then(|r| r.by_cascade.get_mut(&unsent.cascade)) else { return };
        let slot = &mut ring[(unsent.index % SLOTS as u64) as usize];
        if slot.index == unsent.index {
            slot.sent_total = slot.sent_total.saturating_sub(unsent.total);
            slot.sent_fallback = slot.sent_fallback.saturating_sub(unsent.fallback);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsent_answers_are_taken_once_and_restored_on_failure() {
        let t = Traffic::default();
        t.configure(Some(Duration::from_secs(10))); // 1 s buckets
        t.record("chat", true, 5_000);
        t.record("chat", false, 5_500);
        let unsent = t.take_unsent(5_900);
        assert_eq!(unsent, [Unsent { cascade: "chat".into(), index: 5, total: 2, fallback: 1 }]);
        assert!(t.take_unsent(5_900).is_empty());
        t.record("chat", true, 5_950);
        t.restore(&unsent[0]);
        assert_eq!(t.take_unsent(5_990), [Unsent { cascade: "chat".into(), index: 5, total: 3, fallback: 2 }]);
        // A bucket that left the window is never sent.
        t.record("chat", true, 6_000);
        assert!(t.take_unsent(16_000).is_empty());
        assert_eq!(t.width_ms(), Some(1_000));
        assert_eq!(t.cascades(), ["chat"]);
    }

    #[test]
    fn carriers_are_the_fallback_models_largest_first() {
        let t = Traffic::default();
        t.configure(Some(Duration::from_secs(10)));
        for (model, fallback, n) in [("p/a", false, 1), ("p/b", true, 8), ("p/c", true, 1)] {
            (0..n).for_each(|_| t.record_model("chat", model, fallback, 5_000));
        }
        let c = t.carriers("chat", 5_000);
        assert_eq!(c.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>(), ["p/b", "p/c"]);
        assert!((c[0].1 - 0.8).abs() < 1e-9, "{c:?}");
        assert!(t.carriers("chat", 30_000).is_empty(), "out of the window");
    }

    #[test]
    fn series_are_the_buckets_in_the_window() {
        let t = Traffic::default();
        t.configure(Some(Duration::from_secs(10))); // 1 s buckets
        t.record("chat", true, 3_000);
        t.record("chat", false, 3_500);
        t.record("chat", false, 12_100);
        let s = t.series(12_500);
        assert_eq!(s.len(), 1);
        let mut buckets = s[0].buckets.clone();
        buckets.sort_by_key(|b| b.index);
        assert_eq!(buckets, [Bucket { index: 3, total: 2, fallback: 1 }, Bucket { index: 12, total: 1, fallback: 0 }]);
        assert_eq!(s[0].share(), None, "3 answers are too few for a share");
        assert!(t.series(14_000)[0].buckets.iter().all(|b| b.index == 12), "bucket 3 left the window");
    }

    #[test]
    fn unconfigured_traffic_records_nothing() {
        let t = Traffic::default();
        t.record("chat", true, 1);
        assert!(t.shares(1).is_empty());
    }
}
