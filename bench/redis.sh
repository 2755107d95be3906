#!/usr/bin/env bash
# Shared state on Redis: what it costs and how fast it spreads.
#
#   bench/redis.sh                       # prints the tables (docs/PERFORMANCE.md's Redis section quotes them)
#   DURATION=10 ROUNDS=3 CONNS=32 bench/redis.sh
#
# One run, one machine, release binaries: a fast local fake upstream, its
# own redis-server (no persistence), and three gateways on it: MEM
# (`backend: memory`), A and B (`backend: redis`, same key_prefix).
#  1. Throughput/latency: wrk drives MEM, then A, alternating, ROUNDS times,
#     same load (CONNS connections, DURATION seconds each); B stays
#     connected to Redis meanwhile.
#  2. Propagation: PROBES times, A gets a 429 from a fresh model ref; B's
#     /metrics is polled until `spillway_model_dead` for that ref is 1.
#     Measured from sending A's request (upper bound) and from A's answer.
# Everything listens on 127.0.0.1; every run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-32}
PROBES=${PROBES:-200}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
install_tools wrk
install_tools redis-server
cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${CARGO_TARGET_DIR:-target}/release


REDIS=$(free_port)
redis-server --port "$REDIS" --bind 127.0.0.1 --save "" --appendonly no >"$work/redis.log" 2>&1 &
pids+=($!)
UP=$(free_port)
"$BIN/fake-upstream" --port "$UP" >"$work/up.log" 2>&1 &
pids+=($!)
UP429=$(free_port)
"$BIN/fake-upstream" --port "$UP429" --status 429 >"$work/up429.log" 2>&1 &
pids+=($!)

# gateway VAR name backend: starts a gateway and sets VAR to its port. Not
# called in `$(...)`: a pid added in a subshell never reaches `pids`.
gateway() {
  local var=$1 name=$2 backend=$3 port
  port=$(free_port)
  cat >"$work/$name.yaml" <<YAML
server: { listen: 127.0.0.1:$port, max_concurrent_requests: 100000, admin_token: admin }
state: { backend: $backend, redis_url: "redis://127.0.0.1:$REDIS/0", key_prefix: "bench:", data_dir: "$work/$name-data" }
providers:
  fast: { kind: openai, base_url: "http://127.0.0.1:$UP/v1" }
  r429: { kind: openai, base_url: "http://127.0.0.1:$UP429/v1" }
health: { dead_ttl: 10m, timeouts: { first_token: 30s, idle: 30s, total: 60s } }
cascades:
  fast: { models: [fast/bench] }
YAML
  SPILLWAY_LOG=warn "$BIN/spillway" serve --config "$work/$name.yaml" >"$work/$name.log" 2>&1 &
  pids+=($!)
  printf -v "$var" '%s' "$port"
}
gateway MEM mem memory
gateway GA a redis
gateway GB b redis
for p in "$REDIS" "$UP" "$UP429" "$MEM" "$GA" "$GB"; do wait_port "$p"; done

cat >"$work/chat.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"fast","messages":[{"role":"user","content":"Hello, how are you today?"}]}'
LUA
for p in "$MEM" "$GA"; do wrk -t1 -c8 -d2s -s "$work/chat.lua" "http://127.0.0.1:$p/v1/chat/completions" >/dev/null; done

for r in $(seq "$ROUNDS"); do
  for g in mem a; do
    port=$MEM; [ "$g" = a ] && port=$GA
    wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency -s "$work/chat.lua" "http://127.0.0.1:$port/v1/chat/completions" >"$work/$g.$r.wrk"
  done
done
echo "redis-server: $(redis-cli -p "$REDIS" info commandstats | grep -E 'cmdstat_(evalsha|eval|publish)' | tr '\r\n' ' ')"

python3 - "$work" "$ROUNDS" "$GA" "$GB" "$PROBES" <<'PY'
import json, re, statistics, sys, time, urllib.request
work, rounds, ga, gb, probes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])

def parse(path):
    text = open(path).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    v, unit = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
    p50 = float(v) * {"us": 1, "ms": 1000, "s": 1e6}[unit]
    v, unit = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
    p99 = float(v) * {"us": 1, "ms": 1000, "s": 1e6}[unit]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return rps, p50, p99, int(errors.group(1)) if errors else 0

print("| round | memory req/s | redis req/s | ratio | memory p50 | redis p50 | Δ p50 | memory p99 | redis p99 | non-2xx |")
print("|---|---|---|---|---|---|---|---|---|---|")
ratios, deltas = [], []
for r in range(1, rounds + 1):
    m, x = parse(f"{work}/mem.{r}.wrk"), parse(f"{work}/a.{r}.wrk")
    ratios.append(x[0] / m[0]); deltas.append(x[1] - m[1])
    print(f"| {r} | {m[0]:.0f} | {x[0]:.0f} | {x[0]/m[0]:.1%} | {m[1]:.0f} µs | {x[1]:.0f} µs | {x[1]-m[1]:+.0f} µs | {m[2]:.0f} µs | {x[2]:.0f} µs | {m[3]}/{x[3]} |")
print(f"\nmedian over rounds: redis keeps {statistics.median(ratios):.1%} of memory's req/s; median latency {statistics.median(deltas):+.0f} µs\n")

def post(port, model):
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body, {"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=10).read()
    except urllib.error.HTTPError as e:
        e.read()

def dead_on(port, model):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return re.search(r'spillway_model_dead\{[^}]*model="%s"[^}]*\} 1\b' % re.escape(model), text) is not None

from_send, from_answer = [], []
for i in range(probes):
    model = f"m{i}"
    t0 = time.perf_counter()
    post(ga, f"r429/{model}")
    t1 = time.perf_counter()
    while not dead_on(gb, model):
        if time.perf_counter() - t0 > 5:
            sys.exit(f"B never saw the mark on r429/{model}")
    t2 = time.perf_counter()
    from_send.append((t2 - t0) * 1000); from_answer.append((t2 - t1) * 1000)

def pct(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(len(xs) * p))]
print(f"| propagation A→B ({probes} marks) | median | p99 | max |")
print("|---|---|---|---|")
for name, xs in (("from sending A's request", from_send), ("from A's answer", from_answer)):
    print(f"| {name} | {pct(xs, .5):.2f} ms | {pct(xs, .99):.2f} ms | {max(xs):.2f} ms |")
PY
