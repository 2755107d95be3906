#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for a fixed time each with cargo-fuzz
# (libFuzzer) on a nightly toolchain, installing what is missing, and prints
# one summary line per target (executions, coverage, corpus, findings).
#
#   scripts/fuzz.sh                      # every target, 60 s each
#   FUZZ_SECONDS=300 scripts/fuzz.sh     # longer
#   scripts/fuzz.sh sse_parser request   # some targets
#
# Seeds come from the repository (test fixtures, examples) and are copied
# into fuzz/corpus/<target>/ (ignored by git), which keeps what libFuzzer
# finds between runs. A crash is saved under fuzz/artifacts/<target>/ and
# makes the script exit 1 after the other targets have run; replay one with
# `cargo +nightly fuzz run <target> fuzz/artifacts/<target>/<file>`.
# Logs: fuzz/logs/<target>.log. Not part of scripts/test.sh (which only
# checks that the targets compile): it takes minutes and a nightly compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-1}"

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "Installing a nightly toolchain (libFuzzer's instrumentation needs it)..."
  rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "Installing cargo-fuzz..."
  cargo install cargo-fuzz --locked
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi

# Seeds: one file per input, from what the tests already use.
seed() {
  local target=$1 dir="fuzz/corpus/$1"
  mkdir -p "$dir"
  case "$target" in
    sse_parser | anthropic_stream | gigachat_stream)
      for f in crates/spillway/testdata/*/*.sse; do cp "$f" "$dir/"; done
      printf 'data: {"a":1}\r\n\r\n: keep-alive\n\nevent: x\ndata: y\ndata: z\n\n' >"$dir/mixed.sse"
      ;;
    request)
      printf '%s' '{"model":"chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"1"}],"response_format":{"type":"json_object"},"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"max_tokens":5,"temperature":0.5}' >"$dir/full.json"
      printf '%s' '{"model":"p/m","messages":[{"role":"user","content":"Hello?"}]}' >"$dir/small.json"
      ;;
    prometheus_text)
      for f in crates/spillway/testdata/load/*.prom; do cp "$f" "$dir/"; done
      ;;
    config)
      for f in examples/*.yaml; do cp "$f" "$dir/"; done
      ;;
    normalize)
      printf '%s' '```json\n{"user_name": "a", "items": [{"unit_price": 1.5, "quantity": 2,}]}\n```' >"$dir/fenced.txt"
      ;;
    yandex_stream)
      for f in crates/spillway/testdata/yandex/*; do cp "$f" "$dir/"; done
      ;;
  esac
}

summary=()
failed=0
mkdir -p fuzz/logs
for target in "${targets[@]}"; do
  seed "$target"
  log="fuzz/logs/$target.log"
  echo "Fuzzing $target for ${seconds}s..."
  status=ok
  # `-jobs` makes libFuzzer write fuzz-N.log files of its own: only when asked for.
  parallel=()
  if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi
  if ! cargo +nightly fuzz run "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" "${parallel[@]}" -print_final_stats=1 -max_len=65536 \
    -timeout=10 -rss_limit_mb=4096 >"$log" 2>&1; then
    status="CRASH (see $log and fuzz/artifacts/$target/)"
    failed=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  corpus=$(find "fuzz/corpus/$target" -type f | wc -l)
  summary+=("$target: ${execs} executions in ${seconds}s, coverage ${cov:-?} edges, corpus ${corpus} inputs, $status")
done

echo
echo "Fuzz summary (cargo-fuzz, $(rustc +nightly --version)):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
