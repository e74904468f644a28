"""Run DAG files with dag.test() in a fresh interpreter: its own AIRFLOW_HOME, SQLite DB and env.

Airflow caches its configuration and ORM per process, and the task runner leaves AIRFLOW_CTX_*
behind; a subprocess keeps each test's Airflow (and its settings, e.g. OpenLineage) to itself.
The script hands its result back with `emit_result(obj)`, which writes JSON to the file named by
RESULT_ENV, not to stdout: OpenLineage (and other threads) log to stdout concurrently, and a log line
once landed between a printed result and its newline. OpenLineage settings of the calling
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
RESULT_ENV = "TXNLOG_TEST_RESULT_FILE"


def emit_result(result: Any) -> None:
    """Called by the script in the subprocess: its result, as JSON, for run_dag_script."""
    Path(os.environ[RESULT_ENV]).write_text(json.dumps(result))


def run_dag_script(
    home: Path,
    dags: Path,
    script: str,
    env: dict[str, str],
    *,
    args: Sequence[str] = (),
    timeout: float = 600,
) -> tuple[Any, str]:
    """(what the script passed to emit_result, all its output); fails the test when the script fails
    or emits nothing."""
    result_file = home.parent / f"{home.name}.result.json"
    result_file.unlink(missing_ok=True)
    full = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CTX_", "OPENLINEAGE"))}
    full.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "PYTHONPATH": str(ROOT),
            RESULT_ENV: str(result_file),
            **env,
        }
    )
    proc = run_python(["-c", script, *args], full, timeout)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert result_file.exists(), f"the script emitted no result:\n{output[-4000:]}"
    return json.loads(result_file.read_text()), output


DAGS_TEST_RUNNER = """
import sys
from airflow.utils.db import initdb
initdb()
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
assert not bag.import_errors, bag.import_errors
states = {}
for dag_id in sys.argv[2:]:
    run = bag.dags[dag_id].test()
    tis = {ti.task_id: str(ti.state).rsplit(".", 1)[-1] for ti in run.get_task_instances()}
    states[dag_id] = {"run": str(run.state).rsplit(".", 1)[-1], **tis}
from tests.airflow.dag_subprocess import emit_result
emit_result(states)
"""


def run_dags(
    home: Path, dags: Path, dag_ids: Sequence[str], env: dict[str, str]
) -> tuple[dict[str, dict[str, str]], str]:
    """Run each DAG of `dags` named in `dag_ids` once with `dag.test()` in a fresh interpreter (a new
    SQLite DB under `home`): ({dag_id: {"run": its state, task_id: task state}}, all the output)."""
    states, output = run_dag_script(home, dags, DAGS_TEST_RUNNER, env, args=[str(dags), *dag_ids])
    return states, output
