"""DAGs for tests/airflow/test_write_audit_publish.py: the guarded example's shape with engine writes.

`wap_guarded`: savepoint -> write (bad rows when conf `bad` is true; no asset event) -> audit (fails on
bad rows; its failure callback restores) -> publish the audited version; `restore` on one_failed.
`wap_downstream`: scheduled on the table's asset; reads exactly the version the event names.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pyarrow as pa
from airflow.sdk import DAG, Param, task

from airflow_txnlog.assets import table_asset
from airflow_txnlog.callbacks import restore_on_failure
from airflow_txnlog.engine import Table
from airflow_txnlog.operators.publish import TxnLogPublishOperator
from airflow_txnlog.operators.savepoint import TxnLogRestoreOperator, TxnLogSavepointOperator

TABLE = os.environ.get("TXNLOG_WAP_TABLE", "/tmp/unset-wap")
SCHEMA = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("part", pa.string())])
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

with DAG("wap_guarded", schedule=None, start_date=START, params={"bad": Param(False, type="boolean")}):
    guard = restore_on_failure(TABLE, savepoint_task_id="savepoint")

    @task(on_failure_callback=guard)
    def write(**context: Any) -> int:
        bad = bool(context["params"]["bad"])
        ids = [-1, -2] if bad else [100 + context["ti"].try_number, 200]
        data = pa.table({"id": ids, "value": [1.0, 2.0], "part": ["x", "x"]}, schema=SCHEMA)
        return Table.open(TABLE).write(data)  # a plain task: its commit emits no asset event

    @task(on_failure_callback=guard)
    def audit(version: int) -> int:
        bad = Table.open(TABLE).snapshot(version).to_arrow(filter="id < 0").num_rows
        if bad:
            raise ValueError(f"audit failed: {bad} negative ids at version {version}")
        return version

    written = write()
    checked = audit(written)
    publish = TxnLogPublishOperator(
        task_id="publish", table_uri=TABLE, version="{{ ti.xcom_pull(task_ids='audit') }}"
    )
    restore = TxnLogRestoreOperator(
        task_id="restore",
        table_uri=TABLE,
        savepoint_task_id="savepoint",
        trigger_rule="one_failed",
        emit_asset_event=False,
    )
    TxnLogSavepointOperator(task_id="savepoint", table_uri=TABLE) >> written
    checked >> [publish, restore]

with DAG("wap_downstream", schedule=[table_asset(TABLE)], start_date=START, catchup=False):

    @task
    def read(**context: Any) -> dict[str, Any]:
        events = context.get("triggering_asset_events") or {}
        versions = [e.extra["version"] for evs in events.values() for e in evs if "version" in e.extra]
        table = Table.open(TABLE)
        snap = table.snapshot(max(versions)) if versions else table.published_snapshot()
        ids = snap.to_arrow()["id"].to_pylist()
        return {"version": snap.version, "negative": sum(1 for i in ids if i < 0)}

    read()
