"""Run DAG files with dag.test() in a fresh interpreter: its own AIRFLOW_HOME, SQLite DB and env.

Airflow caches its configuration and ORM per process, and the task runner leaves AIRFLOW_CTX_*
behind; a subprocess keeps each test's Airflow (and its settings, e.g. OpenLineage) to itself.
The script prints its result as one stdout line starting with RESULT_MARKER (log lines may follow
it: e.g. OpenLineage emits DAG-level events asynchronously). OpenLineage settings of the calling
environment are dropped, so only a test that configures a transport turns it on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.processes import run_python

ROOT = Path(__file__).resolve().parents[2]
RESULT_MARKER = "RESULT="


def run_dag_script(
    home: Path,
    dags: Path,
    script: str,
    env: dict[str, str],
    *,
    args: Sequence[str] = (),
    timeout: float = 600,
) -> tuple[Any, str]:
    """(the JSON the script printed after RESULT_MARKER, all its output); fails the test when the
    script fails."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CTX_", "OPENLINEAGE"))}
    full.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "PYTHONPATH": str(ROOT),
            **env,
        }
    )
    proc = run_python(["-c", script, *args], full, timeout)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARKER))
    return json.loads(line.removeprefix(RESULT_MARKER)), output
