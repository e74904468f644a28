"""Deployment check: a deferrable `TxnLogVersionSensor` waiting for the example table's first commit.

The driver (scripts/deploy_check.py) triggers this DAG before any writer runs, waits until the sensor
is `deferred` (the triggerer now polls the table), then starts `txnlog_ingest`: the triggerer must
fire the trigger and the sensor resume with the version the ingest wrote. Only loaded by the check.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, task

from airflow_txnlog.sensors.version import TxnLogVersionSensor

TABLE_URI = os.environ.get("TXNLOG_EXAMPLE_TABLE", os.path.expanduser("~/airflow_txnlog_examples/orders"))

with DAG(
    dag_id="deploy_check_sensor",
    schedule=None,
    start_date=dt.datetime(2024, 1, 1),
    catchup=False,
    tags=["txnlog", "deployment-check"],
):
    wait = TxnLogVersionSensor(
        task_id="wait_for_write",
        table_uri=TABLE_URI,
        deferrable=True,
        poll_interval=2,
        timeout=600,
    )

    @task
    def got(version: int) -> int:
        """Pass the version the sensor returned on, so the driver reads it from XCom."""
        print(f"the sensor resumed on version {version}")
        return version

    got(wait.output)  # type: ignore[arg-type]  # an XComArg resolves to the int at run time
