"""`TxnLogConstraintsOperator`: ALTER TABLE ADD / DROP CONSTRAINT as a task.

Drops come first, then adds, each its own commit (as Delta: one constraint per ALTER TABLE). A
retried task must succeed where its first try stopped: a constraint already there with the same
expression is left alone, a dropped one that is already gone is not an error. Adding checks every
live row first: on the Airflow worker with the engine by default, or with a Spark job when
`spark_conn_id` is given (a big table, or an expression only Spark SQL can evaluate).

Returns {"versions": [...committed...], "constraints": {name: expression} after the task}. No asset
event by default (no data changed); `emit_asset_event=True` emits one for the last commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import Context

from airflow_txnlog.arguments import invalid, str_mapping
from airflow_txnlog.operators._base import TxnLogBaseOperator
from airflow_txnlog.operators._spark_session import spark_session


class TxnLogConstraintsOperator(TxnLogBaseOperator):
    """Add and drop CHECK constraints of a table.

    :param add: {name: Spark SQL boolean expression} to add.
    :param drop: names of constraints to drop.
    :param spark_conn_id: check existing rows with Spark through this connection (the apache-spark
        provider's `spark` / `spark_connect`); None: with the engine, on the worker.
    :param spark_conf: extra Spark configuration.
    """

    emits_by_default = False
    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "add", "drop")

    def __init__(
        self,
        *,
        add: Mapping[str, str] | None = None,
        drop: Sequence[str] = (),
        spark_conn_id: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.add = str_mapping("add", add)
        if isinstance(drop, str) or not all(isinstance(d, str) for d in drop):
            raise invalid(f"drop must be a list of constraint names, got {drop!r}")
        self.drop = list(drop)
        if not self.add and not self.drop:
            raise invalid("give constraints to add or drop (add={name: expression}, drop=[name, ...])")
        self.spark_conn_id = spark_conn_id
        self.spark_conf = str_mapping("spark_conf", spark_conf)

    def execute(self, context: Context) -> dict[str, Any]:
        table = self.table()
        versions = [v for name in self.drop if (v := table.drop_constraint(name, if_exists=True)) is not None]
        existing = {n.lower(): e for n, e in table.constraints().items()}
        wanted = {n: e for n, e in self.add.items() if existing.get(n.lower()) != e.strip()}
        if wanted and self.spark_conn_id is not None:
            from airflow_txnlog.spark import SparkTable  # noqa: PLC0415 - keeps pyspark out of DAG parsing

            app = f"{self.dag_id}-{self.task_id}"
            with spark_session(self.spark_conn_id, self.spark_conf, app) as spark:
                options = self.hook.storage_options_for(table.uri)
                st = SparkTable(spark, table.uri, storage_options=options, table=table)
                versions += [st.add_constraint(n, e) for n, e in wanted.items()]
        else:
            versions += [table.add_constraint(n, e) for n, e in wanted.items()]
        if versions:
            self.emit(context, versions[-1], "ADD CONSTRAINT" if wanted else "DROP CONSTRAINT")
        self.lineage_read_version = versions[-1] if versions else table.latest_version()
        return {"versions": versions, "constraints": table.constraints()}
