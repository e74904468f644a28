"""DAGs for tests/ui: the tables the Tables view must find, named three ways.

- `orders` (env TXNLOG_UI_ORDERS): tasks of two DAGs name it (`ui_orders`, `ui_orders_admin`) and a
  DAG schedules on its asset;
- `secret` (env TXNLOG_UI_SECRET): only a task of `ui_secret` names it (no asset);
- `other` (env TXNLOG_UI_OTHER): only an asset names it (a DAG scheduled on `table_asset`).
`ui_maintenance` is planned maintenance of `orders` and `other` (its plan names no table in
`table_uri`, so it adds none); tests give it runs in flight through the metadata database.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, task

from airflow_txnlog.assets import table_asset
from airflow_txnlog.operators.maintenance import TxnLogCheckpointOperator
from airflow_txnlog.operators.planned_maintenance import planned_maintenance

ORDERS = os.environ.get("TXNLOG_UI_ORDERS", "/tmp/unset-orders")
SECRET = os.environ.get("TXNLOG_UI_SECRET", "/tmp/unset-secret")
OTHER = os.environ.get("TXNLOG_UI_OTHER", "/tmp/unset-other")
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

with DAG("ui_orders", schedule=None, start_date=START, catchup=False):
    TxnLogCheckpointOperator(task_id="checkpoint", table_uri=ORDERS, outlets=[table_asset(ORDERS)])

with DAG("ui_orders_admin", schedule=None, start_date=START, catchup=False):  # the viewer may not read it
    TxnLogCheckpointOperator(task_id="checkpoint", table_uri=ORDERS)


def _consumer(dag_id: str, table: str) -> None:
    """A DAG scheduled on the table's asset (which makes the asset known to Airflow)."""
    with DAG(dag_id, schedule=[table_asset(table)], start_date=START, catchup=False):

        @task
        def consume() -> None:
            pass

        consume()


_consumer("ui_orders_downstream", ORDERS)
_consumer("ui_other", OTHER)

with DAG("ui_secret", schedule=None, start_date=START, catchup=False):
    TxnLogCheckpointOperator(task_id="checkpoint", table_uri=SECRET)

with DAG("ui_maintenance", schedule=None, start_date=START, catchup=False):  # the viewer may not read it
    planned_maintenance(
        tables=[ORDERS, OTHER],
        history_uri=os.environ.get("AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI", "/tmp/unset-history"),
    )
