#!/usr/bin/env bash
# Deployment check: start a real Airflow (PostgreSQL or SQLite metadata DB, api-server, scheduler,
# dag-processor, triggerer) in a temporary folder, run the example DAGs through the REST API / CLI,
# assert the outcome, stop everything. Options: --sqlite, --keep. See docs/deployment.md.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
exec .venv/bin/python scripts/deploy_check.py "$@"
