#!/usr/bin/env bash
# The end-to-end client suite: the real clients (openai-python, the Anthropic
# SDK, LangChain, openai-node, the Vercel AI SDK, the browser SDKs in
# Chromium, promtool) against running
# gateways (`spillway serve` on the demo config and on mock.yaml, each on a
# free port). Installs the pinned clients into .clients/ (git-ignored; reused
# while the pins are unchanged), prints PASS/FAIL per scenario and the time.
#
#   scripts/clients/run.sh            # after `cargo build -p spillway --bin spillway`
#   SPILLWAY_BIN=path/to/spillway scripts/clients/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
here=scripts/clients
cache=.clients
started=$(date +%s)
mkdir -p "$cache"

bin=${SPILLWAY_BIN:-target/debug/spillway}
if [ ! -x "$bin" ]; then
  cargo build --quiet -p spillway --bin spillway
fi

hash_of() { sha256sum "$@" | sha256sum | cut -c1-16; }

# Python clients: a venv per requirements.txt.
py_stamp=$(hash_of "$here/python/requirements.txt")
if [ "$(cat "$cache/venv/.stamp" 2>/dev/null)" != "$py_stamp" ]; then
  echo "Installing the Python clients into $cache/venv..."
  rm -rf "$cache/venv"
  python3 -m venv "$cache/venv"
  "$cache/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/python/requirements.txt"
  echo "$py_stamp" > "$cache/venv/.stamp"
fi

# Node clients: `npm ci` of the lock file, linked where the tests import from.
if ! command -v npm >/dev/null 2>&1; then
  echo "Installing node and npm (Debian packages)..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >/dev/null
fi
node_stamp=$(hash_of "$here/node/package.json" "$here/node/package-lock.json")
if [ "$(cat "$cache/node/.stamp" 2>/dev/null)" != "$node_stamp" ]; then
  echo "Installing the Node clients into $cache/node..."
  rm -rf "$cache/node"
  mkdir -p "$cache/node"
  cp "$here/node/package.json" "$here/node/package-lock.json" "$cache/node/"
  (cd "$cache/node" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$node_stamp" > "$cache/node/.stamp"
fi
ln -sfn "../../../$cache/node/node_modules" "$here/node/node_modules"

# Chromium for the browser scenarios (node/browser.test.mjs): Debian's.
if ! command -v chromium >/dev/null 2>&1; then
  echo "Installing Chromium (Debian package chromium)..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
fi

# promtool: the Debian package `prometheus` ships it.
if ! command -v promtool >/dev/null 2>&1; then
  echo "Installing promtool (Debian package prometheus)..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus) >/dev/null
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
out="$cache/run"
rm -rf "$out"
mkdir -p "$out"
pids=()
stop_gateways() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_gateways EXIT

# start NAME CONFIG: serves CONFIG on a free port; sets $url.
start() {
  local name=$1 config=$2 port
  port=$(free_port)
  SPILLWAY_LISTEN="127.0.0.1:$port" "$bin" serve --config "$config" >"$out/$name.log" 2>&1 &
  pids+=($!)
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 100); do
    if curl -sf "$url/healthz" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "${pids[-1]}" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "The $name gateway did not start:" >&2
  cat "$out/$name.log" >&2
  return 1
}

# The browser scenarios serve their page on this port (an origin the mock
# gateway's CORS lists).
export SPILLWAY_BROWSER_PORT=$(free_port)

# The demo `spillway serve` embeds (examples/demo.yaml) listens on a fixed
# port; a copy on a free one.
sed "s/^  listen: .*/  listen: \${SPILLWAY_LISTEN}/" examples/demo.yaml >"$out/demo.yaml"
start demo "$out/demo.yaml"
export SPILLWAY_DEMO_URL=$url
start mock "$here/mock.yaml"
export SPILLWAY_URL=$url
start keys "$here/keys.yaml"
export SPILLWAY_KEYS_URL=$url
echo "Gateways: demo $SPILLWAY_DEMO_URL, mock $SPILLWAY_URL, keys $SPILLWAY_KEYS_URL"

status=0
"$cache/venv/bin/python" -m pytest -q -p no:cacheprovider "$here/python" \
  --junitxml="$out/python.xml" -o junit_family=xunit1 || status=1
node --test --test-reporter=dot --test-reporter-destination=stdout \
  --test-reporter=junit --test-reporter-destination="$out/node.xml" \
  "$here"/node/*.test.mjs || status=1

"$cache/venv/bin/python" "$here/summary.py" "$out/python.xml" "$out/node.xml" "$(($(date +%s) - started))" || status=1
if [ "$status" -ne 0 ]; then
  echo "Gateway logs: $root/$out/{demo,mock,keys}.log"
fi
exit "$status"
