#!/usr/bin/env bash
# What virtual keys cost a request: the same gateway build three times, in
# one run, in front of one instant upstream (its whole answers passed
# through, `whole_as_stream: false`, so the request path is all there is):
#
#   - off:   no keys at all;
#   - mem:   a key with rpm/tpm/parallel limits and a daily budget, the
#            memory backend (counted in the process, usage kept in SQLite);
#   - redis: the same key with `state.backend: redis` (one admission script
#            per request; the settlement's runs after the answer).
#
# wrk drives each alternately, ROUNDS times, CONNS connections for SECS
# seconds; each line gives req/s, p50, p99 and the gateway's CPU per
# request (user+system ticks from /proc over requests answered).
#
#   bench/keys.sh
#   BIN=/tmp/bins CONNS=64 ROUNDS=3 SECS=5 bench/keys.sh
#   REDIS_URL=redis://127.0.0.1:6379/0 bench/keys.sh   # the default
#
# Keys on every instance use a unique Redis prefix, deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
CONNS=${CONNS:-64}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
EVENTS=1
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
install_tools wrk
[ -n "${BIN:-}" ] || cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release}
GW_BIN=${GW_BIN:-$BIN/spillway}

UP=$(free_port)
"$BIN/fake-upstream" --port "$UP" >"$work/up.log" 2>&1 &
pids+=($!)
export BENCH_KEY="sk-bench-$RANDOM$RANDOM"
PREFIX="spwbench$RANDOM:"
key_yaml='keys:
  - id: bench
    key: ${BENCH_KEY}
    rpm: 100000000
    tpm: 100000000000
    max_parallel: 100000
    budget: { usd: 1000000, per: day }'
declare -A PORT PID
for mode in off mem redis; do
  PORT[$mode]=$(free_port)
  mkdir -p "$work/$mode"
  {
    echo "server: { listen: 127.0.0.1:${PORT[$mode]}, max_concurrent_requests: 100000, workers: 1 }"
    echo "providers:"
    echo "  up: { kind: openai, base_url: \"http://127.0.0.1:$UP/v1\", whole_as_stream: false }"
    echo "cascades:"
    echo "  bench: { models: [up/bench] }"
    case $mode in
      off) echo "state: { data_dir: $work/$mode }" ;;
      mem) echo "state: { data_dir: $work/$mode }"; echo "$key_yaml" ;;
      redis) echo "state: { backend: redis, redis_url: \"$REDIS_URL\", key_prefix: \"$PREFIX\", data_dir: $work/$mode }"
             echo "$key_yaml" ;;
    esac
  } >"$work/$mode.yaml"
  SPILLWAY_LOG=warn "$GW_BIN" serve --config "$work/$mode.yaml" >"$work/$mode.log" 2>&1 &
  PID[$mode]=$!; pids+=("${PID[$mode]}")
done
for mode in off mem redis; do wait_port "${PORT[$mode]}"; done
cat >"$work/req.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $BENCH_KEY"
wrk.body = '{"model":"bench","messages":[{"role":"user","content":"Hello, how are you today?"}]}'
LUA
for mode in off mem redis; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BENCH_KEY" -H 'Content-Type: application/json' \
    -d '{"model":"bench","messages":[{"role":"user","content":"Hi"}]}' "$(url "${PORT[$mode]}")")
  [ "$code" = 200 ] || { echo "$mode answered $code" >&2; cat "$work/$mode.log" >&2; exit 1; }
  wrk -t2 -c"$CONNS" -d2s -s "$work/req.lua" "$(url "${PORT[$mode]}")" >/dev/null
done
echo "# keys off / memory / Redis; $ROUNDS rounds of ${SECS}s at $CONNS connections; $(nproc) cores"
for _ in $(seq "$ROUNDS"); do
  for mode in off mem redis; do
    run "keys-$mode" "$CONNS" req "${PORT[$mode]}" requests "${PID[$mode]}"
  done
done
redis-cli -u "$REDIS_URL" --scan --pattern "${PREFIX}*" | xargs -r redis-cli -u "$REDIS_URL" del >/dev/null || true
