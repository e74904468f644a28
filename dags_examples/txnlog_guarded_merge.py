"""Guarded merge, write-audit-publish: savepoint -> MERGE -> audit -> publish, or restore.

Downstream readers never see a version nobody audited:
- the MERGE commits to the table but emits **no** asset event (`emit_asset_event=False`);
- `audit` checks that version and returns its number;
- `publish` (`TxnLogPublishOperator`) records exactly that version on the table's "published"
  channel and emits the table's asset event (operation "PUBLISH"): `txnlog_downstream` runs on it and
  reads the version it names; readers that follow the channel (`Table.published_snapshot()`,
  `SparkTable.to_df(published=True)`, sensors with `channel="published"`) read it from then on;
- when the merge or the audit fails, nothing is published and the table is restored to the savepoint,
  by either safety net: `on_failure_callback=restore_on_failure(...)` on the risky tasks (as soon as
  one fails for good; idempotent) and the `restore` task with `trigger_rule="one_failed"`, visible in
  the grid. Neither emits an event: the published version did not change.
Trigger with `{"inject_bad_rows": true}` to see the audit fail and the table come back.
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
from airflow_txnlog.operators.publish import TxnLogPublishOperator
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
) as dag:
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
        emit_asset_event=False,  # unaudited: only `publish` tells downstream
        on_failure_callback=guard,
    )

    @task(on_failure_callback=guard)
    def audit(**context: Any) -> int:
        """Fail when the version the merge committed has negative amounts; else return that version."""
        merged = context["ti"].xcom_pull(task_ids="merge_corrections") or {}
        table = TxnLogHook().get_table(TABLE_URI)
        # The merge's own version, never a later writer's (None: it committed nothing; the latest).
        snap = table.snapshot(merged.get("version"))
        bad = snap.to_arrow(filter="amount < 0").num_rows
        if bad:
            raise ValueError(f"audit failed: {bad} orders with a negative amount at version {snap.version}")
        return snap.version

    checked = audit()
    publish = TxnLogPublishOperator(
        task_id="publish",
        table_uri=TABLE_URI,
        version="{{ ti.xcom_pull(task_ids='audit') }}",
    )
    restore = TxnLogRestoreOperator(
        task_id="restore",
        table_uri=TABLE_URI,
        savepoint_task_id="savepoint",
        trigger_rule="one_failed",
        emit_asset_event=False,  # the published version did not change
    )
    savepoint >> merge >> checked >> [publish, restore]


# `python dags_examples/txnlog_guarded_merge.py` runs the DAG once, here and now (airflow_txnlog.examples)
if __name__ == "__main__":
    from airflow_txnlog.examples import example_orders, run_as_script

    example_orders(TABLE_URI)  # (no table yet on this machine: a few days of orders to work on)
    run_as_script(dag)
