#!/usr/bin/env bash
# The cost of one streamed event, against nginx as the floor.
#
# nginx runs as a plain reverse proxy (`proxy_buffering off`, upstream
# keep-alive, one worker) in front of the same upstream as the gateway
# (`server.workers: 1`). The upstream (`fake-upstream --chunks 512
# --content-bytes 16`) streams 512 unpaced content events of 16 bytes each,
# plus its first chunk, its finish chunk and `[DONE]`: 515 events a stream.
# At each connection count the two proxies are driven alternately by wrk,
# ROUNDS times, so the machine's drift hits both alike, and for each run
# the bench prints:
#
#   - CPU per event: the proxy's user+system ticks from /proc (nginx: its
#     master and worker) over the events delivered (streams × 515);
#   - streams per second, and their p50 and p99;
#   - the same for whole requests to the same upstream through the gateway
#     (read as a stream and assembled: `whole_as_stream` default), whose
#     CPU is divided by the 515 events it read;
#   - at 64 connections, whole answers passed through (a provider with
#     `whole_as_stream: false`, the upstream's fixed completion) against
#     nginx passing the same body, per request;
#   - stream time to first byte (median of TTFB_N sequential requests,
#     direct and the proxies taking turns TTFB_ROUNDS times: each round's
#     median, then the median of those), against the same stream with its
#     first event written alone (`--first-alone 1`: an unpaced stream's
#     first write would otherwise be the whole stream), and the added
#     median latency of a whole answer at one connection, both proxies
#     (wrk's one-connection runs, and in the TTFB rounds TTFB_N sequential
#     passed-through answers a proxy, the proxies taking turns: a median a
#     round, then the median of those);
#   - at 256 connections, an upstream that takes SLOW_MS (145) ms before
#     it answers (a 20-event stream, or its whole answer): req/s and p99
#     called directly, through nginx (the floor here too), through the
#     gateway on one serving thread (`gw-*`) and on its default of one a
#     CPU (`gwd-*`; with GW_BEFORE, that build too: `gwd0-*`; each such
#     run also prints how its CPU was split between the serving threads),
#     streamed and whole (read as a stream and assembled,
#     the default); SLOW_MS=0 leaves it out. Each of these runs lasts
#     SLOW_SECS (SECS by default). Every run opens 256 new connections
#     (and a proxy as many upstream, the last run's calls having been
#     cancelled when wrk closed): at 145 ms an answer that first burst is
#     3.7 % of a 4-second run's answers and sets its p99. SLOW_SECS=16
#     makes it 0.9 %, still at the p99's edge (a few slow answers of the
#     steady state and the burst together decide it); SLOW_SECS=32 makes
#     it 0.45 %, leaving the steady state's p99; SLOW_SECS=1 measures the
#     first burst alone;
#   - the gateway's resident memory with HOLD (1,000) streams open at once
#     (an upstream sending an event every 500 ms); HOLD=0 leaves it out.
#
#   bench/events.sh                         # 8, 64 and 256 connections, 2 rounds of 6 s
#   CONNS="64 256" ROUNDS=3 SECS=8 bench/events.sh
#   CONNS="64 256" ROUNDS=3 SECS=4 SLOW_SECS=32 bench/events.sh  # the goal table's run (docs/PERFORMANCE.md)
#   FAST=0 HOLD=0 SLOW_SECS=1 ROUNDS=3 bench/events.sh  # only the first burst of 256 new connections
#   BIN=/tmp/bins bench/events.sh           # binaries built already (spillway, fake-upstream, bench-client)
#   GW_BEFORE=/tmp/old/spillway bench/events.sh  # another build of the gateway too, interleaved (gw0-*)
#   FAST=0 HOLD=0 bench/events.sh           # only the 145 ms upstream (no per-event, pass-through or TTFB runs)
#
# Installs nginx (Debian's nginx-light, else nginx) and wrk when missing;
# nginx runs from a temporary config on a free port, not as a service.
# Everything listens on 127.0.0.1 only; every run is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
CONNS=${CONNS:-8 64 256}
ROUNDS=${ROUNDS:-2}
SECS=${SECS:-6}
CHUNKS=${CHUNKS:-512}
EVENTS=$((CHUNKS + 3))
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

install_tools wrk
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  echo "Installing nginx..."
  (apt-get update -qq && (apt-get install -y -qq nginx-light || apt-get install -y -qq nginx)) >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -n "${BIN:-}" ] || cargo build --release -q -p spillway -p test-upstreams --bins
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release}
GW_BIN=${GW_BIN:-$BIN/spillway}

UP=$(free_port)
"$BIN/fake-upstream" --port "$UP" --chunks "$CHUNKS" --content-bytes 16 >"$work/up.log" 2>&1 &
pids+=($!)
# The same stream, its first event written out alone (as a model sends its
# first token): the time to first byte is measured against it.
FIRST=$(free_port)
"$BIN/fake-upstream" --port "$FIRST" --chunks "$CHUNKS" --content-bytes 16 --first-alone 1 >"$work/first.log" 2>&1 &
pids+=($!)
SLOW_MS=${SLOW_MS:-145}
HOLD=${HOLD:-1000}
SLOW=$(free_port)
HELD=$(free_port)
if [ "$SLOW_MS" != 0 ]; then
  "$BIN/fake-upstream" --port "$SLOW" --delay-ms "$SLOW_MS" --chunks 20 --content-bytes 16 >"$work/slow.log" 2>&1 &
  SLOW_PID=$!; pids+=($SLOW_PID)
fi
if [ "$HOLD" != 0 ]; then
  "$BIN/fake-upstream" --port "$HELD" --chunks 100 --chunk-interval-ms 500 --content-bytes 16 >"$work/held.log" 2>&1 &
  pids+=($!)
fi

NGX=$(free_port)
NGXS=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
$([ "$(id -u)" = 0 ] && echo "user root;")
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  upstream up { server 127.0.0.1:$UP; keepalive 1024; }
  upstream slow { server 127.0.0.1:$SLOW; keepalive 1024; }
  upstream first { server 127.0.0.1:$FIRST; keepalive 16; }
  server {
    listen 127.0.0.1:$NGX;
    location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
    location /first/ {
      proxy_pass http://first/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
  server {
    listen 127.0.0.1:$NGXS;
    location / {
      proxy_pass http://slow;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
CONF
"$NGINX" -p "$work/nginx" -c "$work/nginx.conf" >"$work/nginx/out.log" 2>&1 &
NGX_PID=$!; pids+=($NGX_PID)

GW=$(free_port)
cat >"$work/gw.yaml" <<YAML
server: { listen: 127.0.0.1:$GW, max_concurrent_requests: 100000, workers: 1 }
providers:
  up: { kind: openai, base_url: "http://127.0.0.1:$UP/v1" }
  pass: { kind: openai, base_url: "http://127.0.0.1:$UP/v1", whole_as_stream: false }
  slow: { kind: openai, base_url: "http://127.0.0.1:$SLOW/v1" }
  held: { kind: openai, base_url: "http://127.0.0.1:$HELD/v1" }
  first: { kind: openai, base_url: "http://127.0.0.1:$FIRST/v1" }
health: { timeouts: { first_token: 30s, idle: 30s, total: 700s } }
cascades:
  bench: { models: [up/bench] }
  pass: { models: [pass/bench] }
  slow: { models: [slow/bench] }
  held: { models: [held/bench] }
  first: { models: [first/bench] }
YAML
# Starts gateway build $1 on $work/$2.yaml (its log $work/$2.log); its pid in $started.
run_gateway() {
  SPILLWAY_LOG=warn "$1" serve --config "$work/$2.yaml" >"$work/$2.log" 2>&1 &
  started=$!; pids+=($started)
}
run_gateway "$GW_BIN" gw; GW_PID=$started
GWS=("$GW")
if [ -n "${GW_BEFORE:-}" ]; then
  GW0=$(free_port)
  sed "s/127.0.0.1:$GW,/127.0.0.1:$GW0,/" "$work/gw.yaml" >"$work/gw0.yaml"
  run_gateway "$GW_BEFORE" gw0; GW0_PID=$started
  GWS+=("$GW0")
fi
GWDS=()
if [ "$SLOW_MS" != 0 ]; then
  # The gateway on its default serving threads (one a CPU), for the slow
  # upstream; with GW_BEFORE, that build too (gwd0-*).
  GWD=$(free_port)
  sed -e "s/127.0.0.1:$GW,/127.0.0.1:$GWD,/" -e "s/, workers: 1//" "$work/gw.yaml" >"$work/gwd.yaml"
  run_gateway "$GW_BIN" gwd; GWD_PID=$started
  GWDS+=("$GWD")
  if [ -n "${GW_BEFORE:-}" ]; then
    GWD0=$(free_port)
    sed "s/127.0.0.1:$GWD,/127.0.0.1:$GWD0,/" "$work/gwd.yaml" >"$work/gwd0.yaml"
    run_gateway "$GW_BEFORE" gwd0; GWD0_PID=$started
    GWDS+=("$GWD0")
  fi
fi
for p in "$UP" "$FIRST" "$NGX" "${GWS[@]}" "${GWDS[@]}"; do wait_port "$p"; done

lua() { # name model stream(true|false)
  post_lua "$work/$1.lua" '{"model":"'"$2"'","stream":'"$3"',"messages":[{"role":"user","content":"Hello, how are you today?"}]}'
}
lua stream bench true; lua whole bench false; lua pass pass false
lua slowstream slow true; lua slowwhole slow false

# Both proxies deliver every event: count them once.
for p in "$NGX" "${GWS[@]}"; do
  got=$(curl -sN -H 'Content-Type: application/json' \
    -d '{"model":"bench","stream":true,"messages":[{"role":"user","content":"Hi"}]}' "$(url "$p")" | grep -c '^data: ')
  [ "$got" = "$EVENTS" ] || { echo "port $p delivered $got events, not $EVENTS" >&2; exit 1; }
done


# nginx's master and worker.
nginx_pids() { echo "$NGX_PID $(pgrep -P "$NGX_PID" | tr '\n' ' ')"; }

# Warm both (connection pools, page cache) at the largest count.
for c in $CONNS; do max=$c; done
for p in "$NGX" "${GWS[@]}"; do wrk -t2 -c"$max" -d2s -s "$work/stream.lua" "$(url "$p")" >/dev/null; done
for p in "${GWS[@]}"; do wrk -t2 -c"$max" -d2s -s "$work/whole.lua" "$(url "$p")" >/dev/null; done

echo "# $EVENTS events a stream ($CHUNKS of 16 bytes of content); $ROUNDS rounds of ${SECS}s; $(nproc) cores"
FAST=${FAST:-1}
for r in $(seq "$((FAST == 0 ? 0 : ROUNDS))"); do
  for c in $CONNS; do
    # shellcheck disable=SC2046 # the pids are words
    run nginx-stream "$c" stream "$NGX" events $(nginx_pids)
    run gw-stream "$c" stream "$GW" events "$GW_PID"
    run gw-whole "$c" whole "$GW" events "$GW_PID"
    if [ -n "${GW0:-}" ]; then
      run gw0-stream "$c" stream "$GW0" events "$GW0_PID"
      run gw0-whole "$c" whole "$GW0" events "$GW0_PID"
    fi
  done
  # The pass-through rows take turns in the other order every second
  # round: a proxy's place in the sequence (right after nginx's run, or
  # after another gateway's) is then the same for each over two rounds.
  order=(nginx gw gw0)
  [ $((r % 2)) = 0 ] && order=(gw0 gw nginx)
  for c in 64 1; do
    for who in "${order[@]}"; do
      case $who in
        # shellcheck disable=SC2046
        nginx) run nginx-pass "$c" pass "$NGX" requests $(nginx_pids) ;;
        gw) run gw-pass "$c" pass "$GW" requests "$GW_PID" ;;
        gw0) [ -z "${GW0:-}" ] || run gw0-pass "$c" pass "$GW0" requests "$GW0_PID" ;;
      esac
    done
  done
done
TTFB_ROUNDS=${TTFB_ROUNDS:-5}
[ "$FAST" != 0 ] || TTFB_ROUNDS=0
TTFB_N=${TTFB_N:-300}
# Against the upstream that writes its first event alone: called directly,
# through nginx, through the gateway(s), taking turns.
ttfb_url() { # port -> URL
  case "$1" in
    "$FIRST") url "$1" ;;
    "$NGX") echo "http://127.0.0.1:$NGX/first/v1/chat/completions" ;;
    *) url "$1" ;;
  esac
}
# The same rounds time a passed-through whole answer at one connection
# (TTFB_N sequential requests each, the proxies taking turns, in the other
# order every second round): the added median latency, each proxy's
# figure taken beside the others' within seconds, where wrk's one-connection
# runs above lie minutes apart on a host whose speed drifts.
for p in "$FIRST" "$UP" "$NGX" "${GWS[@]}"; do : >"$work/ttfb-$p"; : >"$work/whole-$p"; done
for r in $(seq "$TTFB_ROUNDS"); do
  for p in "$FIRST" "$NGX" "${GWS[@]}"; do
    "$BIN/bench-client" ttfb "$(ttfb_url "$p")" "$TTFB_N" first | sed -n 's/.*median=\([0-9]*\).*/\1/p' >>"$work/ttfb-$p"
  done
  turn=("$UP" "$NGX" "${GWS[@]}")
  [ $((r % 2)) = 0 ] && turn=("${GWS[@]}" "$NGX" "$UP")
  for p in "${turn[@]}"; do
    "$BIN/bench-client" whole "$(url "$p")" "$TTFB_N" pass | sed -n 's/.*median=\([0-9]*\).*/\1/p' >>"$work/whole-$p"
  done
done
median_of() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
[ "$TTFB_ROUNDS" = 0 ] || for p in "$FIRST" "$NGX" "${GWS[@]}"; do
  name=gateway; [ "$p" = "$NGX" ] && name=nginx; [ "$p" = "${GW0:-}" ] && name=gateway-before; [ "$p" = "$FIRST" ] && name=direct
  echo "stream ttfb, $name: median of $TTFB_ROUNDS rounds $(median_of "$work/ttfb-$p") us (rounds: $(tr '\n' ' ' <"$work/ttfb-$p"))"
done
[ "$TTFB_ROUNDS" = 0 ] || for p in "$UP" "$NGX" "${GWS[@]}"; do
  name=gateway; [ "$p" = "$NGX" ] && name=nginx; [ "$p" = "${GW0:-}" ] && name=gateway-before; [ "$p" = "$UP" ] && name=direct
  echo "whole answer passed through, 1 connection, $name: median of $TTFB_ROUNDS rounds $(median_of "$work/whole-$p") us (rounds: $(tr '\n' ' ' <"$work/whole-$p"))"
done

if [ "$SLOW_MS" != 0 ]; then
  # Warm every proxy's connections to the slow upstream first, as the fast
  # one's were: a cold pool opens its 256 connections inside measured
  # requests (the default-threads gateway's first round read a p99 of
  # 0.2 to 1 s from that alone; a p99 of 1.01 s looks like connection
  # attempts dropped at the upstream and sent again after TCP's one-second
  # retransmit).
  wrk -t2 -c256 -d2s -s "$work/stream.lua" "$(url "$NGXS")" >/dev/null
  for p in "${GWS[@]}" "${GWDS[@]}"; do wrk -t2 -c256 -d2s -s "$work/slowstream.lua" "$(url "$p")" >/dev/null; done
  FAST_SECS=$SECS
  SECS=${SLOW_SECS:-$SECS}
  echo "# an upstream taking ${SLOW_MS} ms an answer (20-event streams), 256 connections, runs of ${SECS}s"
  for r in $(seq "$ROUNDS"); do
    for kind in stream whole; do
      run "direct-$kind" 256 "$kind" "$SLOW" requests "$SLOW_PID"
      # shellcheck disable=SC2046
      run "nginx-$kind" 256 "$kind" "$NGXS" requests $(nginx_pids)
      for p in "${GWS[@]}" "${GWDS[@]}"; do
        name=gw; pid=$GW_PID
        [ "$p" = "${GW0:-}" ] && { name=gw0; pid=$GW0_PID; }
        [ "$p" = "$GWD" ] && { name=gwd; pid=$GWD_PID; }
        [ "$p" = "${GWD0:-}" ] && { name=gwd0; pid=$GWD0_PID; }
        before=$(serving_ticks "$pid")
        run "$name-slow$kind" 256 "slow$kind" "$p" requests "$pid"
        case $name in gwd*) serving_split "$before" "$(serving_ticks "$pid")" ;; esac
      done
    done
  done
  SECS=$FAST_SECS
fi

if [ "$HOLD" != 0 ]; then
  for p in "${GWS[@]}"; do
    pid=$GW_PID; name=gateway
    [ "$p" = "${GW0:-}" ] && { pid=$GW0_PID; name=gateway-before; }
    "$BIN/bench-client" hold "$(url "$p")" "$HOLD" 6 held >"$work/hold.out" 2>&1 &
    holder=$!
    sleep 4
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    wait "$holder" || true
    echo "RSS with $HOLD streams open, $name: $((rss / 1024)) MiB ($(tail -1 "$work/hold.out"))"
  done
fi
