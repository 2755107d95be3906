#!/usr/bin/env bash
# Does a discovery refresh move the gateway's p99 latency?
#
#   bench/discovery_p99.sh             # prints both wrk runs and a summary
#   DURATION=10 BIN=target/release bench/discovery_p99.sh
#
# Serves a synthetic 2,000-model OpenRouter listing (python3 http.server),
# a fast chat upstream (fake-upstream), and the gateway with a fixed cascade
# (the one under load) plus three discovered cascades built from the
# listing. Runs wrk twice for DURATION seconds each: once quiet, once while
# `POST /admin/discovery/refresh` runs back to back (a full round: GET and
# parse 2,000 models, build every cascade, swap the plans, write the cache)
# — thousands of times more often than `discovery.interval` ever would.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-20}
BIN=${BIN:-target/release}
CONNS=${CONNS:-64}
install_tools wrk

mkdir -p "$work/listing/v1"
python3 - "$work/listing/v1/models" <<'PY'
import json, random, sys
random.seed(7)
vendors = ["meta-llama", "qwen", "google", "mistralai", "deepseek", "microsoft", "nousresearch", "cohere"]
stems = ["llama-3.3", "qwen3", "gemma-3", "mistral-small", "deepseek-r1", "phi-4", "hermes-3", "command-r"]
sizes = ["8b", "14b", "27b", "32b", "70b", "235b", "405b", "1.5b"]
data = []
for i in range(2000):
    free = random.random() < 0.2
    p = 0 if free else round(random.uniform(0.02, 8), 3) / 1e6
    mid = f"{random.choice(vendors)}/{random.choice(stems)}-{random.choice(sizes)}-v{i}" + (":free" if free else "")
    data.append({"id": mid, "name": mid, "context_length": random.choice([4096, 8192, 32768, 131072]),
                 "pricing": {"prompt": str(p), "completion": str(p * 3)},
                 "architecture": {"input_modalities": ["text"], "output_modalities": ["text"]},
                 "supported_parameters": ["tools", "max_tokens"]})
json.dump({"data": data}, open(sys.argv[1], "w"))
PY
LISTING=$(free_port); UP=$(free_port); GW=$(free_port)
(cd "$work/listing" && exec python3 -m http.server "$LISTING" --bind 127.0.0.1 >"$work/listing.log" 2>&1) &
pids+=($!)
"$BIN/fake-upstream" --port "$UP" >"$work/up.log" 2>&1 &
pids+=($!)
cat >"$work/gw.yaml" <<YAML
server: { listen: 127.0.0.1:$GW, max_concurrent_requests: 100000, admin_token: bench }
state: { data_dir: $work/data }
providers:
  fast: { kind: openai, base_url: "http://127.0.0.1:$UP/v1", models: [ { id: bench } ] }
  or: { kind: openai, base_url: "http://127.0.0.1:$LISTING/v1", discovery: { format: openrouter } }
cascades:
  fast: { models: [fast/bench] }
  cheap: { strategy: cheapest_first, providers: [or], filters: { min_context: 8000, max_cost_per_1m: 1 }, size: 10 }
  smart: { strategy: quality_first, providers: [or], filters: { exclude_patterns: [guard] }, size: 10 }
  quick: { strategy: speed_first, providers: [or], filters: { free_only: true }, size: 10 }
YAML
SPILLWAY_LOG=warn "$BIN/spillway" serve --config "$work/gw.yaml" >"$work/gw.log" 2>&1 &
pids+=($!)
for p in "$LISTING" "$UP" "$GW"; do wait_port "$p"; done
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"fast","messages":[{"role":"user","content":"Hello, how are you today?"}]}'
LUA
URL="http://127.0.0.1:$GW/v1/chat/completions"
refresh() { curl -s -o /dev/null -w '%{time_total}\n' -X POST -H 'Authorization: Bearer bench' "http://127.0.0.1:$GW/admin/discovery/refresh"; }
refresh >/dev/null  # the first round, so both runs start from the same state
wrk -t2 -c"$CONNS" -d2s -s "$work/post.lua" "$URL" >/dev/null  # warm-up

echo "== quiet"
wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency -s "$work/post.lua" "$URL" | tee "$work/quiet.wrk"
# REFRESH_EVERY=0: back to back (the worst case); N: one refresh every N seconds.
REFRESH_EVERY=${REFRESH_EVERY:-0}
echo "== refreshing (every ${REFRESH_EVERY}s; 0 = back to back)"
( end=$((SECONDS + DURATION)); while [ $SECONDS -lt $end ]; do refresh; [ "$REFRESH_EVERY" = 0 ] || sleep "$REFRESH_EVERY"; done ) >"$work/refresh.times" &
REF=$!
wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency -s "$work/post.lua" "$URL" | tee "$work/busy.wrk"
wait "$REF" || true
python3 - "$work/refresh.times" <<'PY'
import statistics, sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
print(f"refresh rounds during the busy run: {len(t)}; median {statistics.median(t)*1000:.1f} ms, max {t[-1]*1000:.1f} ms")
PY
grep -h ' 99%' "$work/quiet.wrk" "$work/busy.wrk" | paste -sd' ' | awk '{print "p99 quiet " $2 ", p99 while refreshing " $4}'
