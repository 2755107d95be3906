#!/usr/bin/env bash
# Proxy-overhead benchmark: the same calls made directly to a fast local
# upstream and through Spillway, in one run, on this machine.
#
#   bench/overhead.sh            # writes the results table into docs/PERFORMANCE.md
#   DURATION=5 bench/overhead.sh # shorter runs
#   ROUNDS=7 bench/overhead.sh   # more rounds at one connection
#   WHOLE_AS_STREAM=false OUT=/tmp/x.md bench/overhead.sh  # whole answers passed through, not assembled
#
# One connection is the measure most at the mercy of the machine's
# drift, so it runs ROUNDS rounds (default 5) of direct → bare proxy →
# gateway, ROUND_SECS each (default 4), and the table quotes the median of
# the per-round differences with their spread.
#
# A bare proxy (`bare-proxy`: hyper on both sides, parses and rewrites the
# JSON, nothing else) is measured in the same run as the floor for this
# machine. Installs its load generator (wrk, from Debian) when missing. Everything
# listens on 127.0.0.1 only; every run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-5}
ROUND_SECS=${ROUND_SECS:-4}
OUT=${OUT:-docs/PERFORMANCE.md}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

install_tools wrk
cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${CARGO_TARGET_DIR:-target}/release

# Not called in a subshell: its pid must reach `pids`, or cleanup would
# leave the upstream running.
start_upstream() { # var name args... -> sets var to the upstream's port
  local var=$1 name=$2; shift 2
  local port; port=$(free_port)
  "$BIN/fake-upstream" --port "$port" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  printf -v "$var" '%s' "$port"
}

start_upstream UP_FAST fast
UP_FAST_PID=${pids[-1]}
start_upstream UP_SLOW slow --delay-ms 50
start_upstream UP_HOLD hold --chunks 600 --chunk-interval-ms 1000
# The floor: a bare hyper proxy that only parses and rewrites the JSON.
BARE=$(free_port)
"$BIN/bare-proxy" --port "$BARE" --upstream "$UP_FAST" >"$work/bare.log" 2>&1 &
BARE_PID=$!; pids+=($BARE_PID)
BARE_SLOW=$(free_port)
"$BIN/bare-proxy" --port "$BARE_SLOW" --upstream "$UP_SLOW" >"$work/bare-slow.log" 2>&1 &
BARE_SLOW_PID=$!; pids+=($BARE_SLOW_PID)
GW=$(free_port)
cat >"$work/gw.yaml" <<YAML
server: { listen: 127.0.0.1:$GW, max_concurrent_requests: 100000 }
providers:
  fast: { kind: openai, base_url: "http://127.0.0.1:$UP_FAST/v1", whole_as_stream: ${WHOLE_AS_STREAM:-true} }
  slow: { kind: openai, base_url: "http://127.0.0.1:$UP_SLOW/v1", whole_as_stream: ${WHOLE_AS_STREAM:-true} }
  hold: { kind: openai, base_url: "http://127.0.0.1:$UP_HOLD/v1" }
  # The same upstream with whole answers passed through, not read as a
  # stream and assembled: the assembling path's cost is measured against it.
  whole: { kind: openai, base_url: "http://127.0.0.1:$UP_FAST/v1", whole_as_stream: false }
health: { timeouts: { first_token: 30s, idle: 30s, total: 700s } }
cascades:
  fast: { models: [fast/bench] }
  slow: { models: [slow/bench] }
  hold: { models: [hold/bench] }
  whole: { models: [whole/bench] }
YAML
SPILLWAY_LOG=warn "$BIN/spillway" serve --config "$work/gw.yaml" >"$work/gw.log" 2>&1 &
GW_PID=$!; pids+=($GW_PID)
for p in "$UP_FAST" "$UP_SLOW" "$UP_HOLD" "$BARE" "$BARE_SLOW" "$GW"; do wait_port "$p"; done

lua() { # model -> a wrk script posting a chat request
  post_lua "$work/$1.lua" '{"model":"'"$1"'","messages":[{"role":"user","content":"Hello, how are you today?"}]}'
  echo "$work/$1.lua"
}
LUA_FAST=$(lua fast); LUA_SLOW=$(lua slow); LUA_WHOLE=$(lua whole)
cpu_ticks() { awk '{print $14+$15}' "/proc/${CPU_OF:-$GW_PID}/stat"; }
rss_kib() { awk '/VmRSS/{print $2}' "/proc/$GW_PID/status"; }
run_wrk() { # label conns threads url script [secs] -> $work/label.wrk and label.cpu
  local label=$1 c=$2 t=$3 url=$4 script=$5 secs=${6:-$DURATION}
  local before after
  before=$(cpu_ticks)
  wrk -t"$t" -c"$c" -d"${secs}s" --latency -s "$script" "$url" >"$work/$label.wrk"
  after=$(cpu_ticks)
  echo "$((after - before))" >"$work/$label.cpu"
}

# Warm both paths (connection pools, page cache).
wrk -t1 -c8 -d2s -s "$LUA_FAST" "http://127.0.0.1:$GW/v1/chat/completions" >/dev/null
wrk -t1 -c8 -d2s -s "$LUA_WHOLE" "http://127.0.0.1:$GW/v1/chat/completions" >/dev/null
wrk -t1 -c8 -d2s -s "$LUA_FAST" "http://127.0.0.1:$UP_FAST/v1/chat/completions" >/dev/null
wrk -t1 -c8 -d2s -s "$LUA_FAST" "http://127.0.0.1:$BARE/v1/chat/completions" >/dev/null
RSS_IDLE=$(rss_kib)

for r in $(seq "$ROUNDS"); do
  CPU_OF=$UP_FAST_PID run_wrk "direct_c1_r$r" 1 1 "http://127.0.0.1:$UP_FAST/v1/chat/completions" "$LUA_FAST" "$ROUND_SECS"
  CPU_OF=$BARE_PID run_wrk "bare_c1_r$r" 1 1 "http://127.0.0.1:$BARE/v1/chat/completions" "$LUA_FAST" "$ROUND_SECS"
  run_wrk "gw_c1_r$r" 1 1 "http://127.0.0.1:$GW/v1/chat/completions" "$LUA_FAST" "$ROUND_SECS"
done
run_wrk direct_c64 64 2 "http://127.0.0.1:$UP_FAST/v1/chat/completions" "$LUA_FAST"
CPU_OF=$BARE_PID run_wrk bare_c64 64 2 "http://127.0.0.1:$BARE/v1/chat/completions" "$LUA_FAST"
run_wrk gw_c64 64 2 "http://127.0.0.1:$GW/v1/chat/completions" "$LUA_FAST"
run_wrk gw_whole_c64 64 2 "http://127.0.0.1:$GW/v1/chat/completions" "$LUA_WHOLE"
# Warm 256 connections on both paths first: the gateway's upstream pool
# opens its connections on demand, and the steady state is what is measured.
wrk -t2 -c256 -d2s -s "$LUA_SLOW" "http://127.0.0.1:$UP_SLOW/v1/chat/completions" >/dev/null
wrk -t2 -c256 -d2s -s "$LUA_SLOW" "http://127.0.0.1:$GW/v1/chat/completions" >/dev/null
wrk -t2 -c256 -d2s -s "$LUA_SLOW" "http://127.0.0.1:$BARE_SLOW/v1/chat/completions" >/dev/null
run_wrk direct_slow_c256 256 2 "http://127.0.0.1:$UP_SLOW/v1/chat/completions" "$LUA_SLOW"
CPU_OF=$BARE_SLOW_PID run_wrk bare_slow_c256 256 2 "http://127.0.0.1:$BARE_SLOW/v1/chat/completions" "$LUA_SLOW"
run_wrk gw_slow_c256 256 2 "http://127.0.0.1:$GW/v1/chat/completions" "$LUA_SLOW"
"$BIN/bench-client" ttfb "http://127.0.0.1:$UP_FAST/v1/chat/completions" 2000 fast >"$work/direct.ttfb"
"$BIN/bench-client" ttfb "http://127.0.0.1:$GW/v1/chat/completions" 2000 fast >"$work/gw.ttfb"
RSS_AFTER_LOAD=$(rss_kib)

# 1,000 open streams through the gateway (the hold upstream sends a chunk a second).
"$BIN/bench-client" hold "http://127.0.0.1:$GW/v1/chat/completions" 1000 8 hold >"$work/hold.out" 2>&1 &
HOLD=$!
sleep 6
RSS_STREAMS=$(rss_kib)
wait "$HOLD" || true

ROUNDS=$ROUNDS ROUND_SECS=$ROUND_SECS python3 bench/report.py "$work" "$OUT" "$DURATION" "$RSS_IDLE" "$RSS_AFTER_LOAD" "$RSS_STREAMS"
echo "Results written to $OUT"
