"""Deployment check: a DAG scheduled on an `AssetWatcher` with `TxnLogVersionEventTrigger`.

It watches a second table (`TXNLOG_DEPLOY_WATCHED_TABLE`) that only the driver writes, as a writer
outside Airflow would: the example DAGs' operators emit events for their own table's asset, so
watching that one would mix operator and watcher events. The driver commits one version at a time
and expects one run per version, each returning the version its trigger event named.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from airflow.sdk import DAG, AssetWatcher, task

from airflow_txnlog.assets import table_asset
from airflow_txnlog.triggers.version import TxnLogVersionEventTrigger

WATCHED_URI = os.environ.get(
    "TXNLOG_DEPLOY_WATCHED_TABLE", os.path.expanduser("~/airflow_txnlog_examples/watched")
)

watched = table_asset(
    WATCHED_URI,
    watchers=[
        AssetWatcher(
            name="deploy_check_watched",
            # WRITEs only: planned maintenance compacts this table too (an OPTIMIZE, no new data)
            trigger=TxnLogVersionEventTrigger(table_uri=WATCHED_URI, poll_interval=2, operations=["WRITE"]),
        )
    ],
)

with DAG(
    dag_id="deploy_check_watcher",
    schedule=[watched],
    start_date=dt.datetime(2024, 1, 1),
    catchup=False,
    tags=["txnlog", "deployment-check"],
):

    @task
    def seen(**context: Any) -> list[int]:
        """The versions named by the trigger events behind this run."""
        events = context.get("triggering_asset_events") or {}
        payloads = [(e.extra or {}).get("payload") or {} for evs in events.values() for e in evs]
        versions = sorted(int(p["version"]) for p in payloads if "version" in p)
        print(f"watcher events for versions {versions}")
        return versions

    seen()
