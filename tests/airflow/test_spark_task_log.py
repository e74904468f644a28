"""A successful Spark task leaves no error-level lines in its log.

Airflow's task supervisor logs what the task process writes to stdout at INFO and what it writes to
stderr at ERROR (`task.stderr` in `airflow/sdk/execution_time/supervisor.py`); Python logging keeps
its own levels. The Spark driver JVM inherits the task's stdout and stderr, and used to write its
log4j lines, its startup notes and a progress bar to stderr: each an "[error]" line of a successful
task, as was py4j's "Closing down clientserver connection".

A real `TxnLogSparkWriteOperator` runs here through `dag.test()` (local Spark, SQLite) in a fresh
process whose stdout and stderr are captured apart: stderr stands for what the supervisor would log
as errors, so it must stay empty, while Spark's notes show up on stdout (info) and the task log on
stdout has no error or py4j lines.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from tests.airflow.dag_subprocess import RESULT_ENV
from tests.processes import run_python

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

DAG_FILE = """
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG

from airflow_txnlog.operators.spark import TxnLogSparkWriteOperator


def _rows(spark, context):
    return spark.createDataFrame([(1, "a"), (2, "b"), (3, "a")], "id long, part string")


with DAG("spark_task_log", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")):
    TxnLogSparkWriteOperator(
        task_id="write",
        table_uri=os.environ["TXNLOG_SPARK_LOG_TABLE"],
        source=_rows,
        spark_conn_id=None,
        spark_conf={"spark.master": "local[1]", "spark.ui.enabled": "false"},
    )
"""

RUNNER = """
import json, sys
from airflow.utils.db import initdb
initdb()
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
assert not bag.import_errors, bag.import_errors
run = bag.dags["spark_task_log"].test()
from tests.airflow.dag_subprocess import emit_result
emit_result({"run": str(run.state), **{ti.task_id: str(ti.state) for ti in run.get_task_instances()}})
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("spark_task_log")
    dags = out / "dags"
    dags.mkdir()
    (dags / "spark_task_log.py").write_text(DAG_FILE)
    table = out / "table"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CTX_")}
    env.update(
        {
            "AIRFLOW_HOME": str(out / "airflow_home"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "PYTHONPATH": str(ROOT),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "TXNLOG_SPARK_LOG_TABLE": str(table),
            RESULT_ENV: str(out / "result.json"),
        }
    )
    proc = run_python(["-c", RUNNER, str(dags)], env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    states = json.loads((out / "result.json").read_text())
    return {"states": states, "stdout": proc.stdout, "stderr": proc.stderr, "table": table}


def test_the_spark_task_succeeded_and_wrote(ran: dict[str, Any]) -> None:
    assert ran["states"] == {"run": "success", "write": "success"}
    rows = Table.open(str(ran["table"])).snapshot().to_arrow().column("id").to_pylist()
    assert sorted(rows) == [1, 2, 3]


def test_spark_writes_nothing_the_supervisor_would_log_as_an_error(ran: dict[str, Any]) -> None:
    assert [line for line in ran["stderr"].splitlines() if line.strip()] == []
    assert "log4j" in ran["stdout"]  # the JVM's notes were moved to stdout (info), not lost


def test_the_task_log_has_no_error_or_py4j_lines(ran: dict[str, Any]) -> None:
    lines = ran["stdout"].splitlines()
    assert [line for line in lines if "[error" in line or "[critical" in line] == []
    assert [line for line in lines if "py4j" in line or "Closing down clientserver connection" in line] == []
    assert not [line for line in lines if "[Stage " in line]  # no console progress bar
