//! The counters in Redis (`state.backend: redis`): every instance admits
//! against the same numbers, atomically, in one round trip — one Lua
//! script per admission and one per settlement. The scripts apply the
//! rules of [`super::tally`] line for line (the same conformance test runs
//! both).
//!
//! Layout: one hash per subject, `{prefix}tenancy:k:{key id}` and
//! `{prefix}tenancy:u:{key id}:{user}` — the prefix is the deployment's
//! hash tag on a cluster, so a key and its users share a slot and one
//! script may touch both. Fields:
//!
//! - `b:{second % 60}` = `second,requests,tokens` (the sliding minute);
//! - `l:{request}` = `expires,usd_micro,tokens,second` (a lease in flight);
//! - `u` = `period,requests,input,output,spent_micro` (the period's usage);
//! - `revoked` on a key's hash: every later admission answers 401, on
//!   every instance, from the next request on.
//!
//! A user's hash expires a minute after its last use or at its period's
//! end, whichever is later; a key's hash is kept (its spend must last).

use super::tally::{Ask, Refusal, Rules, Standing, Usage, Verdict};
use crate::state::lazy_redis::LazyRedis;
use futures_util::FutureExt;
use redis::Script;

/// Reads a subject's hash into locals, dropping what has expired. Shared
/// by both scripts.
const LOAD: &str = r"
local NOW = tonumber(ARGV[1])
local function split(v)
  local out = {}
  for part in string.gmatch(v, '[^,]+') do out[#out + 1] = tonumber(part) end
  return out
end
local function fmt(x) return string.format('%.0f', x) end
local function load(h, period)
  local s = {reqs = 0, toks = 0, oldest = nil, leases = 0, reserved = 0, buckets = {},
             u = {period, 0, 0, 0, 0}}
  local all = redis.call('HGETALL', h)
  local now_s = math.floor(NOW / 1000)
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    local kind = string.sub(f, 1, 2)
    if kind == 'b:' then
      local b = split(v)
      if b[1] + 60 > now_s then
        s.reqs = s.reqs + b[2]
        s.toks = s.toks + b[3]
        if s.oldest == nil or b[1] < s.oldest then s.oldest = b[1] end
        s.buckets[#s.buckets + 1] = b
      else
        redis.call('HDEL', h, f)
      end
    elseif kind == 'l:' then
      local l = split(v)
      if l[1] > NOW then
        s.leases = s.leases + 1
        s.reserved = s.reserved + l[2]
      else
        redis.call('HDEL', h, f)
      end
    elseif f == 'u' then
      local u = split(v)
      if u[1] == period then s.u = u end
    end
  end
  return s
end
";

/// `KEYS[1]` the key's hash, `KEYS[2]` the user's (the key's again when
/// none); `ARGV`: now_ms, request id, tokens, usd_micro, lease_ms, has_user
/// (0/1), then the key's rules and the user's (rpm, tpm, parallel,
/// budget_micro or -1, period, period_end_ms). Returns `{-1}` for a
/// revoked key; `{1, k_req_left, k_req_reset, k_tok_left, k_tok_reset,
/// u_…}` when admitted; `{0, subject, refusal code, retry_ms, req_left,
/// req_reset, tok_left, tok_reset}` when refused.
const ADMIT: &str = r"
local rid, want, usd, lease, has_user = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
if redis.call('HEXISTS', KEYS[1], 'revoked') == 1 then return {-1} end
local function rules(o)
  return {rpm = tonumber(ARGV[o]), tpm = tonumber(ARGV[o + 1]), par = tonumber(ARGV[o + 2]),
          budget = tonumber(ARGV[o + 3]), period = tonumber(ARGV[o + 4]), pend = tonumber(ARGV[o + 5])}
end
local function standing(s, r)
  local reset = 0
  if s.oldest ~= nil then reset = math.max(0, (s.oldest + 60) * 1000 - NOW) end
  return {math.max(0, r.rpm - s.reqs), reset, math.max(0, r.tpm - s.toks), reset}
end
local function check(s, r)
  local st = standing(s, r)
  if r.par > 0 and s.leases >= r.par then return 1, 1000, st end
  if r.rpm > 0 and st[1] == 0 then return 2, math.max(1, st[2]), st end
  local tokens = want
  if r.tpm > 0 and tokens > r.tpm then tokens = r.tpm end
  if r.tpm > 0 and st[3] < tokens then
    table.sort(s.buckets, function(a, b) return a[1] < b[1] end)
    local over = s.toks + tokens - r.tpm
    local wait = 60000
    for _, b in ipairs(s.buckets) do
      over = over - b[3]
      if over <= 0 then wait = math.max(0, (b[1] + 60) * 1000 - NOW) break end
    end
    return 3, math.max(1, wait), st
  end
  if r.budget >= 0 and s.u[5] + s.reserved >= r.budget then
    local retry = 0
    if r.pend > 0 then retry = math.max(0, r.pend - NOW) end
    return 4, retry, st
  end
  return 0, 0, st
end
local function take(h, s, r, st)
  local sec = math.floor(NOW / 1000)
  local tokens = want
  if r.tpm > 0 and tokens > r.tpm then tokens = r.tpm end
  local f = 'b:' .. (sec % 60)
  local cur = redis.call('HGET', h, f)
  local req, tok = 0, 0
  if cur then
    local b = split(cur)
    if b[1] == sec then req, tok = b[2], b[3] end
  end
  redis.call('HSET', h, f, fmt(sec) .. ',' .. fmt(req + 1) .. ',' .. fmt(tok + tokens),
    'l:' .. rid, fmt(NOW + lease) .. ',' .. fmt(usd) .. ',' .. fmt(tokens) .. ',' .. fmt(sec),
    'u', fmt(s.u[1]) .. ',' .. fmt(s.u[2] + 1) .. ',' .. fmt(s.u[3]) .. ',' .. fmt(s.u[4]) .. ',' .. fmt(s.u[5]))
  local reset = st[2]
  if reset == 0 then reset = 60000 end
  return {math.max(0, st[1] - 1), reset, math.max(0, st[3] - tokens), reset}
end
local kr = rules(7)
local ks = load(KEYS[1], kr.period)
local code, retry, st = check(ks, kr)
if code > 0 then return {0, 0, code, retry, st[1], st[2], st[3], st[4]} end
local ur, us, ust
if has_user then
  ur = rules(13)
  us = load(KEYS[2], ur.period)
  local c2, r2, s2 = check(us, ur)
  if c2 > 0 then return {0, 1, c2, r2, s2[1], s2[2], s2[3], s2[4]} end
  ust = s2
end
local a = take(KEYS[1], ks, kr, st)
local b = {0, 0, 0, 0}
if has_user then
  b = take(KEYS[2], us, ur, ust)
  local ttl = math.max(120000, lease + 60000)
  if ur.pend > 0 then ttl = math.max(ttl, ur.pend - NOW + 60000) end
  if ur.budget >= 0 and ur.pend == 0 then
    redis.call('PERSIST', KEYS[2])
  else
    redis.call('PEXPIRE', KEYS[2], ttl)
  end
end
return {1, a[1], a[2], a[3], a[4], b[1], b[2], b[3], b[4]}
";

/// `KEYS` as for [`ADMIT`]; `ARGV`: now_ms, request id, input, output,
/// usd_micro, has_user, key period, user period. Replaces the lease by the
/// real usage: the tokens of its second are corrected, the spend added.
/// Returns the key's spend in the period after it.
const SETTLE: &str = r"
local rid, tin, tout, usd = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local function settle(h, period)
  local s = load(h, period)
  local lease = redis.call('HGET', h, 'l:' .. rid)
  if lease then
    redis.call('HDEL', h, 'l:' .. rid)
    local l = split(lease)
    local f = 'b:' .. (l[4] % 60)
    local cur = redis.call('HGET', h, f)
    if cur then
      local b = split(cur)
      if b[1] == l[4] then
        redis.call('HSET', h, f, fmt(b[1]) .. ',' .. fmt(b[2]) .. ',' .. fmt(math.max(0, b[3] + tin + tout - l[3])))
      end
    end
  end
  local u = s.u
  redis.call('HSET', h, 'u', fmt(u[1]) .. ',' .. fmt(u[2]) .. ',' .. fmt(u[3] + tin) .. ',' .. fmt(u[4] + tout) .. ',' .. fmt(u[5] + usd))
  return u[5] + usd
end
local spent = settle(KEYS[1], tonumber(ARGV[7]))
if ARGV[6] == '1' then settle(KEYS[2], tonumber(ARGV[8])) end
return spent
";

/// `KEYS[1]` a subject's hash; `ARGV`: now_ms, period. Returns `{period,
/// requests, input, output, spent, reserved, in_flight, revoked}`.
const USAGE: &str = r"
local s = load(KEYS[1], tonumber(ARGV[2]))
local revoked = redis.call('HEXISTS', KEYS[1], 'revoked')
return {fmt(s.u[1]), fmt(s.u[2]), fmt(s.u[3]), fmt(s.u[4]), fmt(s.u[5]), fmt(s.reserved), s.leases, revoked}
";

/// The most one admission or settlement waits on Redis before the key's
/// `on_store_down` decides.
pub const ADMIT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(3);

/// The Redis counters.
pub struct RedisTallies {
    redis: LazyRedis,
    prefix: String,
    admit: Script,
    settle: Script,
    usage: Script,
}

impl std::fmt::Debug for RedisTallies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTallies").field("redis", &self.redis).finish()
    }
}

fn rules_args(inv: &mut redis::ScriptInvocation<'_>, r: &Rules) {
    let budget: i64 = if r.budget_micro == u64::MAX { -1 } else { i64::try_from(r.budget_micro).unwrap_or(i64::MAX) };
    inv.arg(r.rpm).arg(r.tpm).arg(r.parallel).arg(budget).arg(r.period).arg(r.period_end_ms);
}

fn standing(v: &[i64]) -> Standing {
    let at = |i: usize| v.get(i).copied().and_then(|x| u64::try_from(x).ok()).unwrap_or(0);
    Standing { requests_left: at(0), requests_reset_ms: at(1), tokens_left: at(2), tokens_reset_ms: at(3) }
}

/// What an admission in Redis answered.
pub enum RedisVerdict {
    /// The key was revoked (on any instance).
    Revoked,
    /// Admitted or refused.
    Verdict(Verdict),
}

impl RedisTallies {
    /// Counters under `prefix` in the Redis of `url`; no I/O until the first call.
    pub fn new(url: &str, prefix: &str) -> Result<Self, String> {
        // Longer than the stores' second: an admission that gives up early
        // is counted on this instance alone, which is what `exact` is not.
        let redis = LazyRedis::new(url)?.with_deadline(ADMIT_DEADLINE);
        Ok(Self {
            prefix: format!("{}tenancy:", redis.key_prefix(prefix)),
            redis,
            admit: Script::new(&format!("{LOAD}{ADMIT}")),
            settle: Script::new(&format!("{LOAD}{SETTLE}")),
            usage: Script::new(&format!("{LOAD}{USAGE}")),
        })
    }

    /// The hash of key `id`.
    pub fn key_hash(&self, id: &str) -> String {
        format!("{}k:{id}", self.prefix)
    }

    /// The hash of `user` of key `id` (the user is bounded and may hold anything).
    pub fn user_hash(&self, id: &str, user: &str) -> String {
        format!("{}u:{id}:{user}", self.prefix)
    }

    /// One admission: one script, one round trip.
    pub async fn admit(
        &self,
        id: &str,
        user: Option<(&str, &Rules)>,
        key: &Rules,
        ask: &Ask,
        rid: &str,
    ) -> Result<RedisVerdict, String> {
        let k = self.key_hash(id);
        let u = user.map_or_else(|| k.clone(), |(name, _)| self.user_hash(id, name));
        let mut inv = self.admit.prepare_invoke();
        inv.key(&k).key(&u);
        inv.arg(ask.now_ms).arg(rid).arg(ask.tokens).arg(ask.usd_micro).arg(ask.lease_ms).arg(u8::from(user.is_some()));
        rules_args(&mut inv, key);
        rules_args(&mut inv, user.map_or(key, |(_, r)| r));
        let v: Vec<i64> = self.redis.call(|mut c| async move { inv.invoke_async(&mut c).await }.boxed()).await?;
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        Ok(match at(0) {
            -1 => RedisVerdict::Revoked,
            1 => RedisVerdict::Verdict(Verdict::Admitted([standing(&v[1..5]), standing(&v[5..9])])),
            _ => RedisVerdict::Verdict(Verdict::Refused {
                subject: u8::try_from(at(1)).unwrap_or(0),
                refusal: Refusal::from_code(u64::try_from(at(2)).unwrap_or(0)).unwrap_or(Refusal::Requests),
                retry_ms: u64::try_from(at(3)).unwrap_or(0),
                standing: standing(v.get(4..8).unwrap_or(&[])),
            }),
        })
    }

    /// Settles a request with its real usage; the key's spend after it (micro-USD).
    pub async fn settle(&self, s: &super::Settlement) -> Result<u64, String> {
        let k = self.key_hash(&s.key_id);
        let u = s.user.as_deref().map_or_else(|| k.clone(), |name| self.user_hash(&s.key_id, name));
        let mut inv = self.settle.prepare_invoke();
        inv.key(&k).key(&u);
        inv.arg(s.now_ms)
            .arg(&s.rid)
            .arg(s.used.input_tokens)
            .arg(s.used.output_tokens)
            .arg(s.used.usd_micro)
            .arg(u8::from(s.user.is_some()))
            .arg(s.periods.0)
            .arg(s.periods.1);
        let spent: i64 = self.redis.call(|mut c| async move { inv.invoke_async(&mut c).await }.boxed()).await?;
        Ok(u64::try_from(spent).unwrap_or(0))
    }

    /// The period's usage of key `id`, and whether it was revoked.
    pub async fn usage(&self, id: &str, now_ms: u64, period: u64) -> Result<(Usage, bool), String> {
        let mut inv = self.usage.prepare_invoke();
        inv.key(self.key_hash(id)).arg(now_ms).arg(period);
        let v: Vec<redis::Value> =
            self.redis.call(|mut c| async move { inv.invoke_async(&mut c).await }.boxed()).await?;
        let at = |i: usize| -> u64 {
            match v.get(i) {
                Some(redis::Value::Int(n)) => u64::try_from(*n).unwrap_or(0),
                Some(redis::Value::BulkString(b)) => {
                    std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
                }
                _ => 0,
            }
        };
        let usage = Usage {
            period: at(0),
            requests: at(1),
            input_tokens: at(2),
            output_tokens: at(3),
            spent_micro: at(4),
            reserved_micro: at(5),
            in_flight: at(6),
        };
        Ok((usage, at(7) == 1))
    }

    /// Marks key `id` revoked (every instance refuses it from its next
    /// admission) or lifts the mark.
    pub async fn set_revoked(&self, id: &str, revoked: bool) -> Result<(), String> {
        let k = self.key_hash(id);
        self.redis
            .call(|mut c| {
                async move {
                    if revoked {
                        redis::cmd("HSET").arg(&k).arg("revoked").arg(1).query_async::<()>(&mut c).await
                    } else {
                        redis::cmd("HDEL").arg(&k).arg("revoked").query_async::<()>(&mut c).await
                    }
                }
                .boxed()
            })
            .await
    }
}
