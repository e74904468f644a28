#!/usr/bin/env bash
# Install Azurite, the Azure Storage emulator, for the Azure test suites: the exact versions in
# tools/azurite/package-lock.json, into tools/azurite/node_modules (ignored by git). Needs Node.js
# (npm); without it the Azure suites are skipped locally (and fail under CI, which must run them).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=tools/azurite
if ! command -v npm >/dev/null 2>&1; then
  echo "scripts/azurite.sh: npm not found; install Node.js >= 20 to run the Azure suites" >&2
  exit 0
fi
stamp=$dir/node_modules/.lock-stamp
want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
if [ ! -x "$dir/node_modules/.bin/azurite-blob" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  npm ci --prefix "$dir" --no-audit --no-fund --silent
  echo "$want" > "$stamp"
fi
