#!/usr/bin/env bash
# What the request log and traces cost: four gateways on one fast local
# upstream, the same config but `telemetry:` — off, traces at 10 % and at
# 100 % sampling (exported to a local collector that takes every batch),
# and the request log to a file — measured in alternating rounds so the
# machine's drift hits each alike. Prints a markdown table (medians of the
# rounds: requests/s at 16 connections, p50 and p99 at one connection,
# the gateway's CPU per request) and the spans and lines each produced.
#
#   bench/tracing.sh                 # ROUNDS=5 ROUND_SECS=4
#   ROUNDS=3 ROUND_SECS=3 bench/tracing.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
ROUNDS=${ROUNDS:-5}
ROUND_SECS=${ROUND_SECS:-4}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

install_tools wrk
cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${CARGO_TARGET_DIR:-target}/release

UP=$(free_port)
"$BIN/fake-upstream" --port "$UP" >"$work/up.log" 2>&1 &
pids+=($!)
# A collector that reads each export and answers 200 (counting spans'
# bytes, not decoding them: its CPU is not the gateway's).
COLLECTOR=$(free_port)
python3 bench/otlp_sink.py "$COLLECTOR" >"$work/collector.log" 2>&1 &
pids+=($!)

declare -A PORT PID
start_gw() { # name telemetry-yaml
  local name=$1 port; port=$(free_port)
  cat >"$work/$name.yaml" <<YAML
server: { listen: 127.0.0.1:$port, max_concurrent_requests: 100000 }
providers:
  fast: { kind: openai, base_url: "http://127.0.0.1:$UP/v1" }
cascades:
  fast: { models: [fast/bench] }
$2
YAML
  SPILLWAY_LOG=warn "$BIN/spillway" serve --config "$work/$name.yaml" >"$work/$name.log" 2>&1 &
  PID[$name]=$!; pids+=($!); PORT[$name]=$port
}
start_gw off ""
start_gw traces10 "telemetry: { otlp: { endpoint: 'http://127.0.0.1:$COLLECTOR', sample_ratio: 0.1 } }"
start_gw traces100 "telemetry: { otlp: { endpoint: 'http://127.0.0.1:$COLLECTOR', sample_ratio: 1.0 } }"
start_gw log "telemetry: { request_log: { path: '$work/requests.jsonl' } }"
NAMES=(off traces10 traces100 log)
wait_port "$UP"; wait_port "$COLLECTOR"
for n in "${NAMES[@]}"; do wait_port "${PORT[$n]}"; done

cat >"$work/fast.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"fast","messages":[{"role":"user","content":"Hello, how are you today?"}]}'
LUA
url() { echo "http://127.0.0.1:${PORT[$1]}/v1/chat/completions"; }
ticks() { awk '{print $14+$15}' "/proc/${PID[$1]}/stat"; }
for n in "${NAMES[@]}"; do wrk -t1 -c8 -d2s -s "$work/fast.lua" "$(url "$n")" >/dev/null; done

for r in $(seq "$ROUNDS"); do
  for n in "${NAMES[@]}"; do
    wrk -t1 -c1 -d"${ROUND_SECS}s" --latency -s "$work/fast.lua" "$(url "$n")" >"$work/$n.c1.$r"
    before=$(ticks "$n")
    wrk -t2 -c16 -d"${ROUND_SECS}s" --latency -s "$work/fast.lua" "$(url "$n")" >"$work/$n.c16.$r"
    echo "$(( $(ticks "$n") - before ))" >"$work/$n.cpu.$r"
  done
done
sleep 2 # the last batches and lines
python3 - "$work" "$ROUNDS" "${NAMES[@]}" <<'PY'
import os, re, statistics, sys
work, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
tck = os.sysconf("SC_CLK_TCK")
def us(t):
    v, u = re.match(r"([\d.]+)(us|ms|s)", t).groups()
    return float(v) * {"us": 1, "ms": 1e3, "s": 1e6}[u]
def wrk(path):
    t = open(path).read()
    pct = dict(re.findall(r"\s+(50|99)%\s+(\S+)", t))
    return float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1)), int(re.search(r"(\d+) requests in", t).group(1)), us(pct["50"]), us(pct["99"])
label = {"off": "telemetry off", "traces10": "traces, 10 % sampled", "traces100": "traces, 100 % sampled", "log": "request log (file)"}
print("| gateway | req/s at 16 conns | p50 at 1 conn | p99 at 1 conn | CPU per request |")
print("|---|---|---|---|---|")
for n in names:
    c16 = [wrk(f"{work}/{n}.c16.{r}") for r in range(1, rounds + 1)]
    c1 = [wrk(f"{work}/{n}.c1.{r}") for r in range(1, rounds + 1)]
    cpu = [int(open(f"{work}/{n}.cpu.{r}").read()) / tck / max(1, c[1]) * 1e6 for r, c in zip(range(1, rounds + 1), c16)]
    med = statistics.median
    print(f"| {label[n]} | {med(x[0] for x in c16):,.0f} | {med(x[2] for x in c1):.0f} µs | {med(x[3] for x in c1):.0f} µs | {med(cpu):.0f} µs |")
exports = [int(l) for l in open(f"{work}/collector.log") if l.strip().isdigit()]
lines = sum(1 for _ in open(f"{work}/requests.jsonl")) if os.path.exists(f"{work}/requests.jsonl") else 0
print(f"\nCollector: {len(exports)} exports, {sum(exports):,} bytes; request log: {lines:,} lines.")
PY
for n in traces10 traces100 log; do
  curl -s "http://127.0.0.1:${PORT[$n]}/metrics" | grep -E '^spillway_telemetry_(dropped|export_failures)_total' | sed "s/^/$n: /" || true
done
