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

# The pids' user and system ticks from /proc: "USER SYSTEM".
ticks() {
  local user=0 sys=0 p u s
  for p in "$@"; do
    read -r u s < <(awk '{print $14, $15}' "/proc/$p/stat")
    user=$((user + u)); sys=$((sys + s))
  done
  echo "$user $sys"
}

# One wrk run and what it cost: name conns script port per(events|requests)
# pids... — `script` is $work/SCRIPT.lua, the URL `url PORT`; prints req/s,
# p50, p99 and the pids' CPU per request (or per event: EVENTS a request),
# with its user and system parts.
run() {
  local name=$1 c=$2 script=$3 port=$4 per=$5; shift 5
  local threads=1 u0 s0 u1 s1 out
  [ "$c" -gt 1 ] && threads=2
  read -r u0 s0 < <(ticks "$@")
  out=$(wrk -t"$threads" -c"$c" -d"${SECS}s" --timeout 60s --latency -s "$work/$script.lua" "$(url "$port")")
  read -r u1 s1 < <(ticks "$@")
  WRK_OUT="$out" python3 - "$name" "$c" "$per" "$EVENTS" "$((u1 - u0))" "$((s1 - s0))" <<'PY'
import os, re, sys
name, c, per, events = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
user, system = int(sys.argv[5]), int(sys.argv[6])
ticks = user + system
out = os.environ["WRK_OUT"]
n = int(re.search(r"(\d+) requests in", out).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
errors = re.search(r"Socket errors: (.*)", out)
pct = dict(re.findall(r"\n\s+(50|99)%\s+(\S+)", out))
cpu_us = ticks / os.sysconf("SC_CLK_TCK") * 1e6
unit = n * events if per == "events" else n
print(f"{name:<14} {c:>4} conns  req/s {rps:>9.1f}  p50 {pct.get('50','-'):>8}  p99 {pct.get('99','-'):>8}  "
      f"CPU/{'event' if per == 'events' else 'request'} {cpu_us / max(unit, 1):8.3f} us"
      f" (user {cpu_us * user / max(ticks, 1) / max(unit, 1):.3f})"
      + (f"  NON-2XX {bad.group(1)}" if bad else "") + (f"  ERRORS {errors.group(1)}" if errors else ""))
PY
}

# Each serving thread of gateway $1 and its CPU ticks so far, one a line.
serving_ticks() {
  local t
  for t in /proc/"$1"/task/*; do
    case $(cat "$t/comm") in spillway-w*) echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")" ;; esac
  done
}

# How a run's CPU was split between the serving threads (the ticks before, after).
serving_split() {
  join <(sort <<<"$1") <(sort <<<"$2") |
    awk '{t[NR] = $1; d[NR] = $3 - $2; all += $3 - $2}
      END {printf "  CPU by serving thread:"; for (i = 1; i <= NR; i++) printf " %s %d%%", t[i], all ? 100 * d[i] / all : 0; print ""}'
}

# The chat completions URL of a local port.
url() { echo "http://127.0.0.1:$1/v1/chat/completions"; }
