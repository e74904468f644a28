"""DAGs for the object-store DAG tests (tests/airflow/test_azure.py, test_gcs.py): tasks that reach
a table only through a connection.

`TXNLOG_TEST_STORE` (`azure` or `gcs`, set by the test) names the store; the `txnlog` connection
`lake_<store>` (given by the test as an environment variable) has the base location, e.g.
`abfs://<container>/lake` or `gs://<bucket>/lake`, and the credentials; the tasks name the table
relatively (`orders`), so every storage call goes through the connection.

- `<store>_write`: savepoint -> Spark append (SQL source) -> checkpoint.
- `<store>_restore`: savepoint -> Spark append of bad rows -> a failing quality check whose
  `restore_on_failure` callback restores the table to the savepoint, through the same connection.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, task

from airflow_txnlog.callbacks import restore_on_failure
from airflow_txnlog.operators.maintenance import TxnLogCheckpointOperator
from airflow_txnlog.operators.savepoint import TxnLogSavepointOperator
from airflow_txnlog.operators.spark import TxnLogSparkWriteOperator

STORE = os.environ.get("TXNLOG_TEST_STORE", "azure")
CONN = f"lake_{STORE}"
TABLE = "orders"  # relative: under the connection's base location
SPARK_CONF = {"spark.master": "local[1]", "spark.sql.shuffle.partitions": "2"}
GOOD = f"SELECT CAST(id + 100 AS BIGINT) AS id, CAST(id AS DOUBLE) AS value, '{STORE}' AS part FROM range(3)"
BAD = "SELECT CAST(-1 - id AS BIGINT) AS id, 0.0D AS value, 'bad' AS part FROM range(2)"


def _dag(dag_id: str) -> DAG:
    return DAG(dag_id, schedule=None, start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), catchup=False)


def _write(task_id: str, sql: str) -> TxnLogSparkWriteOperator:
    return TxnLogSparkWriteOperator(
        task_id=task_id, table_uri=TABLE, txnlog_conn_id=CONN, source=sql, spark_conf=SPARK_CONF
    )


with _dag(f"{STORE}_write") as write_dag:
    sp = TxnLogSavepointOperator(task_id="savepoint", table_uri=TABLE, txnlog_conn_id=CONN)
    checkpoint = TxnLogCheckpointOperator(task_id="checkpoint", table_uri=TABLE, txnlog_conn_id=CONN)
    sp >> _write("append", GOOD) >> checkpoint


@task(on_failure_callback=restore_on_failure(TABLE, txnlog_conn_id=CONN))
def quality_check() -> None:
    raise ValueError("quality check failed: negative ids")


with _dag(f"{STORE}_restore") as restore_dag:
    sp2 = TxnLogSavepointOperator(task_id="savepoint", table_uri=TABLE, txnlog_conn_id=CONN)
    sp2 >> _write("append_bad", BAD) >> quality_check()
