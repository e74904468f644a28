"""DAGs for tests/airflow/test_openlineage.py (run by dag.test() in a subprocess with OpenLineage on).

`ol_engine`: engine-only operators on a table named relative to a `txnlog` connection's base
location: savepoint (reads), a plain @task overwrite, a restore (commits), a second restore (already
restored: commits nothing), health (reads). `ol_spark`: one Spark append of a parquet source path;
the test runs it twice for the same logical date, so the second run's write is an idempotent skip.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, task

from airflow_txnlog.operators.maintenance import TxnLogHealthOperator
from airflow_txnlog.operators.savepoint import TxnLogRestoreOperator, TxnLogSavepointOperator
from airflow_txnlog.operators.spark import TxnLogSparkWriteOperator

CONN = "txnlog_lake"  # defined by the test through AIRFLOW_CONN_TXNLOG_LAKE (host: the base location)
TABLE = "sales/orders"  # relative: resolved against the connection's host
SPARK_TABLE = os.environ.get("TXNLOG_LINEAGE_SPARK_TABLE", "/tmp/unset-spark")
SOURCE = os.environ.get("TXNLOG_LINEAGE_SOURCE", "/tmp/unset-source")


@task
def write_more() -> int:
    import pyarrow as pa  # noqa: PLC0415 - not at parse time, as users should

    from airflow_txnlog.hooks.txnlog import TxnLogHook  # noqa: PLC0415

    data = pa.table({"id": [10, 11], "value": [5.0, 5.5], "part": ["b", "b"]})
    return TxnLogHook(CONN).get_table(TABLE).write(data, mode="overwrite")  # the restore re-adds files


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id, schedule=None, start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), catchup=False)


with _dag("ol_engine") as engine_dag:
    common = {"table_uri": TABLE, "txnlog_conn_id": CONN}
    savepoint = TxnLogSavepointOperator(task_id="savepoint", **common)
    restore = TxnLogRestoreOperator(task_id="restore", savepoint_task_id="savepoint", **common)
    again = TxnLogRestoreOperator(task_id="restore_again", savepoint_task_id="savepoint", **common)
    health = TxnLogHealthOperator(task_id="health", **common)
    savepoint >> write_more() >> restore >> again >> health

with _dag("ol_spark") as spark_dag:
    TxnLogSparkWriteOperator(
        task_id="append",
        table_uri=SPARK_TABLE,
        source_path=SOURCE,
        spark_conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"},
    )
