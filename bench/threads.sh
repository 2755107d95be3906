#!/usr/bin/env bash
# How the serving threads share a load: the gateway on its default serving
# threads (`server.workers`: one a CPU), driven by wrk with CONNS (64)
# keep-alive connections of streamed requests to an instant upstream
# (20-event streams), ROUNDS (4) runs of SECS (4) seconds, each run on
# connections of its own. Each run prints req/s, p50, p99 and CPU per
# request, then how the gateway's CPU was split between its serving
# threads (`CPU by serving thread:`): a thread holds a connection for the
# connection's life, so a split that is uneven stays so for the run.
#
#   bench/threads.sh
#   BIN=/tmp/bins GW_BEFORE=/tmp/old/spillway bench/threads.sh   # another build, interleaved (gw0)
#   CONNS=256 DELAY_MS=145 bench/threads.sh                      # an upstream that takes 145 ms an answer
#   STREAM=false bench/threads.sh                                # whole answers (read as streams, assembled)
#
# Installs wrk (Debian) when missing; listens on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
CONNS=${CONNS:-64}
ROUNDS=${ROUNDS:-4}
SECS=${SECS:-4}
EVENTS=23
install_tools wrk
[ -n "${BIN:-}" ] || cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release}
GW_BIN=${GW_BIN:-$BIN/spillway}

UP=$(free_port)
"$BIN/fake-upstream" --port "$UP" --chunks 20 --content-bytes 16 --delay-ms "${DELAY_MS:-0}" >"$work/up.log" 2>&1 &
pids+=($!)
GW=$(free_port)
cat >"$work/gw.yaml" <<YAML
server: { listen: 127.0.0.1:$GW, max_concurrent_requests: 100000 }
providers:
  up: { kind: openai, base_url: "http://127.0.0.1:$UP/v1" }
health: { timeouts: { first_token: 30s, idle: 30s, total: 700s } }
cascades:
  bench: { models: [up/bench] }
YAML
SPILLWAY_LOG=warn "$GW_BIN" serve --config "$work/gw.yaml" >"$work/gw.log" 2>&1 &
GW_PID=$!; pids+=($GW_PID)
names=(gw); ports=("$GW"); gw_pids=("$GW_PID")
if [ -n "${GW_BEFORE:-}" ]; then
  GW0=$(free_port)
  sed "s/127.0.0.1:$GW,/127.0.0.1:$GW0,/" "$work/gw.yaml" >"$work/gw0.yaml"
  SPILLWAY_LOG=warn "$GW_BEFORE" serve --config "$work/gw0.yaml" >"$work/gw0.log" 2>&1 &
  pids+=($!)
  names+=(gw0); ports+=("$GW0"); gw_pids+=("$!")
fi
for p in "$UP" "${ports[@]}"; do wait_port "$p"; done
post_lua "$work/req.lua" '{"model":"bench","stream":'"${STREAM:-true}"',"messages":[{"role":"user","content":"Hello, how are you today?"}]}'

echo "# default serving threads ($(nproc) CPUs), $CONNS connections, ${DELAY_MS:-0} ms upstream, $ROUNDS rounds of ${SECS}s"
for r in $(seq "$ROUNDS"); do
  for i in "${!names[@]}"; do
    before=$(serving_ticks "${gw_pids[$i]}")
    run "${names[$i]}" "$CONNS" req "${ports[$i]}" requests "${gw_pids[$i]}"
    serving_split "$before" "$(serving_ticks "${gw_pids[$i]}")"
  done
done
