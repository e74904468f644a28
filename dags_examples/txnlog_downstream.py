"""Downstream: runs on every event of the table's asset and reads exactly the version it names.

The writer's operators emit an asset event for the table only for a commit that changed data, with
`{"version": v, "previous_version": ..., "operation": op, <rows/files added/removed>, "dag_id": ...,
"task_id": ..., "run_id": ...}` (docs/airflow.md); in the guarded merge (write-audit-publish) only the
`publish` task emits, naming the audited version, so this DAG never reads the merge's unaudited
version. Run without an event (by hand), it reads the published version, or the latest when nothing
was ever published. (Without any upstream DAG, schedule on an `AssetWatcher` with
`TxnLogVersionEventTrigger` instead: see docs/sensors.md.)
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from airflow.sdk import DAG, task

from airflow_txnlog.assets import table_asset
from airflow_txnlog.hooks.txnlog import TxnLogHook

# Any table URI works (s3://bucket/orders with a `txnlog` connection, ...); a local folder by default.
TABLE_URI = os.environ.get("TXNLOG_EXAMPLE_TABLE", os.path.expanduser("~/airflow_txnlog_examples/orders"))


with DAG(
    dag_id="txnlog_downstream",
    schedule=[table_asset(TABLE_URI)],
    start_date=dt.datetime(2024, 1, 1),
    catchup=False,
    tags=["txnlog", "example"],
) as dag:

    @task
    def summarize(**context: Any) -> dict[str, Any]:
        """Revenue per day of exactly the version named by the triggering event."""
        events = context.get("triggering_asset_events") or {}
        # Operator events carry {"version"}; AssetWatcher events carry it under "payload".
        extras = [e.extra for evs in events.values() for e in evs]
        versions = [x.get("version", (x.get("payload") or {}).get("version")) for x in extras]
        versions = [v for v in versions if v is not None]
        table = TxnLogHook().get_table(TABLE_URI)
        if versions:
            snap = table.snapshot(version=max(versions))
        else:  # run by hand: the published version, or the latest when nothing was ever published
            from airflow_txnlog.engine import NotPublishedError  # noqa: PLC0415 - no pyarrow at parse time

            try:
                snap = table.published_snapshot()
            except NotPublishedError:
                snap = table.snapshot()
        data = snap.to_arrow(columns=["day", "amount"]).group_by("day").aggregate([("amount", "sum")])
        totals = {r["day"]: round(r["amount_sum"], 2) for r in data.to_pylist()}
        print(f"version {snap.version}: revenue per day {totals}")
        return {"version": snap.version, "days": len(totals)}

    summarize()


# `python dags_examples/txnlog_downstream.py` runs the DAG once, here and now (airflow_txnlog.examples)
if __name__ == "__main__":
    from airflow_txnlog.examples import example_orders, run_as_script

    example_orders(TABLE_URI)  # (no table yet on this machine: a few days of orders to work on)
    run_as_script(dag)
