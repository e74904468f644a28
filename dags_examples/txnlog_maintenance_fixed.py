"""Fixed-schedule maintenance of one table: health -> checkpoint -> optimize -> vacuum -> log cleanup.

The recommended way is planned maintenance (txnlog_maintenance.py): it decides per table what is
needed and why. This one is the hand-built schedule, for a table you want maintained exactly so; it
compacts with Spark. The health report decides whether compaction is worth a Spark job. Vacuum
keeps the table's retention (7 days by default) and every savepoint's files; set `dry_run=True` to
only report.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from airflow.sdk import DAG, task

from airflow_txnlog.operators.maintenance import (
    TxnLogCheckpointOperator,
    TxnLogCleanupLogOperator,
    TxnLogHealthOperator,
    TxnLogOptimizeOperator,
    TxnLogVacuumOperator,
)

# Any table URI works (s3://bucket/orders with a `txnlog` connection, ...); a local folder by default.
TABLE_URI = os.environ.get("TXNLOG_EXAMPLE_TABLE", os.path.expanduser("~/airflow_txnlog_examples/orders"))
SPARK_CONF = {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"}

SMALL_FILES_TO_OPTIMIZE = 10

with DAG(
    dag_id="txnlog_maintenance_fixed",
    schedule="@weekly",
    start_date=dt.datetime(2024, 1, 1),
    catchup=False,
    tags=["txnlog", "example"],
) as dag:
    health = TxnLogHealthOperator(task_id="health", table_uri=TABLE_URI)

    @task.branch
    def decide(report: dict[str, Any]) -> list[str]:
        """Compact only when there are enough small files; always checkpoint and clean up."""
        if report["small_files"] >= SMALL_FILES_TO_OPTIMIZE:
            return ["checkpoint", "optimize"]
        return ["checkpoint"]

    checkpoint = TxnLogCheckpointOperator(task_id="checkpoint", table_uri=TABLE_URI)
    optimize = TxnLogOptimizeOperator(task_id="optimize", table_uri=TABLE_URI, spark_conf=SPARK_CONF)
    vacuum = TxnLogVacuumOperator(
        task_id="vacuum", table_uri=TABLE_URI, dry_run=False, trigger_rule="none_failed_min_one_success"
    )
    cleanup = TxnLogCleanupLogOperator(task_id="cleanup_log", table_uri=TABLE_URI, dry_run=False)

    decide(health.output) >> [checkpoint, optimize]
    [checkpoint, optimize] >> vacuum >> cleanup


# `python dags_examples/txnlog_maintenance_fixed.py` runs the DAG once, here and now (airflow_txnlog.examples)
if __name__ == "__main__":
    from airflow_txnlog.examples import example_orders, run_as_script

    example_orders(TABLE_URI)  # (no table yet on this machine: a few days of orders to work on)
    run_as_script(dag)
