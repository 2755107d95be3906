//! Fair shares: of a free quota, and of a saturated GPU.
//!
//! **A free quota.** When a free model's quota runs low (its last answer's
//! rate-limit headers said less than `fairness.low_quota` is left), the
//! callers above their fair share of the cascade's recent traffic are sent
//! past it — to the next free model, then the paid tier — so that what is
//! left of the quota goes to the callers who used little of it ([`plan`]).
//!
//! **A saturated GPU.** When a self-hosted provider's load profile degrades
//! answers (any profile after its first), the callers at or under their
//! fair share of that provider's recent traffic run one profile lighter
//! than the load calls for — as long as some caller is above its share
//! ([`load_relief`]). The heaviest callers get the lazier profile first;
//! with nobody above their share everyone runs the same one, as without
//! fairness. See [`relieved`] for the rule.
//!
//! A caller is a virtual key's end user, a key, or an end user without keys
//! (the OpenAI `user`, Anthropic `metadata.user_id`, or `x-spillway-user`);
//! requests with no caller are never diverted nor relieved.
//!
//! Shares are counted per instance over `fairness.window` (the quota
//! signal comes from the upstream and the load from the provider's monitor,
//! so every instance reads the same ones; behind a load balancer that
//! spreads callers evenly, each instance's shares are the fleet's).

use crate::cascade::CascadePlan;
use crate::config::{Config, FairnessConfig};
use crate::discovery::DiscoveryState;
use crate::load::LoadRegistry;
use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

/// The most requests remembered per cascade (older ones are forgotten first).
const MAX_REMEMBERED: usize = 200_000;
/// Requests in the window below which a caller is never above its share.
const MIN_HEAVY: u32 = 3;
/// How long a model's quota reading counts.
const QUOTA_FRESH_MS: u64 = 60_000;

/// How often "is any caller above its share" is worked out from scratch
/// (a walk over every caller in the window); in between, a caller found
/// above its share sets it at once.
const ANY_HEAVY_EVERY_MS: u64 = 1_000;

/// Recent requests of one cascade (or loaded provider) by caller.
#[derive(Debug, Default)]
struct Window {
    /// (unix ms, caller) oldest first.
    seen: VecDeque<(u64, u64)>,
    /// Requests per caller in the window.
    counts: HashMap<u64, u32>,
    /// Some caller was above its share at `any_heavy_at` (unix ms), or
    /// has been found so since.
    any_heavy: bool,
    any_heavy_at: Option<u64>,
}

/// Where one caller stands in a window, its own request counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Standing {
    /// The caller is above `over_share` times its fair share.
    pub heavy: bool,
    /// Some caller (this one or another) is above its share.
    pub any_heavy: bool,
}

/// Whether `mine` of `total` requests over `callers` callers is above
/// `over_share` times the fair share. A few requests are never "heavy":
/// one request more than the others in a window is chance, not a pattern.
fn above(mine: u32, total: usize, callers: usize, over_share: f64) -> bool {
    callers >= 2 && mine >= MIN_HEAVY && f64::from(mine) / total as f64 > over_share / callers as f64
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

/// Every cascade's (or loaded provider's) recent callers.
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
        self.standing(cascade, caller, now_ms, cfg).heavy
    }

    /// Counts a request of `caller` to `scope` (a cascade, or a loaded
    /// provider); where the caller stands now, and whether any caller is
    /// above its share.
    pub fn standing(&self, scope: &str, caller: &str, now_ms: u64, cfg: &FairnessConfig) -> Standing {
        let who = caller_hash(caller);
        let window_ms = u64::try_from(cfg.window.as_millis()).unwrap_or(u64::MAX);
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        if !windows.contains_key(scope) {
            windows.insert(scope.to_string(), Window::default());
        }
        let Some(w) = windows.get_mut(scope) else { return Standing::default() };
        w.forget_before(now_ms.saturating_sub(window_ms));
        w.seen.push_back((now_ms, who));
        *w.counts.entry(who).or_insert(0) += 1;
        let (total, callers) = (w.seen.len(), w.counts.len());
        let mine = w.counts.get(&who).copied().unwrap_or(0);
        let heavy = above(mine, total, callers, cfg.over_share);
        if w.any_heavy_at.is_none_or(|at| now_ms >= at.saturating_add(ANY_HEAVY_EVERY_MS)) {
            let most = w.counts.values().copied().max().unwrap_or(0);
            w.any_heavy = above(most, total, callers, cfg.over_share);
            w.any_heavy_at = Some(now_ms);
        }
        w.any_heavy |= heavy;
        Standing { heavy, any_heavy: w.any_heavy }
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

/// The rule of fair degradation: a caller runs one load profile lighter
/// than the load calls for when it is at or under its fair share of the
/// provider's recent traffic while some caller is above its share. The
/// callers above their share run the profile the load calls for, so
/// nobody gets a lazier profile than without fairness; the light callers'
/// longer answers keep the load up, and if it rises on, the monitor moves
/// to the next profile, which the heavy callers get first. With nobody
/// above their share, everyone runs the same profile.
pub fn relieved(standing: Standing) -> bool {
    standing.any_heavy && !standing.heavy
}

/// The loaded providers of `plan` (those with `load:`) on which `caller`
/// is [`relieved`]. Every request with a caller is counted against each
/// loaded provider of its plan, whatever the load, so the shares are known
/// by the time the load rises.
pub fn load_relief(
    shares: &Shares,
    config: &Config,
    load: &LoadRegistry,
    plan: &CascadePlan,
    caller: Option<&str>,
    now_ms: u64,
) -> Vec<String> {
    let cfg = &config.fairness;
    let Some(caller) = caller.filter(|_| cfg.enabled && cfg.load_profiles && !load.providers().is_empty()) else {
        return Vec::new();
    };
    let mut counted: Vec<&str> = Vec::new();
    let mut relief = Vec::new();
    for t in &plan.targets {
        let provider = t.model_ref.provider.as_str();
        if counted.contains(&provider) || load.get(provider).is_none() {
            continue;
        }
        counted.push(provider);
        if relieved(shares.standing(provider, caller, now_ms, cfg)) {
            relief.push(provider.to_string());
        }
    }
    relief
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

    #[test]
    fn light_callers_are_relieved_only_while_someone_is_heavy() {
        let s = Shares::default();
        let cfg = FairnessConfig::default();
        // Ten callers sending alike: nobody is above its share, nobody relieved.
        for round in 0..5u64 {
            for u in 0..10 {
                let st = s.standing("local", &format!("u{u}"), round * 100, &cfg);
                assert_eq!(st, Standing { heavy: false, any_heavy: false }, "round {round}, u{u}");
                assert!(!relieved(st));
            }
        }
        // One caller sends twenty more: it is heavy, the others are relieved.
        for i in 0..20u64 {
            s.standing("local", "big", 600 + i, &cfg);
        }
        let big = s.standing("local", "big", 700, &cfg);
        assert!(big.heavy && big.any_heavy && !relieved(big));
        let small = s.standing("local", "u3", 700, &cfg);
        assert_eq!(small, Standing { heavy: false, any_heavy: true });
        assert!(relieved(small));
        // Another scope counts apart.
        assert!(!s.standing("other", "u3", 700, &cfg).any_heavy);
        // Past the window the heavy caller's burst is forgotten; "anyone
        // heavy" is worked out again at most a second late.
        let later = 700 + 60_001;
        let st = s.standing("local", "u3", later, &cfg);
        assert!(!st.heavy && !st.any_heavy, "{st:?}");
    }

    #[test]
    fn a_heavy_caller_found_between_recounts_is_seen_at_once() {
        let s = Shares::default();
        let cfg = FairnessConfig::default();
        // Any instant but 0, which counts as "before every window".
        const T: u64 = 1_000_000;
        for u in 0..10 {
            s.standing("local", &format!("u{u}"), T, &cfg);
        }
        // All within the same millisecond: no recount, yet the heavy
        // caller's own request marks the window.
        for _ in 0..10 {
            s.standing("local", "big", T, &cfg);
        }
        assert!(relieved(s.standing("local", "u1", T, &cfg)));
    }
}
