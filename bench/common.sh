# Shared by the bench scripts (sourced, not run): a scratch directory and
# background processes that go away on exit, free local ports, and the
# tools the scripts install when missing. Everything listens on 127.0.0.1.

# `work` is removed on exit unless KEEP is set; add background pids to `pids`.
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# A port nothing listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits up to 10 s for something to listen on a port.
wait_port() {
  for _ in $(seq 200); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "port $1 never opened" >&2
  return 1
}

# Installs Debian packages for the named tools that are missing.
install_tools() {
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "Installing $tool..."
      (apt-get update -qq && apt-get install -y -qq "$tool") >/dev/null
    fi
  done
}

# Writes a wrk script that POSTs a JSON body: post_lua FILE BODY.
post_lua() {
  cat >"$1" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$2'
LUA
}
