#!/usr/bin/env bash
# Runs Spillway's whole test suite: formatting, lints, and every test.
# Starts what the tests need (a Redis server) when none is reachable, and
# stops what it started when it ends. Says what it is doing before each
# step: clippy and the first `cargo test` build for minutes, silently.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "==> $* ($(date +%H:%M:%S))"; }
started_redis=""
stop_redis() {
  if [ -n "$started_redis" ]; then
    redis-cli -h 127.0.0.1 -p "$started_redis" shutdown nosave >/dev/null 2>&1 || true
  fi
}
trap stop_redis EXIT

# Redis for the state-store tests: use SPILLWAY_TEST_REDIS_URL, else a local
# server on 6379, else start one on a free port. The outage tests also start
# and stop their own `redis-server`, so the binary must be there either way.
if ! command -v redis-server >/dev/null 2>&1; then
  echo "Installing redis-server for the state-store tests..."
  (apt-get update -qq && apt-get install -y -qq redis-server) >/dev/null
fi
# The Sentinel failover test starts its own `redis-sentinel`s (Debian's
# package; the cluster tests need only redis-server and redis-cli). Missing,
# that test fails under CI=true.
if ! command -v redis-sentinel >/dev/null 2>&1; then
  echo "Installing redis-sentinel for the failover test..."
  (apt-get update -qq && apt-get install -y -qq redis-sentinel) >/dev/null
fi
if [ -z "${SPILLWAY_TEST_REDIS_URL:-}" ]; then
  if command -v redis-cli >/dev/null 2>&1 && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    export SPILLWAY_TEST_REDIS_URL="redis://127.0.0.1:6379/0"
  else
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes >/dev/null
    started_redis=$port
    export SPILLWAY_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
  fi
fi
echo "Redis for tests: ${SPILLWAY_TEST_REDIS_URL%%@*}"

step "Formatting (cargo fmt --check)"
cargo fmt --all -- --check
# The layering: no import cycles, no import against the layers (ARCHITECTURE.md).
step "Layering (scripts/layers.py)"
python3 scripts/layers.py
step "Lints (cargo clippy, every target; minutes on a cold build, quiet until it finds something)"
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The trace tests (tests/traces.rs) decode the gateway's spans with
# OpenTelemetry's own Python classes: installed once into .otlp-receiver/
# (the tests would install it themselves; here a failure is said first).
step "OTLP receiver for the trace tests (scripts/otlp/install.sh)"
scripts/otlp/install.sh >/dev/null || [ "${CI:-}" != true ]
step "Tests (cargo test --workspace)"
# Every test binary runs, so one failure does not hide the others.
cargo test --workspace --no-fail-fast
step "Shared state on a Redis Cluster (SPILLWAY_TEST_REDIS=cluster)"
# The shared-state files again, each test on a three-master Redis Cluster it
# starts and stops itself (every script and key layout must be cluster-safe).
SPILLWAY_TEST_REDIS=cluster cargo test -p spillway --test shared_state --test redis_state --test handoff_redis
SPILLWAY_TEST_REDIS=cluster cargo test -p spillway --test entry_points in_redis
step "Deployment files (scripts/deploy-check.sh)"
# The Dockerfile, compose file, systemd unit and manifests, with their own
# tools (hadolint, docker-compose config, systemd-analyze verify).
scripts/deploy-check.sh
# The real clients (openai-python and -node, the AI SDK, LangChain, the
# Anthropic SDK, promtool) against running gateways; uses the debug binary
# `cargo test` built, installs the pinned clients into .clients/.
step "Real clients (scripts/clients/run.sh)"
scripts/clients/run.sh
# The fuzz targets (their own workspace, run by scripts/fuzz.sh on nightly)
# must at least compile: Rust only, sharing this target dir, so it costs
# seconds once the workspace is built.
step "Fuzz targets compile (cargo check, fuzz/)"
CARGO_TARGET_DIR=target cargo check --quiet --manifest-path fuzz/Cargo.toml --bins --no-default-features
