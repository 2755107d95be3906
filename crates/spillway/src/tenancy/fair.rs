//! Fair shares of a free quota: when a free model's quota runs low (its
//! last answer's rate-limit headers said less than `fairness.low_quota` is
//! left), the callers above their fair share of the cascade's recent
//! traffic are sent past it — to the next free model, then the paid tier —
//! so that what is left of the quota goes to the callers who used little
//! of it. A caller is a virtual key's end user, a key, or an end user
//! without keys (the OpenAI `user`, Anthropic `metadata.user_id`, or
//! `x-spillway-user`); requests with no caller are never diverted.
//!
//! Shares are counted per instance over `fairness.window` (the quota
//! signal itself comes from the upstream, so every instance sees it).

use crate::cascade::CascadePlan;
use crate::config::{Config, FairnessConfig};
use crate::discovery::DiscoveryState;
use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

/// The most requests remembered per cascade (older ones are forgotten first).
const MAX_REMEMBERED: usize = 200_000;
/// Requests in the window below which a caller is never above its share.
const MIN_HEAVY: u32 = 3;
/// How long a model's quota reading counts.
const QUOTA_FRESH_MS: u64 = 60_000;

/// Recent requests of one cascade by caller.
#[derive(Debug, Default)]
struct Window {
    /// (unix ms, caller) oldest first.
    seen: VecDeque<(u64, u64)>,
    /// Requests per caller in the window.
    counts: HashMap<u64, u32>,
}

impl Window {
    fn forget_before(&mut self, cutoff: u64) {
        while let Some(&(at, who)) = self.seen.front() {
            if at > cutoff && self.seen.len() <= MAX_REMEMBERED {
                break;
            }
            self.seen.pop_front();
            if let Some(n) = self.counts.get_mut(&who) {
                *n -= 1;
                if *n == 0 {
                    self.counts.remove(&who);
                }
            }
        }
    }
}

/// Every cascade's recent callers.
#[derive(Debug, Default)]
pub struct Shares {
    windows: Mutex<HashMap<String, Window>>,
}

fn caller_hash(caller: &str) -> u64 {
    let mut h = DefaultHasher::new();
    caller.hash(&mut h);
    h.finish()
}

impl Shares {
    /// Counts a request of `caller` to `cascade`; whether the caller is now
    /// above `over_share` times its fair share (one over the callers seen).
    pub fn count(&self, cascade: &str, caller: &str, now_ms: u64, cfg: &FairnessConfig) -> bool {
        let who = caller_hash(caller);
        let window_ms = u64::try_from(cfg.window.as_millis()).unwrap_or(u64::MAX);
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        let w = windows.entry(cascade.to_string()).or_default();
        w.forget_before(now_ms.saturating_sub(window_ms));
        w.seen.push_back((now_ms, who));
        *w.counts.entry(who).or_insert(0) += 1;
        let callers = w.counts.len();
        if callers < 2 {
            return false;
        }
        let mine = w.counts.get(&who).copied().unwrap_or(0);
        let total = w.seen.len() as f64;
        // A few requests are never "heavy": one request more than the
        // others in a window is chance, not a pattern.
        mine >= MIN_HEAVY && f64::from(mine) / total > cfg.over_share / callers as f64
    }
}

/// The free targets of `plan` whose quota is low now.
fn low_quota(config: &Config, discovery: &DiscoveryState, plan: &CascadePlan, now_ms: u64) -> Vec<usize> {
    let low = config.fairness.low_quota;
    plan.targets
        .iter()
        .enumerate()
        .filter(|(_, t)| t.health.quota_left(now_ms, QUOTA_FRESH_MS).is_some_and(|q| q < low))
        .filter(|(_, t)| crate::usage::is_free(config, discovery, &t.name))
        .map(|(i, _)| i)
        .collect()
}

/// The plan a request of `caller` runs: `plan` itself, or — when a free
/// model's quota is low and the caller is above its fair share — a copy
/// without the low free models (unless nothing would be left). Every
/// request with a caller is counted.
pub fn plan(
    shares: &Shares,
    config: &Config,
    discovery: &DiscoveryState,
    plan: Arc<CascadePlan>,
    caller: Option<&str>,
    now_ms: u64,
) -> (Arc<CascadePlan>, bool) {
    let cfg = &config.fairness;
    let Some(caller) = caller.filter(|_| cfg.enabled) else { return (plan, false) };
    let heavy = shares.count(&plan.name, caller, now_ms, cfg);
    if !heavy {
        return (plan, false);
    }
    let low = low_quota(config, discovery, &plan, now_ms);
    if low.is_empty() || low.len() == plan.targets.len() {
        return (plan, false);
    }
    let mut fewer = (*plan).clone();
    let mut i = 0;
    fewer.targets.retain(|_| {
        let keep = !low.contains(&i);
        i += 1;
        keep
    });
    (Arc::new(fewer), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_far_above_its_share_is_heavy() {
        let s = Shares::default();
        let cfg = FairnessConfig::default();
        assert!(!s.count("c", "alone", 0, &cfg), "one caller has all of it fairly");
        for i in 0..10 {
            s.count("c", "heavy", i, &cfg);
        }
        for u in 0..9 {
            s.count("c", &format!("light-{u}"), 20, &cfg);
        }
        assert!(s.count("c", "heavy", 30, &cfg));
        assert!(!s.count("c", "light-0", 30, &cfg));
        // Past the window, the history is gone.
        assert!(!s.count("c", "heavy", 200_000, &cfg));
    }
}
