"""Daily ingest: append the day's orders with Spark (idempotent), then drop partitions older than 30 days.

The orders are checked by expectations first (docs/constraints.md, "Expectations"): an order without
a positive amount is not written to the table but to a quarantine table beside it, with the names of
the rules it broke, committed before the table's commit with the same idempotency id. A retry of
`append_orders` after its commit landed commits nothing, in either table (the writes carry a txn id
for the run). The retention delete uses only the partition column, so it removes files from the log without
reading data.

The day comes from the run's logical date or, for a run without one (a manual run in Airflow 3),
from when the run was due (`run_after`): no `ds` templates, which such runs do not have.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from airflow.sdk import DAG

from airflow_txnlog.operators import run_datetime
from airflow_txnlog.operators.spark import TxnLogSparkDeleteOperator, TxnLogSparkWriteOperator

# Any table URI works (s3://bucket/orders with a `txnlog` connection, ...); a local folder by default.
TABLE_URI = os.environ.get("TXNLOG_EXAMPLE_TABLE", os.path.expanduser("~/airflow_txnlog_examples/orders"))
SPARK_CONF = {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"}


KEEP_DAYS = 30
# Jinja for the first day kept; `dag_run` exists in every run, its logical_date may be None.
OLDEST_KEPT = (
    f"((dag_run.logical_date or dag_run.run_after) - macros.timedelta(days={KEEP_DAYS})).strftime('%Y-%m-%d')"
)


def daily_orders(spark: Any, context: Any) -> Any:
    """The day's orders (a real DAG would read a landing zone: `source_path=...`)."""
    day = run_datetime(context).strftime("%Y-%m-%d")
    rows = [
        (int(day.replace("-", "")) * 1000 + i, day, f"customer-{i % 7}", float(10 + i)) for i in range(50)
    ]
    # two bad orders a day, which the expectations quarantine
    rows += [(int(day.replace("-", "")) * 1000 + 900 + i, day, f"customer-{i}", -1.0) for i in range(2)]
    return spark.createDataFrame(rows, "order_id long, day string, customer string, amount double")


with DAG(
    dag_id="txnlog_ingest",
    schedule="@daily",
    start_date=dt.datetime(2024, 1, 1),
    catchup=False,
    tags=["txnlog", "example"],
) as dag:
    append = TxnLogSparkWriteOperator(
        task_id="append_orders",
        table_uri=TABLE_URI,
        source=daily_orders,
        partition_by=["day"],
        spark_conf=SPARK_CONF,
        expectations={
            "positive_amount": ("amount > 0", "quarantine"),
            "has_customer": "customer IS NOT NULL",
        },
        quarantine_table_uri=f"{TABLE_URI}_quarantine",
    )
    expire = TxnLogSparkDeleteOperator(
        task_id="drop_old_partitions",
        table_uri=TABLE_URI,
        predicate=f"day < '{{{{ {OLDEST_KEPT} }}}}'",
        spark_conf=SPARK_CONF,
    )
    append >> expire


# `python dags_examples/txnlog_ingest.py` runs the DAG once, here and now (airflow_txnlog.examples)
if __name__ == "__main__":
    from airflow_txnlog.examples import run_as_script

    run_as_script(dag)
