#!/usr/bin/env bash
# Verifies Spillway's `nvml` load source on a machine with an NVIDIA GPU and
# driver: prints what nvidia-smi sees, then what the source reads (through
# nvml-wrapper), idle and under load, so the two can be compared.
#
#   scripts/nvml-check.sh [device ...]        # default: every device
#
# NVML_READ_BIN=path/to/nvml_read skips the build (for a machine without a
# Rust toolchain: build it elsewhere with
#   cargo build --release -p spillway --example nvml_read
# and carry target/release/examples/nvml_read). Output also goes to
# $OUT/nvml-check.txt when OUT is set.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-.}/nvml-check.txt"
bin="${NVML_READ_BIN:-}"
if [[ -z "$bin" ]]; then
  cargo build --release -q -p spillway --example nvml_read
  bin="${CARGO_TARGET_DIR:-target}/release/examples/nvml_read"
fi
{
  echo "== $(date -u +%FT%TZ) $(uname -n)"
  echo "== nvidia-smi"
  nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total --format=csv 2>&1 || echo "(nvidia-smi unavailable)"
  echo "== spillway nvml source, idle"
  "$bin" "$@" || echo "(exit $?)"
  # Some load for the GPU, if PyTorch happens to be installed: the source
  # should read well above idle while it runs.
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "== spillway nvml source, under a matmul loop"
    python3 - <<'PY' &
import time, torch
x = torch.randn(8192, 8192, device="cuda")
end = time.time() + 4
while time.time() < end:
    x = (x @ x).clamp_(-1, 1)
torch.cuda.synchronize()
PY
    burn=$!
    sleep 1.5
    "$bin" "$@" || echo "(exit $?)"
    wait "$burn" || true
  else
    echo "== (no PyTorch with CUDA: skipped the loaded reading)"
  fi
} 2>&1 | tee "$out"
