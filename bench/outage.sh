#!/usr/bin/env bash
# Outage drill: the primary answers 502 for the whole run (then, separately,
# hangs); the reserve is healthy; 64 connections. Measures, in one run, the
# reserve called directly and the cascade [primary, reserve] through
# Spillway, and how many requests paid the primary's failure before its
# breaker opened.
#
#   bench/outage.sh      # appends/replaces the outage section of docs/PERFORMANCE.md
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10}
OUT=${OUT:-docs/PERFORMANCE.md}
ulimit -n 65536 2>/dev/null || true
install_tools wrk
cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${CARGO_TARGET_DIR:-target}/release
# start VAR command... : runs the command on a free port and sets VAR to
# it. Not called in `$(...)`: a pid added in a subshell never reaches `pids`.
start() {
  local var=$1 port; shift
  port=$(free_port)
  "$@" --port "$port" >/dev/null 2>&1 &
  pids+=($!)
  wait_port "$port"
  printf -v "$var" '%s' "$port"
}

start RESERVE "$BIN/fake-upstream" --delay-ms "${RESERVE_DELAY_MS:-50}"
start BAD "$BIN/fake-upstream" --status 502
start HUNG "$BIN/fake-upstream" --hang 1
GW=$(free_port)
cat >"$work/gw.yaml" <<YAML
server: { listen: 127.0.0.1:$GW, max_concurrent_requests: 100000 }
providers:
  reserve: { kind: openai, base_url: "http://127.0.0.1:$RESERVE/v1" }
  bad: { kind: openai, base_url: "http://127.0.0.1:$BAD/v1" }
  hung: { kind: openai, base_url: "http://127.0.0.1:$HUNG/v1" }
health:
  breaker: { consecutive_failures: 5, failure_rate: 0.3, min_requests: 10, window: 60s, open_for: 120s }
  timeouts: { connect: 1s, first_token: 1s, idle: 10s, total: 30s }
cascades:
  down: { models: [bad/m, reserve/m] }
  hangs: { models: [hung/m, reserve/m] }
YAML
SPILLWAY_LOG=warn "$BIN/spillway" serve --config "$work/gw.yaml" >"$work/gw.log" 2>&1 &
pids+=($!)
wait_port "$GW"
for m in down hangs reserve; do
  cat >"$work/$m.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"$m","messages":[{"role":"user","content":"Hello?"}]}'
LUA
done
GWURL="http://127.0.0.1:$GW/v1/chat/completions"
# Phase 1 (the outage starts): until the breaker opens, requests pay the primary's failure.
wrk -t2 -c64 -d3s --latency -s "$work/down.lua" "$GWURL" >"$work/down_open.wrk"
wrk -t2 -c64 -d3s --latency --timeout 5s -s "$work/hangs.lua" "$GWURL" >"$work/hangs_open.wrk"
curl -s "http://127.0.0.1:$GW/metrics" >"$work/metrics_open.txt"
# Phase 2 (breakers open, open_for 120s): the reserve direct vs through the cascades.
wrk -t2 -c64 -d"${DURATION}s" --latency -s "$work/reserve.lua" "http://127.0.0.1:$RESERVE/v1/chat/completions" >"$work/direct.wrk"
wrk -t2 -c64 -d"${DURATION}s" --latency -s "$work/down.lua" "$GWURL" >"$work/down.wrk"
wrk -t2 -c64 -d"${DURATION}s" --latency -s "$work/hangs.lua" "$GWURL" >"$work/hangs.wrk"
curl -s "http://127.0.0.1:$GW/metrics" >"$work/metrics.txt"
python3 bench/outage_report.py "$work" "$OUT" "$DURATION"
