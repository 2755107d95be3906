//! Who is calling: virtual keys (`keys:` in the config), their limits and
//! budgets, and the reservation each admitted request holds until its
//! answer ends.
//!
//! In the request's life: the server identifies the caller from its key
//! ([`Tenancy::identify`]: 401 for an unknown, revoked or expired key),
//! reads the body, resolves the cascade, and then — before the runner —
//! asks [`Tenancy::admit`] for the request's share: a request slot, the
//! prompt estimate plus the answer's cap in tokens, and the cascade's
//! worst-case price in spend. What is let in holds a [`Tab`]; the meter of
//! a stream (every attempt, continued or cut) or the whole answer's usage
//! adds the real tokens and cost to it, and when the last holder drops it
//! — the answer ended, the client went away, or no model answered — the
//! reservation is replaced by the real usage ([`tally`] says how).
//!
//! With `state.backend: redis` every instance counts in the same Redis
//! hashes, one Lua script per admission ([`redis`]): the limits hold over
//! any number of instances. While Redis cannot be reached a key's
//! `on_store_down` decides: `allow` counts on this instance alone, `deny`
//! refuses (503).

pub mod admit;
pub mod fair;
pub mod kept;
mod pending;
pub mod redis;
pub mod registry;
pub mod store;
pub mod tally;

use crate::config::{BudgetPeriod, KeySpec, Limits, StateBackend, StateConfig};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tally::{Ask, Rules, Tally, Usage, Used, Verdict};

const DAY_MS: u64 = 86_400_000;
/// Past this many tallies in memory, idle per-user ones are dropped.
pub(crate) const MAX_LOCAL_SUBJECTS: usize = 50_000;

/// The budget period of `per` that holds `now_ms`: its number and when it ends (0: never).
pub fn period(per: BudgetPeriod, now_ms: u64) -> (u64, u64) {
    let day = now_ms / DAY_MS;
    match per {
        BudgetPeriod::Day => (day, (day + 1) * DAY_MS),
        BudgetPeriod::Month => {
            let (y, m, _) = crate::health::clock::civil_day(day);
            let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
            (y * 12 + m - 1, crate::config::compile::keys::days_from_civil(ny, nm, 1) * DAY_MS)
        }
        BudgetPeriod::Total => (0, 0),
    }
}

/// The counting rules of `limits` now.
pub fn rules(limits: &Limits, now_ms: u64) -> Rules {
    let per = limits.budget.map_or(BudgetPeriod::Month, |b| b.per);
    let (period, period_end_ms) = period(per, now_ms);
    Rules {
        rpm: limits.rpm.unwrap_or(0),
        tpm: limits.tpm.unwrap_or(0),
        parallel: limits.max_parallel.unwrap_or(0),
        budget_micro: limits.budget.map_or(u64::MAX, |b| usd_micro(b.usd)),
        period,
        period_end_ms,
    }
}

/// USD as whole micro-dollars (rounded up: a reservation never undercounts).
pub fn usd_micro(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        (usd * 1e6).ceil() as u64
    } else {
        0
    }
}

/// The longest end-user name kept; longer ones are cut.
pub const MAX_USER: usize = 128;

/// Why a request was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// A limit: which subject (0 the key, 1 its user), which limit, when to retry.
    Refused { subject: u8, refusal: tally::Refusal, retry_ms: u64, standing: tally::Standing },
    /// The key was revoked on some instance.
    Revoked,
    /// The shared store is down and the key says `on_store_down: deny`.
    StoreDown,
}

/// Counters of every key: in this process, and in Redis when shared.
#[derive(Default)]
pub struct Tenancy {
    /// Subject (`k:{id}`, `u:{id}:{user}`) → its tally: the memory backend,
    /// and every backend's fallback while Redis is down.
    local: Mutex<HashMap<String, Tally>>,
    /// The Redis counters, made on first use with `backend: redis`.
    redis: OnceLock<Option<Arc<redis::RedisTallies>>>,
    /// Unix ms of the last "store down" warning (one a minute).
    warned_ms: AtomicU64,
    /// Admissions decided without Redis (its store down or too slow).
    fallbacks: AtomicU64,
    /// Keys made through the admin API.
    pub registry: registry::Registry,
    /// Callers' recent shares of each cascade, for fair shares of a free quota.
    pub shares: fair::Shares,
    /// Usage kept across restarts with the memory backend ([`kept`]).
    pub kept: kept::Kept,
    /// Callers' recent shares of each provider with `load:`, for fair
    /// degradation (apart from `shares`: a cascade may bear a provider's name).
    pub load_shares: fair::Shares,
}

impl std::fmt::Debug for Tenancy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenancy").field("shared", &self.redis.get().is_some_and(Option::is_some)).finish()
    }
}

/// A subject's key in the local map.
fn subject(id: &str, user: Option<&str>) -> String {
    match user {
        Some(u) => format!("u:{id}:{u}"),
        None => format!("k:{id}"),
    }
}

impl Tenancy {
    /// The Redis counters with `backend: redis` (no I/O until used).
    pub fn shared(&self, state: &StateConfig) -> Option<Arc<redis::RedisTallies>> {
        self.redis
            .get_or_init(|| {
                if state.backend != StateBackend::Redis {
                    return None;
                }
                let url = state.redis_url.as_ref()?;
                match redis::RedisTallies::new(url.expose(), &state.key_prefix) {
                    Ok(r) => Some(Arc::new(r)),
                    Err(e) => {
                        tracing::error!(error = %e, "Cannot use Redis for key limits; counting on this instance.");
                        None
                    }
                }
            })
            .clone()
    }

    fn admit_local(&self, key: &KeySpec, user: Option<&str>, ask: &Ask, rid: &str) -> Verdict {
        let kr = rules(&key.limits, ask.now_ms);
        let ur = rules(&key.per_user, ask.now_ms);
        let mut map = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() > MAX_LOCAL_SUBJECTS {
            map.retain(|k, t| k.starts_with("k:") || !t.idle(ask.now_ms));
        }
        let mut kt = map.remove(&subject(&key.id, None)).unwrap_or_default();
        let verdict = match user {
            Some(u) => {
                let us = subject(&key.id, Some(u));
                let mut ut = map.remove(&us).unwrap_or_default();
                let v = tally::admit((&mut kt, &kr), Some((&mut ut, &ur)), ask, rid);
                map.insert(us, ut);
                v
            }
            None => tally::admit((&mut kt, &kr), None, ask, rid),
        };
        map.insert(subject(&key.id, None), kt);
        verdict
    }

    /// Settles locally; the key's spend in the period after it (micro-USD).
    fn settle_local(&self, s: &Settlement) -> u64 {
        let mut map = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        let key = map.entry(subject(&s.key_id, None)).or_default();
        key.settle(&s.rid, s.now_ms, s.periods.0, s.used);
        let spent = key.usage(s.now_ms, s.periods.0).spent_micro;
        if let Some(u) = &s.user {
            map.entry(subject(&s.key_id, Some(u))).or_default().settle(&s.rid, s.now_ms, s.periods.1, s.used);
        }
        drop(map);
        self.kept.touched(&s.key_id, s.user.as_deref());
        spent
    }

    /// Admits one request of `key` (and its `user`) asking for `ask`.
    pub async fn admit(
        self: &Arc<Self>,
        state: &StateConfig,
        alerts: &Arc<crate::alerts::AlertBus>,
        key: &Arc<KeySpec>,
        user: Option<&str>,
        ask: Ask,
    ) -> Result<(Tab, [tally::Standing; 2]), Denied> {
        let rid = new_rid();
        let now = ask.now_ms;
        let periods = (rules(&key.limits, now).period, rules(&key.per_user, now).period);
        let has_user = user.is_some() && key.per_user.any();
        let user_sub = user.filter(|_| has_user);
        let mut shared = self.shared(state);
        let verdict = match &shared {
            Some(r) => {
                let kr = rules(&key.limits, now);
                let ur = rules(&key.per_user, now);
                let pending = pending::Pending::new(
                    r.clone(),
                    Settlement {
                        key_id: key.id.clone(),
                        user: user_sub.map(str::to_string),
                        rid: rid.clone(),
                        now_ms: now,
                        periods,
                        used: Used::default(),
                    },
                );
                let answer = r.admit(&key.id, user_sub.map(|u| (u, &ur)), &kr, &ask, &rid).await;
                // Not heard back in time: the script may still have run, so
                // the reservation is released (dropped armed).
                if answer.is_ok() {
                    pending.answered();
                } else {
                    drop(pending);
                }
                match answer {
                    Ok(redis::RedisVerdict::Revoked) => return Err(Denied::Revoked),
                    Ok(redis::RedisVerdict::Verdict(v)) => v,
                    Err(e) => {
                        self.fallbacks.fetch_add(1, Ordering::Relaxed);
                        self.warn_down(&e, key);
                        if key.on_store_down == crate::config::StoreDown::Deny {
                            return Err(Denied::StoreDown);
                        }
                        shared = None;
                        self.admit_local(key, user_sub, &ask, &rid)
                    }
                }
            }
            None => self.admit_local(key, user_sub, &ask, &rid),
        };
        match verdict {
            Verdict::Refused { subject, refusal, retry_ms, standing } => {
                Err(Denied::Refused { subject, refusal, retry_ms, standing })
            }
            Verdict::Admitted(standings) => {
                let tab = Tab(Arc::new(TabInner {
                    tenancy: self.clone(),
                    shared,
                    key_id: key.id.clone(),
                    user: user_sub.map(str::to_string),
                    rid,
                    periods,
                    used: Mutex::new(Used::default()),
                    budget: key.limits.budget.map(|b| (b, alerts.clone())),
                }));
                Ok((tab, standings))
            }
        }
    }

    /// Admissions decided without Redis so far (its store down or too slow).
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    fn warn_down(&self, e: &str, key: &KeySpec) {
        let now = crate::health::clock::now_ms();
        let last = self.warned_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= 60_000
            && self.warned_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            tracing::warn!(
                error = %e,
                key = %key.id,
                on_store_down = key.on_store_down.as_str(),
                "Redis cannot be reached for key limits: keys with `on_store_down: allow` are counted on this instance alone, `deny` keys are refused."
            );
        }
    }

    /// The period's usage of `key` (from Redis when shared), and whether it
    /// was revoked there.
    pub async fn usage(&self, state: &StateConfig, key: &KeySpec) -> (Usage, bool) {
        let now = crate::health::clock::now_ms();
        let period = rules(&key.limits, now).period;
        if let Some(r) = self.shared(state) {
            if let Ok(found) = r.usage(&key.id, now, period).await {
                return found;
            }
        }
        let mut map = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        let usage = map
            .get_mut(&subject(&key.id, None))
            .map(|t| t.usage(now, period))
            .unwrap_or(Usage { period, ..Usage::default() });
        (usage, false)
    }
}

/// One admitted request's end: whose, which reservation, when, and what it used.
#[derive(Debug, Clone)]
pub struct Settlement {
    /// The key.
    pub key_id: String,
    /// Its end user, when the user is counted.
    pub user: Option<String>,
    /// The reservation.
    pub rid: String,
    /// Now, Unix ms.
    pub now_ms: u64,
    /// The key's and the user's budget periods.
    pub periods: (u64, u64),
    /// The real usage.
    pub used: Used,
}

/// A reservation id: unique per admission, across instances.
fn new_rid() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// An admitted request's reservation. Clones share it; when the last one
/// drops, the reservation is settled with the usage added to it.
#[derive(Clone)]
pub struct Tab(Arc<TabInner>);

struct TabInner {
    tenancy: Arc<Tenancy>,
    /// The Redis counters it was admitted by; `None`: counted locally.
    shared: Option<Arc<redis::RedisTallies>>,
    key_id: String,
    user: Option<String>,
    rid: String,
    periods: (u64, u64),
    used: Mutex<Used>,
    /// The key's budget and where passing 80 % of it is announced.
    budget: Option<(crate::config::KeyBudget, Arc<crate::alerts::AlertBus>)>,
}

/// The share of a budget past which one alert is raised.
pub const ALERT_SHARE: f64 = 0.8;

/// Raises the key's budget alert when this settlement took its spend from
/// under [`ALERT_SHARE`] of the budget to at or over it.
fn budget_alert(
    budget: Option<&(crate::config::KeyBudget, Arc<crate::alerts::AlertBus>)>,
    s: &Settlement,
    spent_after: u64,
) {
    let Some((b, bus)) = budget else { return };
    let (id, period, used) = (&s.key_id, s.periods.0, s.used.usd_micro);
    let limit = usd_micro(b.usd) as f64;
    let before = spent_after.saturating_sub(used) as f64;
    if limit > 0.0 && before < limit * ALERT_SHARE && spent_after as f64 >= limit * ALERT_SHARE {
        bus.publish(crate::alerts::Event::KeyBudget {
            key: id.to_string(),
            spent_usd: spent_after as f64 / 1e6,
            limit_usd: b.usd,
            per: b.per.as_str().to_string(),
            period,
        });
    }
}

impl Tab {
    /// Adds one attempt's real usage.
    pub fn add(&self, input_tokens: u64, output_tokens: u64, usd: f64) {
        let mut used = self.0.used.lock().unwrap_or_else(PoisonError::into_inner);
        used.input_tokens += input_tokens;
        used.output_tokens += output_tokens;
        used.usd_micro += usd_micro(usd);
    }

    /// The key it belongs to.
    pub fn key_id(&self) -> &str {
        &self.0.key_id
    }
}

impl Drop for TabInner {
    fn drop(&mut self) {
        let s = Settlement {
            key_id: self.key_id.clone(),
            user: self.user.take(),
            rid: std::mem::take(&mut self.rid),
            now_ms: crate::health::clock::now_ms(),
            periods: self.periods,
            used: *self.used.lock().unwrap_or_else(PoisonError::into_inner),
        };
        let budget = self.budget.take();
        let Some(shared) = self.shared.take() else {
            let spent = self.tenancy.settle_local(&s);
            budget_alert(budget.as_ref(), &s, spent);
            return;
        };
        let tenancy = self.tenancy.clone();
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        // One short script (bounded by the store's call deadline) that must
        // outlive the request it settles: a supervised job would add a
        // queue for nothing.
        #[allow(clippy::disallowed_methods)]
        rt.spawn(async move {
            let spent = match shared.settle(&s).await {
                Ok(spent) => spent,
                Err(e) => {
                    tracing::warn!(error = %e, key = %s.key_id, "Cannot settle a request's reservation in Redis; its lease ends it.");
                    // The spend is kept here at least, so `/admin/keys` on this instance shows it.
                    tenancy.settle_local(&s)
                }
            };
            budget_alert(budget.as_ref(), &s, spent);
        });
    }
}
