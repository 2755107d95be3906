#!/usr/bin/env bash
# User-space instructions the gateway executes per proxied request, counted
# by valgrind's callgrind: repeatable on a shared, noisy machine where
# timings are not, so it is the number to compare before and after a change
# to the request path. (Kernel time is not counted; bench/overhead.sh
# measures the whole cost.)
#
#   bench/instructions.sh                 # prints instructions per request
#   KEEP=1 bench/instructions.sh          # keeps the callgrind profile for callgrind_annotate
#   BIN=/tmp/bins GW_BIN=/tmp/old/spillway bench/instructions.sh  # binaries built already
#   BARE=1 bench/instructions.sh          # the same for bare-proxy (the floor, see overhead.sh)
#   WHOLE_AS_STREAM=false bench/instructions.sh  # whole answers passed through, not read as a stream
#   STREAM=1 bench/instructions.sh        # streamed requests (the upstream's 8-event stream forwarded)
#   STREAM=1 CHUNKS=512 bench/instructions.sh  # a 515-event stream (512 events of 16 bytes of
#                                         # content, as bench/events.sh): also prints instructions per event
#   QUALITY=1 bench/instructions.sh       # the cascade judges its answers' quality (`quality: {}`)
#   TELEMETRY=traces100 bench/instructions.sh  # with telemetry: traces10, traces100 (spans to a local
#                                         # collector, bench/otlp_sink.py), log (request log to a file)
#
# The last line subtracts an idle window of the same length (the process's
# own timers and jobs), so the figure holds on a loaded machine too; the
# line before it is the older window-divided-by-requests figure.
#
# One serving thread (`server.workers: 1`), 4 connections, non-streamed
# requests (streamed with STREAM=1) to an instant local upstream. Installs valgrind and wrk (Debian)
# when missing; listens on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
SECONDS_MEASURED=${SECONDS_MEASURED:-10}
install_tools valgrind wrk
[ -n "${BIN:-}" ] || cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release}
GW_BIN=${GW_BIN:-$BIN/spillway}

UP=$(free_port)
UP_ARGS=()
[ -n "${CHUNKS:-}" ] && UP_ARGS=(--chunks "$CHUNKS" --content-bytes 16)
"$BIN/fake-upstream" --port "$UP" "${UP_ARGS[@]}" >"$work/up.log" 2>&1 &
pids+=($!)
GW=$(free_port)
TELEMETRY_YAML=""
case "${TELEMETRY:-off}" in
  off) ;;
  log) TELEMETRY_YAML="telemetry: { request_log: { path: '$work/requests.jsonl' } }" ;;
  traces10|traces100)
    COLLECTOR=$(free_port)
    python3 bench/otlp_sink.py "$COLLECTOR" >"$work/collector.log" 2>&1 &
    pids+=($!)
    ratio=$([ "$TELEMETRY" = traces10 ] && echo 0.1 || echo 1.0)
    TELEMETRY_YAML="telemetry: { otlp: { endpoint: 'http://127.0.0.1:$COLLECTOR', sample_ratio: $ratio } }" ;;
  *) echo "TELEMETRY: off, log, traces10 or traces100" >&2; exit 2 ;;
esac
cat >"$work/gw.yaml" <<YAML
server: { listen: 127.0.0.1:$GW, max_concurrent_requests: 100000, workers: 1 }
providers:
  fast: { kind: openai, base_url: "http://127.0.0.1:$UP/v1", whole_as_stream: ${WHOLE_AS_STREAM:-true} }
cascades:
  fast: { models: [fast/bench]$([ -n "${QUALITY:-}" ] && echo ", quality: {}") }
$TELEMETRY_YAML
YAML
STREAM_FIELD=""
[ -n "${STREAM:-}" ] && STREAM_FIELD='"stream":true,'
cat >"$work/fast.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"fast",$STREAM_FIELD"messages":[{"role":"user","content":"Hello, how are you today?"}]}'
LUA
if [ -n "${BARE:-}" ]; then
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
    "$BIN/bare-proxy" --port "$GW" --upstream "$UP" >"$work/gw.log" 2>&1 &
else
  SPILLWAY_LOG=error valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
    "$GW_BIN" serve --config "$work/gw.yaml" >"$work/gw.log" 2>&1 &
fi
GW_PID=$!
pids+=($GW_PID)
for _ in $(seq 200); do (echo >"/dev/tcp/127.0.0.1/$GW") 2>/dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$GW/v1/chat/completions"
callgrind_control -i on "$GW_PID" >/dev/null 2>&1
# Warm-up (pools, lazily created series), then dump and discard it.
wrk -t1 -c4 -d3s -s "$work/fast.lua" "$url" >/dev/null
callgrind_control -d "$GW_PID" >/dev/null 2>&1
# The same window with no requests: what the process does on its own
# (timers, background jobs). Subtracted below, so the figure does not depend
# on how many requests a loaded machine manages to send in the window.
sleep "$SECONDS_MEASURED"
callgrind_control -d "$GW_PID" >/dev/null 2>&1
wrk -t1 -c4 -d"${SECONDS_MEASURED}s" -s "$work/fast.lua" "$url" >"$work/wrk.out"
callgrind_control -i off "$GW_PID" >/dev/null 2>&1
callgrind_control -d "$GW_PID" >/dev/null 2>&1
sleep 1
requests=$(awk '/requests in/{print $1}' "$work/wrk.out")
non2xx=$(awk '/Non-2xx/{print $NF}' "$work/wrk.out")
# Each dump holds the counts since the previous one: the newest is the
# measured run, the one before it the idle window.
profile=$(ls -t "$work"/cg.out.* | head -1)
idle_profile=$(ls -t "$work"/cg.out.* | sed -n 2p)
total=$(awk '/^totals:/{print $2; exit}' "$profile")
idle=$(awk '/^totals:/{print $2; exit}' "$idle_profile")
echo "requests: $requests (non-2xx: ${non2xx:-0})"
echo "instructions in the window: $total; idle window of the same length: $idle"
echo "instructions per request (window / requests, as before): $((total / requests))"
echo "instructions per request: $(((total - idle) / requests))"
# The upstream's stream: its first chunk, CHUNKS content chunks, the finish chunk and [DONE].
[ -z "${CHUNKS:-}" ] || echo "instructions per event ($((CHUNKS + 3)) a stream): $(((total - idle) / requests / (CHUNKS + 3)))"
if [ -f "$work/collector.log" ]; then echo "exports received by the collector: $(wc -l <"$work/collector.log")"; fi
if [ -f "$work/requests.jsonl" ]; then echo "request log lines: $(wc -l <"$work/requests.jsonl")"; fi
[ -z "${KEEP:-}" ] || echo "profile: $profile"
