#!/usr/bin/env bash
# The main job: installs everything into ./.venv, then runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
export SPARK_LOCAL_IP=127.0.0.1
exec .venv/bin/python scripts/run_dags.py "$@"
