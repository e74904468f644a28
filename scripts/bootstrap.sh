#!/usr/bin/env bash
# Create (or refresh) ./.venv with everything pinned in requirements.lock, then install this
# package in editable mode. Needs only Python 3.11 on PATH (Java 17 for the Spark parts).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.lock-stamp
want=$(sha256sum requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "uv==0.13.8"
  .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python -r requirements.lock
  .venv/bin/uv pip install -q --python .venv/bin/python --no-deps -e .
  echo "$want" > "$stamp"
fi
