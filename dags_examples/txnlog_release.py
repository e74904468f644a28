"""A multi-table release: three tables written by Spark, a cross-table audit, then release or roll back.

A night's load writes `customers`, `products` and `orders` (each write commits at once, but emits no
asset event: nothing is released yet). `audit` reads the three tables at exactly the versions the
write tasks committed, the same cut a release would name, and checks that every order's customer and
product is in its dimension at that cut. Then:
- the audit passes: `release` (`TxnLogReleaseOperator`) records the three versions as the next
  release of the log and emits the log's asset event; readers that follow the log (and DAGs scheduled
  on `release_asset(LOG)`) see the three tables together, never one without the others;
- the audit fails (a dangling key): the run fails and every table goes back to the current release,
  by either safety net: `rollback_release_on_failure(LOG)` on the risky tasks and the `rollback` task
  (`TxnLogReleaseRollbackOperator`, `trigger_rule="one_failed"`, visible in the grid; the second to
  come finds nothing to undo and does nothing). The commits of
  this run are its own (its owner tag); another writer's commit would make the rollback refuse.
- the audit sees an anomaly it cannot decide (an order far above the usual amounts) and the run was
  triggered with `require_approval`: a person approves or rejects (`ApprovalOperator`, Airflow's
  human-in-the-loop) before the release; a rejection fails the approval task (`fail_on_reject`), so
  nothing is released and `rollback` puts the tables back.
Trigger with `{"inject_bad_rows": true}` to see the rollback, with `{"inject_anomaly": true,
"require_approval": true}` to be asked.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG, Param, task

from airflow_txnlog.callbacks import rollback_release_on_failure
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.operators import run_datetime
from airflow_txnlog.operators.release import TxnLogReleaseOperator, TxnLogReleaseRollbackOperator
from airflow_txnlog.operators.spark import TxnLogSparkWriteOperator

# Any URIs work (s3://bucket/... with a `txnlog` connection); local folders by default.
ROOT = os.environ.get("TXNLOG_EXAMPLE_RELEASE", os.path.expanduser("~/airflow_txnlog_examples/release"))
CUSTOMERS, PRODUCTS, ORDERS = f"{ROOT}/customers", f"{ROOT}/products", f"{ROOT}/orders"
LOG = f"{ROOT}/_releases/nightly"
SPARK_CONF = {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"}
WRITES = {CUSTOMERS: "write_customers", PRODUCTS: "write_products", ORDERS: "write_orders"}
USUAL_MAX_AMOUNT = 1000.0


def _day_key(context: Any) -> int:
    return int(run_datetime(context).strftime("%Y%m%d"))


def customers(spark: Any, context: Any) -> Any:
    """The night's new customers: ids day * 10 + 0..4."""
    key = _day_key(context)
    return spark.createDataFrame(
        [(key * 10 + i, f"customer-{i}") for i in range(5)], "customer long, name string"
    )


def products(spark: Any, context: Any) -> Any:
    """The night's new products: ids day * 10 + 0..2."""
    key = _day_key(context)
    return spark.createDataFrame(
        [(key * 10 + i, f"product-{i}") for i in range(3)], "product long, title string"
    )


def orders(spark: Any, context: Any) -> Any:
    """The night's orders, of the night's customers and products; `inject_bad_rows`: one order of a
    customer nobody has; `inject_anomaly`: one order far above the usual amounts."""
    key, params = _day_key(context), context["params"]
    rows = [(key * 100 + i, key * 10 + i % 5, key * 10 + i % 3, 10.0 + i) for i in range(8)]
    if params["inject_bad_rows"]:
        rows.append((key * 100 + 90, -1, key * 10, 5.0))
    if params["inject_anomaly"]:
        rows.append((key * 100 + 91, key * 10, key * 10, 50 * USUAL_MAX_AMOUNT))
    return spark.createDataFrame(rows, "order_id long, customer long, product long, amount double")


with DAG(
    dag_id="txnlog_release",
    schedule=None,
    start_date=dt.datetime(2024, 1, 1),
    catchup=False,
    params={
        "inject_bad_rows": Param(False, type="boolean"),
        "inject_anomaly": Param(False, type="boolean"),
        "require_approval": Param(False, type="boolean"),
    },
    tags=["txnlog", "example"],
) as dag:
    undo = rollback_release_on_failure(LOG)
    sources = {CUSTOMERS: customers, PRODUCTS: products, ORDERS: orders}
    writes = [
        TxnLogSparkWriteOperator(
            task_id=WRITES[uri],
            table_uri=uri,
            source=source,
            mode="append",
            spark_conf=SPARK_CONF,
            emit_asset_event=False,
            on_failure_callback=undo,  # (unreleased: only the release tells)
        )
        for uri, source in sources.items()
    ]

    @task(on_failure_callback=undo)
    def audit(**context: Any) -> dict[str, Any]:
        """Fail on a dangling key at the cut the writes made; count the anomalies."""
        hook, ti = TxnLogHook(), context["ti"]
        versions = {uri: (ti.xcom_pull(task_ids=task_id) or {})["version"] for uri, task_id in WRITES.items()}
        cut = {uri: hook.get_table(uri).snapshot(version).to_arrow() for uri, version in versions.items()}
        known = {
            c: set(cut[t].column(c).to_pylist()) for t, c in ((CUSTOMERS, "customer"), (PRODUCTS, "product"))
        }
        facts = cut[ORDERS]
        dangling = {c: sorted(set(facts.column(c).to_pylist()) - known[c]) for c in ("customer", "product")}
        if any(dangling.values()):
            raise ValueError(f"audit failed at versions {versions}: orders of unknown keys {dangling}")
        anomalies = sum(1 for a in facts.column("amount").to_pylist() if a > USUAL_MAX_AMOUNT)
        return {"versions": versions, "anomalies": anomalies}

    @task.branch
    def gate(checked: dict[str, Any], **context: Any) -> str:
        """Ask a person only when the audit saw anomalies and the run asked for approval."""
        ask = checked["anomalies"] and context["params"]["require_approval"]
        return "approve" if ask else "no_approval_needed"

    checked = audit()
    approve = ApprovalOperator(
        task_id="approve",
        fail_on_reject=True,  # (a rejection fails the run, so `rollback` puts the tables back)
        subject="Release tonight's orders? The audit found unusually large orders.",
        body="{{ ti.xcom_pull(task_ids='audit') }}",
    )
    release = TxnLogReleaseOperator(
        task_id="release",
        release_log_uri=LOG,
        from_tasks=dict(WRITES.items()),
        note="{{ run_id }}",
        trigger_rule="none_failed_min_one_success",
        on_failure_callback=undo,
    )
    rollback = TxnLogReleaseRollbackOperator(
        task_id="rollback",
        release_log_uri=LOG,
        note="the run failed or was rejected: back to the current release",
        trigger_rule="one_failed",  # (a write, the audit or the approval failed)
    )
    writes >> checked >> gate(checked) >> [approve, EmptyOperator(task_id="no_approval_needed")] >> release
    [*writes, checked, approve] >> rollback  # (`release` stays a leaf: a failed audit fails the run)


# `python dags_examples/txnlog_release.py` runs the DAG once, here and now (airflow_txnlog.examples)
if __name__ == "__main__":
    from airflow_txnlog.examples import run_as_script

    run_as_script(dag)
