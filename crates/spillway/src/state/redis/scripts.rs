//! The Lua scripts behind [`super::RedisStore`]: every read-modify-write
//! that two instances could race on runs inside Redis as one script, so it
//! is atomic without WATCH/MULTI retries, and the change is published from
//! the same script (no window where the state changed but nobody heard).
//!
//! Stored values are `until_ms|reason` strings in hashes; published
//! messages are tab-separated with the key last (a key may hold anything
//! but a newline; reasons are labels or our own sentences, tab-free):
//! `D\tuntil\treason\tkey`, `O\tuntil\treason\tkey`, `C\tkey`, `R\tkey`.
//! Integers are formatted with `%.0f`: Lua 5.1 numbers are doubles and
//! `tostring` would switch to exponents above 14 digits.

/// Deletes the expired entries of an `until|reason` hash and sets its TTL
/// to outlive the latest live entry by a minute, so the hash is bounded by
/// the number of live keys and disappears when none is left.
const PRUNE: &str = r"
local function prune(hash, now)
  local all = redis.call('HGETALL', hash)
  local latest = 0
  for i = 1, #all, 2 do
    local v = all[i + 1]
    local u = tonumber(string.sub(v, 1, string.find(v, '|', 1, true) - 1))
    if u <= now then
      redis.call('HDEL', hash, all[i])
    elseif u > latest then
      latest = u
    end
  end
  if latest > 0 then
    redis.call('PEXPIRE', hash, math.floor(latest - now) + 60000)
  end
end
";

/// `KEYS[1]` the dead hash; `ARGV`: key, until_ms, reason, now_ms,
/// channel. A live mark that ends later is kept (marks only extend).
/// Returns `{until, reason}` of the effective mark.
pub fn mark_dead() -> String {
    format!(
        "{PRUNE}{}",
        r"
local key, now = ARGV[1], tonumber(ARGV[4])
local until_ms, reason = tonumber(ARGV[2]), ARGV[3]
local cur = redis.call('HGET', KEYS[1], key)
if cur then
  local sep = string.find(cur, '|', 1, true)
  local cu = tonumber(string.sub(cur, 1, sep - 1))
  if cu > now and cu >= until_ms then
    until_ms, reason = cu, string.sub(cur, sep + 1)
  end
end
local u = string.format('%.0f', until_ms)
redis.call('HSET', KEYS[1], key, u .. '|' .. reason)
prune(KEYS[1], now)
redis.call('PUBLISH', ARGV[5], 'D\t' .. u .. '\t' .. reason .. '\t' .. key)
return {u, reason}
"
    )
}

/// `KEYS[1]` the open-breaker hash, `KEYS[2]` this key's window;
/// `ARGV`: key, failed (0/1), now_ms, consecutive_failures, failure_rate,
/// min_requests, window_s, open_for_ms, channel, and for answers how many
/// in a row (one call for a run of them).
///
/// The window is a ring of `window_s` one-second buckets (field
/// `b{second % window_s}` = `second,ok,failed`), plus the shared count of
/// failures in a row (`c`): bounded by construction, whatever the traffic.
/// Returns `{0}` (no trip), `{1, n}` (n in a row) or `{2, failures,
/// requests}` (rate); only the call that crosses a rule sees the trip,
/// because the trip resets the window and opens the breaker, and an open
/// breaker counts nothing.
pub fn record_outcome() -> String {
    format!(
        "{PRUNE}{}",
        r"
local key, failed, now = ARGV[1], ARGV[2] == '1', tonumber(ARGV[3])
local need_c, rate, min_req = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local window_s, open_for = tonumber(ARGV[7]), tonumber(ARGV[8])
local open = redis.call('HGET', KEYS[1], key)
if open and tonumber(string.sub(open, 1, string.find(open, '|', 1, true) - 1)) > now then
  return {0}
end
local sec = math.floor(now / 1000)
local field = 'b' .. string.format('%.0f', sec % window_s)
local ok_n, fail_n = 0, 0
local cur = redis.call('HGET', KEYS[2], field)
if cur then
  local s, o, f = string.match(cur, '^(%d+),(%d+),(%d+)$')
  if s and tonumber(s) == sec then ok_n, fail_n = tonumber(o), tonumber(f) end
end
if failed then fail_n = fail_n + 1 else ok_n = ok_n + tonumber(ARGV[10] or '1') end
redis.call('HSET', KEYS[2], field, string.format('%.0f', sec) .. ',' .. ok_n .. ',' .. fail_n)
redis.call('PEXPIRE', KEYS[2], (window_s + 60) * 1000)
if not failed then
  redis.call('HSET', KEYS[2], 'c', 0)
  return {0}
end
local c = redis.call('HINCRBY', KEYS[2], 'c', 1)
local reply, reason
if c >= need_c then
  reply, reason = {1, c}, c .. ' consecutive failures'
else
  local all = redis.call('HGETALL', KEYS[2])
  local requests, failures = 0, 0
  for i = 1, #all, 2 do
    if all[i] ~= 'c' then
      local s, o, f = string.match(all[i + 1], '^(%d+),(%d+),(%d+)$')
      if s and tonumber(s) + window_s > sec then
        requests = requests + tonumber(o) + tonumber(f)
        failures = failures + tonumber(f)
      end
    end
  end
  if requests >= min_req and failures / math.max(requests, 1) >= rate then
    reply = {2, failures, requests}
    reason = 'failure rate ' .. failures .. '/' .. requests .. ' over the window'
  end
end
if not reply then return {0} end
local u = string.format('%.0f', now + open_for)
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], key, u .. '|' .. reason)
prune(KEYS[1], now)
redis.call('PUBLISH', ARGV[9], 'O\t' .. u .. '\t' .. reason .. '\t' .. key)
return reply
"
    )
}

/// `KEYS[1]` the open-breaker hash; `ARGV`: key, channel. Publishes only
/// when a breaker was open.
pub const CLOSE_BREAKER: &str = r"
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('PUBLISH', ARGV[2], 'C\t' .. ARGV[1])
end
return 1
";

/// `KEYS`: dead hash, open hash, this key's window; `ARGV`: key, channel.
pub const REVIVE: &str = r"
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
redis.call('PUBLISH', ARGV[2], 'R\t' .. ARGV[1])
return 1
";

/// `KEYS[1]` the TTFT hash; `ARGV`: model key, window, ttl_ms, samples…
/// Each field holds the model's most recent samples (at most `window`,
/// space-separated, oldest first); readers take their median. A field in
/// the earlier single-number form reads as one sample.
pub const RECORD_TTFT: &str = r"
local window = tonumber(ARGV[2])
local samples = {}
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  for s in string.gmatch(old, '%S+') do
    if tonumber(s) then table.insert(samples, s) end
  end
end
for i = 4, #ARGV do
  local ms = tonumber(ARGV[i])
  if ms then table.insert(samples, string.format('%.17g', ms)) end
end
while #samples > window do table.remove(samples, 1) end
if #samples > 0 then redis.call('HSET', KEYS[1], ARGV[1], table.concat(samples, ' ')) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
";

/// `KEYS[1]` the counter; `ARGV`: by, ttl_ms. The TTL is set when the
/// counter is created and kept after (a fixed bucket, like the memory store).
pub const INCR: &str = r"
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v
";
