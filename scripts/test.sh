#!/usr/bin/env bash
# The test command: installs everything into ./.venv (from requirements.lock), then runs lint, type
# checks, the layering contracts and the whole pytest suite (slow and Spark tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
./scripts/azurite.sh  # Azurite for the Azure suites (pinned; needs Node.js, see the README)
./scripts/browser.sh  # Chromium + chromedriver for the Tables view's browser test (apt, when root)
export SPARK_LOCAL_IP=127.0.0.1
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports
if [ "$#" -gt 0 ]; then
  exec .venv/bin/pytest -n 2 "$@"
fi
.venv/bin/pytest -n 2 -m "not deployment" --durations=30
# The deployment check (a real Airflow: PostgreSQL, api-server, scheduler, dag-processor, triggerer
# and Spark tasks) runs alone afterwards: on 2 cores it needs them, as a real deployment would.
.venv/bin/pytest -m deployment -rA --durations=10
