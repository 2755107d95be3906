#!/usr/bin/env bash
# Installs the OTLP receiver's Python packages (requirements.txt) into
# .otlp-receiver/ (git-ignored; reused while the pins are unchanged).
# Prints the venv's python. tests/traces.rs runs it when needed.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.otlp-receiver
stamp=$(sha256sum scripts/otlp/requirements.txt | cut -c1-16)
if [ "$(cat "$venv/.stamp" 2>/dev/null)" != "$stamp" ]; then
  tmp="$venv.tmp.$$"
  rm -rf "$tmp"
  python3 -m venv "$tmp" >&2
  "$tmp/bin/pip" install --quiet --disable-pip-version-check -r scripts/otlp/requirements.txt >&2
  echo "$stamp" > "$tmp/.stamp"
  rm -rf "$venv"
  mv "$tmp" "$venv"
fi
echo "$PWD/$venv/bin/python"
