"""Planned maintenance, the recommended way: every table Airflow knows gets what it needs, and why.

    plan -> maintain[table] (checkpoint -> optimize -> vacuum -> cleanup_log) -> history

`plan` reads each table's log only (no data file is read, no folder listed) and decides per table and
partition, each decision with its rule, observed value and threshold (docs/maintenance.md, "Planned
maintenance"); the tables that need something get a mapped task group each, best first, under the
`txnlog_maintenance` pool and within a byte budget for compaction; `history` appends every decision
and what it measurably did to the maintenance-history Delta table, which the Tables view shows.

Dry run by default: the plan is made and recorded, nothing is changed. Settings here (environment
variables, so one file serves the demo, the deployment check and you):
- TXNLOG_MAINTENANCE_TABLES: comma-separated table URIs; unset, every table Airflow knows (the
  Tables view's catalog, read through the api-server: define the `txnlog_airflow_api` connection),
  or, when the file runs as a script (`python dags_examples/txnlog_maintenance.py`: one run here),
  the other examples' table (TXNLOG_EXAMPLE_TABLE, default ~/airflow_txnlog_examples/orders);
- TXNLOG_MAINTENANCE_DRY_RUN: `false` to act;
- TXNLOG_MAINTENANCE_SETTINGS: planner settings as JSON, e.g. {"quiet_minutes": 0};
- TXNLOG_MAINTENANCE_SPARK_CONN_ID: a `spark` / `spark_connect` connection; set, the data rewrites
  reading TXNLOG_MAINTENANCE_SPARK_MIN_BYTES or more (default 1 GiB) run on that Spark cluster (the
  task plans and commits, Spark reads and writes the files); unset, every rewrite runs in the task;
- AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI: the history table (default ~/airflow_txnlog_examples/...);
  the Tables view reads this option only, so set it (on the api-server too) for the view to show it.
"""

from __future__ import annotations

import datetime as dt
import json
import os

from airflow.sdk import DAG

from airflow_txnlog.operators.planned_maintenance import planned_maintenance

# The other examples' table (TXNLOG_EXAMPLE_TABLE, as they read it).
EXAMPLE_TABLE = os.environ.get("TXNLOG_EXAMPLE_TABLE", os.path.expanduser("~/airflow_txnlog_examples/orders"))
if __name__ == "__main__":  # run as a script (the end of the file): no api-server to list the catalog
    os.environ.setdefault("TXNLOG_MAINTENANCE_TABLES", EXAMPLE_TABLE)
_listed = os.environ.get("TXNLOG_MAINTENANCE_TABLES", "")
TABLES = [t.strip() for t in _listed.split(",") if t.strip()] or None  # None: the catalog
DRY_RUN = os.environ.get("TXNLOG_MAINTENANCE_DRY_RUN", "true").strip().lower() != "false"
SETTINGS = json.loads(os.environ.get("TXNLOG_MAINTENANCE_SETTINGS", "{}"))
HISTORY_URI = os.environ.get(
    "AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI",
    os.path.expanduser("~/airflow_txnlog_examples/_maintenance_history"),
)
SPARK_CONN_ID = os.environ.get("TXNLOG_MAINTENANCE_SPARK_CONN_ID") or None
SPARK_MIN_BYTES = int(os.environ.get("TXNLOG_MAINTENANCE_SPARK_MIN_BYTES", str(1024**3)))
BYTE_BUDGET = 50 * 1024**3  # compaction reads + writes at most 50 GiB per run; the rest waits

with DAG(
    dag_id="txnlog_maintenance",
    schedule="@daily",  # hourly is fine too: a table that needs nothing costs one log read
    start_date=dt.datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["txnlog", "example"],
) as dag:
    planned_maintenance(
        tables=TABLES,
        history_uri=HISTORY_URI,
        settings=SETTINGS,
        byte_budget=BYTE_BUDGET,
        dry_run=DRY_RUN,
        pool="txnlog_maintenance",
        spark_conn_id=SPARK_CONN_ID,
        spark_min_bytes=SPARK_MIN_BYTES,
    )


# `python dags_examples/txnlog_maintenance.py` runs the DAG once, here and now (airflow_txnlog.examples)
if __name__ == "__main__":
    from airflow_txnlog.examples import example_orders, run_as_script

    if EXAMPLE_TABLE in (TABLES or []):
        example_orders(EXAMPLE_TABLE)  # (no table yet on this machine: a few days of orders to plan for)
    run_as_script(dag)
