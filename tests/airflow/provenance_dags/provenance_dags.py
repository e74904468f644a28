"""DAGs for tests/airflow/test_provenance_dag.py: a plain @task writes bad rows, a check fails."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
from airflow.sdk import DAG, task

from airflow_txnlog.callbacks import restore_on_failure
from airflow_txnlog.engine import Table
from airflow_txnlog.engine.write.provenance import provenance
from airflow_txnlog.operators.savepoint import TxnLogSavepointOperator

TABLE = os.environ.get("TXNLOG_PROVENANCE_TABLE", "/tmp/unset")
FOREIGN_TABLE = os.environ.get("TXNLOG_PROVENANCE_FOREIGN_TABLE", "/tmp/unset-foreign")
BAD = {"id": [-1, -2], "value": [0.0, 0.0], "part": ["bad", "bad"]}
SCHEMA = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("part", pa.string())])


@task
def write_bad(uri: str) -> int:
    return Table.open(uri).write(pa.table(BAD, schema=SCHEMA))  # no tags: what most users write


@task
def intruder(uri: str) -> int:
    # Stands for another writer committing meanwhile (another DAG's run).
    with provenance(dag_id="intruder_dag", task_id="sneak", run_id="other_run"):
        return Table.open(uri).write(pa.table(BAD, schema=SCHEMA))


def _quality_check(uri: str, savepoint_task_id: str = "savepoint") -> object:
    @task(on_failure_callback=restore_on_failure(uri, savepoint_task_id=savepoint_task_id))
    def quality_check() -> None:
        raise ValueError("quality check failed: negative ids")

    return quality_check()


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id, schedule=None, start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), catchup=False)


with _dag("prov_restore") as restore_dag:
    sp = TxnLogSavepointOperator(task_id="savepoint", table_uri=TABLE)
    sp >> write_bad(TABLE) >> _quality_check(TABLE)

with _dag("prov_foreign") as foreign_dag:
    sp2 = TxnLogSavepointOperator(task_id="savepoint", table_uri=FOREIGN_TABLE)
    sp2 >> write_bad(FOREIGN_TABLE) >> intruder(FOREIGN_TABLE) >> _quality_check(FOREIGN_TABLE)

with _dag("prov_no_savepoint") as no_savepoint_dag:
    _quality_check(TABLE, savepoint_task_id="no_such_task")
