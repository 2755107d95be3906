#!/usr/bin/env bash
# Spillway against the floor, alternating: the bare proxy (`bare-proxy`:
# hyper on both sides, parses and rewrites the JSON, nothing else) and the
# gateway, one run after the other, ROUNDS times, so that the machine's
# drift hits both alike; each round starts with a direct call to the
# upstream. Prints median latency, req/s and the CPU per request of the
# process called (for `direct`, the upstream's) of every run; writes
# nothing.
#
#   bench/floor.sh                       # 1 and 64 connections, instant upstream, 3 rounds of 4 s
#   CONNS="1" ROUNDS=5 bench/floor.sh
#   DELAY_MS=50 CONNS=256 bench/floor.sh # the 50 ms upstream (p99 matters there: printed too)
#
# Installs wrk (Debian) when missing; listens on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-4}
CONNS=${CONNS:-1 64}
DELAY_MS=${DELAY_MS:-0}
install_tools wrk
cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${CARGO_TARGET_DIR:-target}/release

UP=$(free_port); BARE=$(free_port); GW=$(free_port)
"$BIN/fake-upstream" --port "$UP" --delay-ms "$DELAY_MS" >/dev/null 2>&1 &
UP_PID=$!; pids+=($UP_PID)
"$BIN/bare-proxy" --port "$BARE" --upstream "$UP" >/dev/null 2>&1 &
BARE_PID=$!; pids+=($BARE_PID)
cat >"$work/gw.yaml" <<YAML
server: { listen: 127.0.0.1:$GW, max_concurrent_requests: 100000 }
providers:
  up: { kind: openai, base_url: "http://127.0.0.1:$UP/v1" }
cascades:
  bench: { models: [up/bench] }
YAML
SPILLWAY_LOG=warn "$BIN/spillway" serve --config "$work/gw.yaml" >"$work/gw.log" 2>&1 &
GW_PID=$!; pids+=($GW_PID)
for p in "$UP" "$BARE" "$GW"; do wait_port "$p"; done
cat >"$work/req.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"bench","messages":[{"role":"user","content":"Hello, how are you today?"}]}'
LUA

url() { echo "http://127.0.0.1:$1/v1/chat/completions"; }
for c in $CONNS; do
  for p in "$BARE" "$GW"; do wrk -t1 -c"$c" -d2s -s "$work/req.lua" "$(url "$p")" >/dev/null; done
done
run() { # name pid port conns
  local threads=1 t0 t1 out n
  [ "$4" -gt 1 ] && threads=2
  t0=$(awk '{print $14+$15}' "/proc/$2/stat")
  out=$(wrk -t"$threads" -c"$4" -d"${SECS}s" --latency -s "$work/req.lua" "$(url "$3")")
  t1=$(awk '{print $14+$15}' "/proc/$2/stat")
  n=$(echo "$out" | awk '/requests in/{print $1}')
  printf "%-8s %4s conns  p50 %-9s p99 %-9s req/s %-10s CPU/request %s ms\n" "$1" "$4" \
    "$(echo "$out" | awk '/^ +50%/{print $2}')" "$(echo "$out" | awk '/^ +99%/{print $2}')" \
    "$(echo "$out" | awk '/Requests\/sec/{print $2}')" \
    "$(python3 -c "import os; print(round(($t1 - $t0) / os.sysconf('SC_CLK_TCK') * 1000 / $n, 4))")"
}
for i in $(seq "$ROUNDS"); do
  for c in $CONNS; do
    run direct "$UP_PID" "$UP" "$c"
    run bare "$BARE_PID" "$BARE" "$c"
    run spillway "$GW_PID" "$GW" "$c"
  done
done
