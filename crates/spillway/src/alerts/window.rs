//! The fallback-share rule: "a tier other than the cascade's first serves
//! more than `fallback_share.above` of its traffic for longer than
//! `fallback_share.for`".
//!
//! The request path counts each answer in [`Traffic`]: a ring of ten
//! buckets per cascade, each a tenth of `for` wide, so the share over the
//! last `for` costs one short lock to record and ten additions to read.
//! [`ShareRule`] reads it on the dispatcher's tick: the share must stay
//! above the threshold at every tick for `for` before the alert goes out
//! (so a short burst of fallbacks is not an alert), and a window with fewer
//! than [`MIN_REQUESTS`] answers says nothing.
//!
//! Counters are per instance; with several instances each alerts on its own
//! traffic, which over a shared cascade is the same share.

use super::Event;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Buckets per window.
const SLOTS: usize = 10;
/// Fewer answers than this in a window: no share is computed.
pub const MIN_REQUESTS: u64 = 5;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// `now_ms / width_ms` when this bucket was last reset.
    index: u64,
    total: u64,
    fallback: u64,
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

    /// Counts one answer of `cascade`; `fallback` when a later tier served it.
    pub fn record(&self, cascade: &str, fallback: bool, now_ms: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(rings) = inner.as_mut() else { return };
        let index = now_ms / rings.width_ms;
        let ring = match rings.by_cascade.get_mut(cascade) {
            Some(r) => r,
            None => rings.by_cascade.entry(cascade.to_string()).or_insert([Slot::default(); SLOTS]),
        };
        let slot = &mut ring[(index % SLOTS as u64) as usize];
        if slot.index != index {
            *slot = Slot { index, total: 0, fallback: 0 };
        }
        slot.total += 1;
        slot.fallback += u64::from(fallback);
    }

    /// Each cascade's fallback share over the window, when it had enough traffic.
    pub fn shares(&self, now_ms: u64) -> Vec<(String, f64)> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(rings) = inner.as_ref() else { return Vec::new() };
        let current = now_ms / rings.width_ms;
        let oldest = current.saturating_sub(SLOTS as u64 - 1);
        rings
            .by_cascade
            .iter()
            .filter_map(|(name, ring)| {
                let live = ring.iter().filter(|s| s.index >= oldest && s.index <= current);
                let (total, fallback) = live.fold((0, 0), |(t, f), s| (t + s.total, f + s.fallback));
                (total >= MIN_REQUESTS).then(|| (name.clone(), fallback as f64 / total as f64))
            })
            .collect()
    }
}

/// The rule's memory: since when each cascade has been above the threshold.
#[derive(Debug)]
pub struct ShareRule {
    above: f64,
    for_ms: u64,
    since: HashMap<String, u64>,
}

impl ShareRule {
    /// `fallback_share: {above, for}`.
    pub fn new(above: f64, for_: Duration) -> Self {
        Self { above, for_ms: u64::try_from(for_.as_millis()).unwrap_or(u64::MAX), since: HashMap::new() }
    }

    /// How often to check: a tenth of the window, between 1 s and 1 min.
    pub fn tick(&self) -> Duration {
        Duration::from_millis((self.for_ms / SLOTS as u64).clamp(1_000, 60_000))
    }

    /// Reads the counters; returns an alert for each cascade above the
    /// threshold for `for` (the dispatcher deduplicates repeats).
    pub fn check(&mut self, traffic: &Traffic, now_ms: u64) -> Vec<Event> {
        let shares = traffic.shares(now_ms);
        self.since.retain(|name, _| shares.iter().any(|(n, s)| n == name && *s > self.above));
        let mut alerts = Vec::new();
        for (cascade, share) in shares {
            if share <= self.above {
                continue;
            }
            let since = *self.since.entry(cascade.clone()).or_insert(now_ms);
            if now_ms.saturating_sub(since) >= self.for_ms {
                alerts.push(Event::FallbackShare { cascade, share, since_ms: since });
            }
        }
        alerts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::clock::now_ms;

    fn serve(t: &Traffic, fallbacks: u64, firsts: u64) {
        let now = now_ms();
        (0..fallbacks).for_each(|_| t.record("chat", true, now));
        (0..firsts).for_each(|_| t.record("chat", false, now));
    }

    /// Fallback traffic at 50% for less than `for` is quiet; held for `for`
    /// it alerts; back under the threshold the memory resets.
    #[tokio::test(start_paused = true)]
    async fn share_must_hold_for_the_whole_window() {
        let t = Traffic::default();
        t.configure(Some(Duration::from_secs(600)));
        let mut rule = ShareRule::new(0.2, Duration::from_secs(600));
        assert_eq!(rule.tick(), Duration::from_secs(60));
        for _ in 0..9 {
            serve(&t, 5, 5);
            assert!(rule.check(&t, now_ms()).is_empty());
            tokio::time::advance(rule.tick()).await;
        }
        serve(&t, 5, 5);
        tokio::time::advance(rule.tick()).await;
        let alerts = rule.check(&t, now_ms());
        assert!(
            matches!(&alerts[..], [Event::FallbackShare { cascade, share, .. }] if cascade == "chat" && (*share - 0.5).abs() < 1e-9),
            "{alerts:?}"
        );
        // Recovery: the first tier serves everything for a window.
        for _ in 0..10 {
            serve(&t, 0, 20);
            tokio::time::advance(rule.tick()).await;
        }
        assert!(rule.check(&t, now_ms()).is_empty());
        assert!(rule.since.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_short_burst_or_thin_traffic_is_quiet() {
        let t = Traffic::default();
        t.configure(Some(Duration::from_secs(100)));
        let mut rule = ShareRule::new(0.2, Duration::from_secs(100));
        serve(&t, 4, 0); // below MIN_REQUESTS
        assert!(t.shares(now_ms()).is_empty());
        serve(&t, 10, 0);
        assert!(rule.check(&t, now_ms()).is_empty());
        // The burst ages out of the window before `for` has passed at share > 0.2.
        tokio::time::advance(Duration::from_secs(101)).await;
        serve(&t, 0, 10);
        assert!(rule.check(&t, now_ms()).is_empty());
    }

    #[test]
    fn unconfigured_traffic_records_nothing() {
        let t = Traffic::default();
        t.record("chat", true, 1);
        assert!(t.shares(1).is_empty());
    }
}
