"""The deployment check end to end: scripts/deploy_check.sh against a real Airflow.

The script starts PostgreSQL (or SQLite), the api-server, scheduler, dag-processor and triggerer,
runs the example DAGs and this folder's DAGs through the REST API and CLI, asserts the outcome and
stops everything; this test runs it as CI would and checks its exit status and report.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.deployment, pytest.mark.slow]


def test_deploy_check_passes() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_", "AIRFLOW__", "PYTEST_"))}
    proc = subprocess.run(
        [str(ROOT / "scripts" / "deploy_check.sh")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=25 * 60,  # (up to 8.5 min of it waiting out a UTC midnight: scripts/deploy/scenario.py)
        check=False,
    )
    report = proc.stdout
    print(report)  # shown by `pytest -rA` and on failure: the runs, versions, events and durations
    assert proc.returncode == 0, f"deploy check failed:\n{report[-20000:]}\n{proc.stderr[-5000:]}"
    assert "RESULT: PASS" in report
    assert "metadata DB: " in report
    assert "[ok] sensor was seen deferred" in report
    assert "[ok] the triggerer ran the sensor's trigger and it fired" in report
    assert "[ok] restore brought back the pre-run rows" in report
    assert "[ok] every event's extra matches its commit and source task" in report
    assert "[ok] the plan came from the catalog: the example table is in it" in report
    assert "[ok] every file of a savepoint or the published version is still there" in report
    assert " 0 failed" in report
