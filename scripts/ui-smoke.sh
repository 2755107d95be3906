#!/usr/bin/env bash
# The operator console in a real browser (a manual check, not part of the
# test suite: it installs Debian's Chromium and the playwright-core npm
# package, about 300 MB). Starts a gateway on a free local port with a
# failing cascade that hands off, queues one request whose text holds
# HTML, then drives /ui: connect, see it (as text), answer it.
#
#   scripts/ui-smoke.sh      # leaves the screenshot in ui-smoke.png
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)
work=$(mktemp -d)
gw_pid=""
trap '[ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null; rm -rf "$work"' EXIT
(cd "$work" && npm install --silent --no-audit --no-fund playwright-core@1 >/dev/null)
cargo build -q -p spillway
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/gw.yaml" <<YAML
server: { listen: 127.0.0.1:$port, admin_token: smoke-token }
state: { data_dir: $work/data }
providers:
  m: { kind: mock, models: [ { id: down, behavior: { error_rate: 1.0, error_status: 500 } } ] }
cascades:
  helpdesk: { models: [m/down], handoff: true }
YAML
target/debug/spillway serve --config "$work/gw.yaml" >"$work/gw.log" 2>&1 &
gw_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"helpdesk","messages":[{"role":"user","content":"My order <b>never</b> arrived"}]}' >/dev/null
NODE_PATH="$work/node_modules" node scripts/ui/smoke.js "http://127.0.0.1:$port" smoke-token "$(command -v chromium)" "$PWD/ui-smoke.png"
