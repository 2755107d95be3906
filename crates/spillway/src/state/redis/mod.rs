//! The Redis [`StateStore`] (`state.backend: redis`): several instances
//! share dead marks, breakers, TTFT statistics, counters and the discovery
//! cache, and hear each other's changes within milliseconds.
//!
//! Nothing here is on the request path: the request path reads the local
//! [`crate::health::HealthRegistry`]; [`super::sync`] feeds this store from
//! it and applies what other instances publish. Every key lives under
//! `key_prefix` (`{p}` below) and expires or is bounded:
//!
//! | key | type | bound |
//! |---|---|---|
//! | `{p}dead` | hash key → `until_ms\|reason` | expired fields pruned on each write; TTL = latest mark + 1 min |
//! | `{p}breaker:open` | hash key → `until_ms\|reason` | the same |
//! | `{p}breaker:win:{key}` | hash: ring of `window_s` buckets + `c` | ≤ window_s + 1 fields; TTL window + 1 min |
//! | `{p}ttft` | hash key → recent TTFT samples (ms) | one field per model, its last 32 samples (their median is the statistic); TTL 7 days since the last sample |
//! | `{p}counter:{key}` | integer | TTL given by the caller |
//! | `{p}cache:{key}` | string | TTL given by the caller (discovery `cache_ttl`) |
//! | `{p}changes` | pub/sub channel | not stored |
//! | `{p}handoff:*` | the handoff queue ([`crate::handoff::redis`]) | durable: sorted sets + items, trimmed by `handoff.retention` |
//!
//! Read-modify-writes are Lua scripts ([`scripts`]) that also PUBLISH the
//! change; nothing uses `KEYS` or `SCAN`. Commands go through a
//! [`target::Conn`] (multiplexed, reconnecting); changes arrive on a
//! separate pub/sub connection kept by the [`link::RedisLink`] background
//! job, which also decides whether the store is [`LinkState::Up`]. While
//! it is not, every method fails at once instead of waiting on a dead
//! server, so callers fall back to local state without delay.
//!
//! `redis_url` may name one server, a Sentinel set or a Cluster
//! ([`target`]); on a cluster `{p}` is the prefix in braces, one hash tag
//! for every key above, so each script's keys share a slot.

pub mod link;
mod scripts;
pub mod target;

use super::*;
use ::redis::Script;
use arc_swap::ArcSwapOption;
use std::sync::Arc;
use tokio::sync::{watch, Notify};

/// How long a model's TTFT statistic outlives its last sample.
const TTFT_TTL_MS: u64 = 7 * 24 * 3600 * 1000;

/// Shared state in Redis.
pub struct RedisStore {
    target: target::Target,
    /// What the URL names, for logs (never the URL: it may hold a password).
    address: String,
    prefix: String,
    channel: String,
    /// Set by the link at each connected period (a new one after every
    /// failure, so a Sentinel failover reaches the new master).
    conn: ArcSwapOption<target::Conn>,
    /// The server the link reached last, `host:port`.
    node: std::sync::Mutex<Option<String>>,
    /// A write was refused as `READONLY`: the server turned replica (a
    /// failover); the link reconnects to the master.
    stale: std::sync::atomic::AtomicBool,
    changes: broadcast::Sender<StateChange>,
    link: watch::Sender<LinkState>,
    /// A command failed: the link checks the connection now rather than at
    /// its next tick.
    trouble: Notify,
    mark_dead: Script,
    record_outcome: Script,
    close_breaker: Script,
    revive: Script,
    record_ttft: Script,
    incr: Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").field("address", &self.address).field("prefix", &self.prefix).finish()
    }
}

/// A Redis error as text without the URL or the password.
fn store_err(e: &::redis::RedisError) -> StateError {
    StateError(format!("redis: {:?}: {}", e.kind(), e.detail().unwrap_or("request failed")))
}

impl RedisStore {
    /// A store for `url` (`redis://` or `rediss://`, user and password
    /// allowed; a Sentinel set or a Cluster, see [`target`]) and its link
    /// job, which connects, keeps the subscription and reconnects. Does no
    /// I/O: an unreachable Redis at start is a degraded store, not an
    /// error. Fails only on a malformed URL.
    pub fn new(url: &str, prefix: &str) -> Result<(Arc<Self>, link::RedisLink), StateError> {
        let target = target::Target::open(url).map_err(|e| store_err(&e))?;
        let prefix = target.key_prefix(prefix);
        let (changes, _) = broadcast::channel(4096);
        let (link, _) = watch::channel(LinkState::Connecting);
        let store = Arc::new(Self {
            address: target.hosts().to_string(),
            target,
            channel: format!("{prefix}changes"),
            prefix,
            conn: ArcSwapOption::empty(),
            node: std::sync::Mutex::new(None),
            stale: std::sync::atomic::AtomicBool::new(false),
            changes,
            link,
            trouble: Notify::new(),
            mark_dead: Script::new(&scripts::mark_dead()),
            record_outcome: Script::new(&scripts::record_outcome()),
            close_breaker: Script::new(scripts::CLOSE_BREAKER),
            revive: Script::new(scripts::REVIVE),
            record_ttft: Script::new(scripts::RECORD_TTFT),
            incr: Script::new(scripts::INCR),
        });
        Ok((store.clone(), link::RedisLink::new(store)))
    }

    /// `host:port` of the server (or the Sentinel set, or the cluster's
    /// seed nodes), for logs and the admin view.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The prefix every key is written under: `key_prefix`, in braces on a
    /// cluster (see [`target::Target::key_prefix`]).
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    fn key(&self, part: &str) -> String {
        format!("{}{part}", self.prefix)
    }

    /// The key the link probes (`EXISTS`) to know the store's slot answers.
    fn probe_key(&self) -> String {
        self.key("dead")
    }

    /// The command connection, or an error at once while the link is not up.
    fn conn(&self) -> Result<target::Conn, StateError> {
        if *self.link.borrow() != LinkState::Up {
            return Err(StateError("redis: not connected".into()));
        }
        self.conn.load_full().map(|c| (*c).clone()).ok_or_else(|| StateError("redis: not connected".into()))
    }

    /// Maps a command error, and asks the link to check the connection.
    fn failed(&self, e: &::redis::RedisError) -> StateError {
        if e.kind() == ::redis::ErrorKind::ReadOnly {
            self.stale.store(true, std::sync::atomic::Ordering::Release);
        }
        self.trouble.notify_one();
        store_err(e)
    }

    async fn run<T: ::redis::FromRedisValue>(
        &self,
        invocation: ::redis::ScriptInvocation<'_>,
    ) -> Result<T, StateError> {
        let mut conn = self.conn()?;
        invocation.invoke_async(&mut conn).await.map_err(|e| self.failed(&e))
    }

    /// The keys and arguments of the outcome script (see [`scripts::record_outcome`]).
    fn outcome_args<'i, 'a>(
        &self,
        inv: &'i mut ::redis::ScriptInvocation<'a>,
        key: &str,
        failed: bool,
        now_ms: u64,
        rules: BreakerRules,
    ) -> &'i mut ::redis::ScriptInvocation<'a> {
        inv.key(self.key("breaker:open"))
            .key(self.key(&format!("breaker:win:{key}")))
            .arg(key)
            .arg(u8::from(failed))
            .arg(now_ms)
            .arg(rules.consecutive_failures)
            .arg(rules.failure_rate)
            .arg(rules.min_requests)
            .arg(rules.window.as_secs().max(1))
            .arg(millis(rules.open_for))
            .arg(&self.channel)
    }

    async fn cmd<T: ::redis::FromRedisValue>(&self, cmd: &::redis::Cmd) -> Result<T, StateError> {
        let mut conn = self.conn()?;
        cmd.query_async(&mut conn).await.map_err(|e| self.failed(&e))
    }
}

/// Reads an `until|reason` hash, keeping entries live at `now_ms`.
fn live_entries(all: HashMap<String, String>, now_ms: u64) -> impl Iterator<Item = (String, u64, String)> {
    all.into_iter().filter_map(move |(key, v)| {
        let (until, reason) = v.split_once('|')?;
        let until: u64 = until.parse().ok()?;
        (until > now_ms).then(|| (key, until, reason.to_string()))
    })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl StateStore for RedisStore {
    fn backend(&self) -> &'static str {
        "redis"
    }

    fn mark_dead<'a>(
        &'a self,
        key: &'a str,
        mark: StoredMark,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<StoredMark, StateError>> {
        Box::pin(async move {
            let mut inv = self.mark_dead.prepare_invoke();
            inv.key(self.key("dead")).arg(key).arg(mark.until_ms).arg(&mark.reason).arg(now_ms).arg(&self.channel);
            let (until, reason): (u64, String) = self.run(inv).await?;
            Ok(StoredMark { until_ms: until, reason })
        })
    }

    fn revive<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(async move {
            let mut inv = self.revive.prepare_invoke();
            inv.key(self.key("dead"))
                .key(self.key("breaker:open"))
                .key(self.key(&format!("breaker:win:{key}")))
                .arg(key)
                .arg(&self.channel);
            self.run::<i64>(inv).await.map(drop)
        })
    }

    fn record_outcome<'a>(
        &'a self,
        key: &'a str,
        failed: bool,
        now_ms: u64,
        rules: BreakerRules,
    ) -> BoxFuture<'a, Result<Option<SharedTrip>, StateError>> {
        Box::pin(async move {
            let mut inv = self.record_outcome.prepare_invoke();
            self.outcome_args(&mut inv, key, failed, now_ms, rules);
            let reply: Vec<u32> = self.run(inv).await?;
            Ok(match reply.as_slice() {
                [1, n] => Some(SharedTrip::Consecutive(*n)),
                [2, failures, requests] => Some(SharedTrip::Rate { failures: *failures, requests: *requests }),
                _ => None,
            })
        })
    }

    fn close_breaker<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(async move {
            let mut inv = self.close_breaker.prepare_invoke();
            inv.key(self.key("breaker:open")).arg(key).arg(&self.channel);
            self.run::<i64>(inv).await.map(drop)
        })
    }

    fn snapshot(&self, now_ms: u64) -> BoxFuture<'_, Result<Snapshot, StateError>> {
        Box::pin(async move {
            let mut conn = self.conn()?;
            let (dead, open): (HashMap<String, String>, HashMap<String, String>) = ::redis::pipe()
                .hgetall(self.key("dead"))
                .hgetall(self.key("breaker:open"))
                .query_async(&mut conn)
                .await
                .map_err(|e| self.failed(&e))?;
            Ok(Snapshot {
                dead: live_entries(dead, now_ms)
                    .map(|(k, until_ms, reason)| (k, StoredMark { until_ms, reason }))
                    .collect(),
                open: live_entries(open, now_ms).map(|(k, until, reason)| (k, (until, reason))).collect(),
            })
        })
    }

    fn record_ttft<'a>(&'a self, key: &'a str, ms: f64) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(async move {
            let mut inv = self.record_ttft.prepare_invoke();
            inv.key(self.key("ttft")).arg(key).arg(super::TTFT_WINDOW).arg(TTFT_TTL_MS).arg(ms);
            self.run::<i64>(inv).await.map(drop)
        })
    }

    fn record_ttfts<'a>(&'a self, key: &'a str, samples: &'a [f64]) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(async move {
            let mut inv = self.record_ttft.prepare_invoke();
            inv.key(self.key("ttft")).arg(key).arg(super::TTFT_WINDOW).arg(TTFT_TTL_MS).arg(samples);
            self.run::<i64>(inv).await.map(drop)
        })
    }

    fn record_answers<'a>(
        &'a self,
        key: &'a str,
        n: u32,
        now_ms: u64,
        rules: BreakerRules,
    ) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(async move {
            let mut inv = self.record_outcome.prepare_invoke();
            self.outcome_args(&mut inv, key, false, now_ms, rules).arg(n);
            self.run::<Vec<u32>>(inv).await.map(drop)
        })
    }

    fn ttft_all(&self) -> BoxFuture<'_, Result<HashMap<String, f64>, StateError>> {
        Box::pin(async move {
            let all: HashMap<String, String> = self.cmd(::redis::cmd("HGETALL").arg(self.key("ttft"))).await?;
            let median = |v: &str| super::median(v.split_whitespace().filter_map(|s| s.parse::<f64>().ok()));
            Ok(all.into_iter().filter_map(|(k, v)| Some((k.clone(), median(&v)?))).collect())
        })
    }

    fn incr<'a>(&'a self, key: &'a str, by: u64, ttl: Duration) -> BoxFuture<'a, Result<u64, StateError>> {
        Box::pin(async move {
            let mut inv = self.incr.prepare_invoke();
            inv.key(self.key(&format!("counter:{key}"))).arg(by).arg(millis(ttl));
            self.run(inv).await
        })
    }

    fn counter<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<u64, StateError>> {
        Box::pin(async move {
            let v: Option<u64> = self.cmd(::redis::cmd("GET").arg(self.key(&format!("counter:{key}")))).await?;
            Ok(v.unwrap_or(0))
        })
    }

    fn cache_put<'a>(&'a self, key: &'a str, value: String, ttl: Duration) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(async move {
            let cmd = ::redis::cmd("SET")
                .arg(self.key(&format!("cache:{key}")))
                .arg(value)
                .arg("PX")
                .arg(millis(ttl))
                .clone();
            self.cmd::<()>(&cmd).await
        })
    }

    fn cache_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StateError>> {
        Box::pin(async move { self.cmd(::redis::cmd("GET").arg(self.key(&format!("cache:{key}")))).await })
    }

    fn subscribe(&self) -> broadcast::Receiver<StateChange> {
        self.changes.subscribe()
    }

    fn link(&self) -> Option<watch::Receiver<LinkState>> {
        Some(self.link.subscribe())
    }

    fn node(&self) -> Option<String> {
        self.node.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// Reads a published message back into a change (`None`: not ours).
fn parse_change(text: &str) -> Option<StateChange> {
    let (kind, rest) = text.split_once('\t')?;
    match kind {
        "D" | "O" => {
            let mut parts = rest.splitn(3, '\t');
            let until_ms = parts.next()?.parse().ok()?;
            let reason = parts.next()?.to_string();
            let key = parts.next()?.to_string();
            Some(if kind == "D" {
                StateChange::Dead { key, mark: StoredMark { until_ms, reason } }
            } else {
                StateChange::BreakerOpen { key, until_ms, reason }
            })
        }
        "C" => Some(StateChange::BreakerClosed { key: rest.to_string() }),
        "R" => Some(StateChange::Revived { key: rest.to_string() }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_messages_parse_back() {
        let d = parse_change("D\t1700000000000\trate_limited\topenrouter/google/gemma:free");
        assert_eq!(
            d,
            Some(StateChange::Dead {
                key: "openrouter/google/gemma:free".into(),
                mark: StoredMark { until_ms: 1_700_000_000_000, reason: "rate_limited".into() }
            })
        );
        let o = parse_change("O\t5\t3 consecutive failures\tp/m");
        assert_eq!(
            o,
            Some(StateChange::BreakerOpen { key: "p/m".into(), until_ms: 5, reason: "3 consecutive failures".into() })
        );
        assert_eq!(parse_change("C\tp/m"), Some(StateChange::BreakerClosed { key: "p/m".into() }));
        assert_eq!(parse_change("R\tprovider:groq"), Some(StateChange::Revived { key: "provider:groq".into() }));
        assert_eq!(parse_change("X\tp/m"), None);
        assert_eq!(parse_change("D\tnot-a-number\tr\tk"), None);
    }

    #[test]
    fn the_address_never_holds_the_password() {
        let Ok((store, _link)) = RedisStore::new("redis://user:s3cret@10.0.0.5:6380/2", "t:") else {
            panic!("a valid URL");
        };
        assert_eq!(store.address(), "10.0.0.5:6380");
        assert!(!format!("{store:?}").contains("s3cret"));
    }
}
