#!/usr/bin/env bash
# Soak: mixed traffic for a long time, resident memory sampled every 10 s;
# memory must plateau. Prints the samples' slope after the warm-up and
# writes the samples to $OUT (default bench/soak-rss.csv).
#
#   bench/soak.sh                       # 30 minutes, 8 client threads
#   SOAK_SECONDS=300 bench/soak.sh      # a short run
#
# Traffic (bench/soak_driver.py): whole and streamed chat over mock models
# that fail, cut streams mid-answer (continued by the next model) and rate
# limit; the real HTTP client path against `fake-upstream` (one healthy, one
# answering 500, one that never answers); JSON answers to repair; the
# Responses, Messages and Embeddings entry points; clients that hang up
# mid-stream; requests that end in the handoff queue; and a SIGHUP reload
# (a new config generation) every 60 s. Everything listens on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
SOAK_SECONDS=${SOAK_SECONDS:-1800}
THREADS=${THREADS:-8}
OUT=${OUT:-bench/soak-rss.csv}
cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${CARGO_TARGET_DIR:-target}/release

OK=$(free_port); E500=$(free_port); HANG=$(free_port)
"$BIN/fake-upstream" --port "$OK" --chunks 8 >"$work/ok.log" 2>&1 & pids+=($!)
"$BIN/fake-upstream" --port "$E500" --status 500 >"$work/e500.log" 2>&1 & pids+=($!)
"$BIN/fake-upstream" --port "$HANG" --hang 1 >"$work/hang.log" 2>&1 & pids+=($!)
GW=$(free_port)

config() { # $1: the generation number, written into the handoff reply
cat >"$work/gw.yaml" <<YAML
server: { listen: 127.0.0.1:$GW }
state: { data_dir: "$work/data" }
providers:
  mock:
    kind: mock
    models:
      - { id: steady, behavior: { latency: 20ms, first_token: 30ms, tokens_per_s: 400 } }
      - { id: flaky, behavior: { latency: 10ms, error_rate: 0.3, error_status: 503 } }
      - { id: cutter, behavior: { latency: 10ms, tokens_per_s: 400, cut_rate: 0.3 } }
      - { id: limited, behavior: { latency: 10ms, rate_limit_per_min: 30 } }
      - { id: sloppy, behavior: { latency: 10ms, json: { fenced: 0.3, renamed: 0.2, broken: 0.05 } } }
      - { id: down, behavior: { error_rate: 1.0, error_status: 502 } }
      - { id: vec, dimensions: 64, behavior: { latency: 5ms } }
  ok: { kind: openai, base_url: "http://127.0.0.1:$OK/v1" }
  e500: { kind: openai, base_url: "http://127.0.0.1:$E500/v1" }
  hang: { kind: openai, base_url: "http://127.0.0.1:$HANG/v1" }
health:
  dead_ttl: 20s
  retries: { max: 1, backoff: 20ms }
  timeouts: { connect: 1s, first_token: 1s, idle: 2s, total: 10s }
cascades:
  chat: { models: [mock/limited, mock/flaky, mock/cutter, mock/steady] }
  http: { models: [hang/x, e500/x, ok/x, mock/steady] }
  json: { models: [mock/sloppy, mock/steady] }
  doomed: { models: [mock/down], handoff: true }
  vectors: { kind: embedding, models: [mock/vec] }
handoff: { reply: "generation $1: an operator will answer", retention: 1h }
YAML
}
config 0
"$BIN/spillway" serve --config "$work/gw.yaml" >"$work/gw.log" 2>&1 &
GWPID=$!; pids+=($GWPID)
wait_port "$GW" || { cat "$work/gw.log" >&2; exit 1; }

python3 bench/soak_driver.py --url "http://127.0.0.1:$GW" --seconds "$SOAK_SECONDS" --threads "$THREADS" \
  --pid "$GWPID" --out "$OUT" --reload-cmd "$work/reload.sh" &
DRIVER=$!
cat >"$work/reload.sh" <<SH
#!/usr/bin/env bash
# called by the driver every 60 s with the generation number
$(declare -f config)
work="$work"; GW="$GW"; OK="$OK"; E500="$E500"; HANG="$HANG"
config "\$1"
kill -HUP $GWPID
SH
chmod +x "$work/reload.sh"
wait "$DRIVER"
echo "gateway log: $(grep -c ' ERROR ' "$work/gw.log" || true) ERROR lines, $(grep -c 'panicked' "$work/gw.log" || true) panics"
