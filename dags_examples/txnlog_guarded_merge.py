"""Guarded merge: savepoint -> Spark MERGE -> data-quality check -> restore if anything failed.

Two safety nets, use either or both:
- `on_failure_callback=restore_on_failure(...)` on the risky tasks restores the savepoint as soon as
  one of them fails for good (idempotent: it can fire twice);
- an explicit `restore` task with `trigger_rule="one_failed"`, visible in the grid.
Trigger with `{"inject_bad_rows": true}` to see the quality check fail and the table come back.
The corrections' day is the run's logical date, or `run_after` for a run without one (no `ds`).
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from airflow.sdk import DAG, Param, task

from airflow_txnlog.callbacks import restore_on_failure
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.operators import run_datetime
from airflow_txnlog.operators.savepoint import TxnLogRestoreOperator, TxnLogSavepointOperator
from airflow_txnlog.operators.spark import TxnLogSparkMergeOperator

# Any table URI works (s3://bucket/orders with a `txnlog` connection, ...); a local folder by default.
TABLE_URI = os.environ.get("TXNLOG_EXAMPLE_TABLE", os.path.expanduser("~/airflow_txnlog_examples/orders"))
SPARK_CONF = {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"}


def corrections(spark: Any, context: Any) -> Any:
    """Order corrections to merge; with inject_bad_rows some amounts are negative (bad data)."""
    bad = bool(context["params"]["inject_bad_rows"])
    day = run_datetime(context).strftime("%Y-%m-%d")
    base = int(day.replace("-", "")) * 1000
    rows = [(base + i, day, f"customer-{i % 7}", -1.0 if bad and i % 2 else 99.0 + i) for i in range(5)]
    rows.append((base + 900, day, "customer-new", 5.0))
    return spark.createDataFrame(rows, "order_id long, day string, customer string, amount double")


with DAG(
    dag_id="txnlog_guarded_merge",
    schedule=None,
    start_date=dt.datetime(2024, 1, 1),
    catchup=False,
    params={"inject_bad_rows": Param(False, type="boolean")},
    tags=["txnlog", "example"],
):
    savepoint = TxnLogSavepointOperator(task_id="savepoint", table_uri=TABLE_URI, reason="before merge")
    guard = restore_on_failure(TABLE_URI, savepoint_task_id="savepoint")
    merge = TxnLogSparkMergeOperator(
        task_id="merge_corrections",
        table_uri=TABLE_URI,
        source=corrections,
        on="t.order_id = s.order_id",
        when_matched_update="*",
        when_not_matched_insert="*",
        spark_conf=SPARK_CONF,
        on_failure_callback=guard,
    )

    @task(on_failure_callback=guard)
    def quality_check() -> int:
        """Fail when the merged table has negative amounts."""
        snap = TxnLogHook().get_table(TABLE_URI).snapshot()
        bad = snap.to_arrow(filter="amount < 0").num_rows
        if bad:
            raise ValueError(
                f"quality check failed: {bad} orders with a negative amount at version {snap.version}"
            )
        return snap.version

    @task
    def publish(version: int) -> None:
        """Only reached when the check passed; a failed check leaves the run failed (and restored)."""
        print(f"version {version} of {TABLE_URI} passed the quality check")

    restore = TxnLogRestoreOperator(
        task_id="restore",
        table_uri=TABLE_URI,
        savepoint_task_id="savepoint",
        trigger_rule="one_failed",
    )
    check = quality_check()
    savepoint >> merge >> check >> [restore, publish(check)]
