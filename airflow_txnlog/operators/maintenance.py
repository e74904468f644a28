"""Maintenance operators: checkpoint, vacuum, log cleanup, optimize (Spark) and health.

OpenLineage (docs/lineage.md): each reports its table as an input at the version it worked on;
vacuum (not a dry run) and optimize also report the version they committed as an output.

They change no data, so by default they emit no asset event (downstream DAGs scheduled on the table
would otherwise run for versions without new data); pass `emit_asset_event=True` to emit one for
the commits they make (vacuum's VACUUM END, optimize's OPTIMIZE). Vacuum and log cleanup are dry
runs unless `dry_run=False`, with the table's retention checks on.

`retention_hours` is templated, so a rendered value is text: it is read as a number of hours (>= 0)
at the start of `execute`, and anything else raises `InvalidArgumentError` before the table is touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import Context

from airflow_txnlog.arguments import hours, renders_later, str_mapping
from airflow_txnlog.operators._base import TxnLogBaseOperator
from airflow_txnlog.operators._spark_session import DEFAULT_SPARK_CONN_ID, spark_session


class TxnLogCheckpointOperator(TxnLogBaseOperator):
    """Write a checkpoint of the latest version; returns {"version": v}."""

    emits_by_default = False

    def execute(self, context: Context) -> dict[str, Any]:
        t = self.table()
        version = t.latest_version()
        t.checkpoint(version)
        self.lineage_read_version = version
        self.log.info("checkpointed %s at version %s", self.table_uri, version)
        return {"version": version}


class TxnLogVacuumOperator(TxnLogBaseOperator):
    """Delete files no version within the retention, tombstone or savepoint needs.

    :param retention_hours: defaults to the table's `delta.deletedFileRetentionDuration` (7 days).
    :param dry_run: only report (the default).
    :param enforce_retention: refuse a retention below the table's.
    """

    emits_by_default = False
    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "retention_hours")

    def __init__(
        self,
        *,
        retention_hours: float | None = None,
        dry_run: bool = True,
        enforce_retention: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.retention_hours = (
            retention_hours if renders_later(retention_hours) else hours("retention_hours", retention_hours)
        )
        self.is_dry_run = dry_run
        self.enforce_retention = enforce_retention

    def execute(self, context: Context) -> dict[str, Any]:
        retention = hours("retention_hours", self.retention_hours)  # rendered by now
        result = self.table().vacuum(
            retention_hours=retention,
            dry_run=self.is_dry_run,
            enforce_retention=self.enforce_retention,
        )
        verb = "would delete" if result.dry_run else "deleted"
        self.log.info(
            "vacuum %s %d files (%d bytes) of %s", verb, len(result.files), result.bytes, self.table_uri
        )
        self.emit(context, result.end_version, "VACUUM END")
        return {
            "dry_run": result.dry_run,
            "num_files": len(result.files),
            "bytes": result.bytes,
            "deleted": result.deleted,
            "version": result.end_version,
        }


class TxnLogCleanupLogOperator(TxnLogBaseOperator):
    """Delete log files older than the log retention, below a checkpoint that stays."""

    emits_by_default = False
    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "retention_hours")

    def __init__(self, *, retention_hours: float | None = None, dry_run: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.retention_hours = (
            retention_hours if renders_later(retention_hours) else hours("retention_hours", retention_hours)
        )
        self.is_dry_run = dry_run

    def execute(self, context: Context) -> dict[str, Any]:
        retention = hours("retention_hours", self.retention_hours)  # rendered by now
        result = self.table().cleanup_log(retention_hours=retention, dry_run=self.is_dry_run)
        verb = "would remove" if result.dry_run else "removed"
        temps = f"; {verb} {len(result.temp_files)} stale temp file(s)" if result.temp_files else ""
        if result.checkpoint_version is None:  # no checkpoint old enough: say so, not "below None"
            kept = f"{retention:g} hours" if retention is not None else "the table's: 30 days unless set"
            self.log.info(
                "log cleanup: nothing to remove, no checkpoint is older than the log retention (%s)%s",
                kept,
                temps,
            )
        else:
            self.log.info(
                "log cleanup %s %d file(s) below checkpoint %d%s",
                verb,
                len(result.files),
                result.checkpoint_version,
                temps,
            )
        return {
            "num_files": len(result.files),
            "num_temp_files": len(result.temp_files),
            "checkpoint_version": result.checkpoint_version,
            "dry_run": result.dry_run,
        }


class TxnLogHealthOperator(TxnLogBaseOperator):
    """Push the table's health report (a dict) to XCom, e.g. for a branch deciding on maintenance."""

    emits_by_default = False

    def __init__(self, *, small_file_bytes: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.small_file_bytes = small_file_bytes

    def execute(self, context: Context) -> dict[str, Any]:
        report = self.table().health(small_file_bytes=self.small_file_bytes).to_dict()
        self.lineage_read_version = report["version"]
        self.log.info("health of %s: %s", self.table_uri, report)
        return report


class TxnLogOptimizeOperator(TxnLogBaseOperator):
    """OPTIMIZE with Spark (dataChange=false: never conflicts with concurrent appends): compact small
    files; with `zorder_by`, Z-order the selected partitions; on a clustered table, cluster the
    unclustered files by the table's keys (`full`: its own clustered files too).

    :param where: optional partition predicate limiting the rewrite.
    :param target_file_size: bytes per output file (default: `delta.targetFileSize` or 100 MiB).
    :param zorder_by: columns to Z-order by (Delta's OPTIMIZE ZORDER BY; templated).
    :param full: on a clustered table, re-cluster every file clustered before too.
    :param spark_conn_id: the apache-spark provider's `spark` / `spark_connect` connection.
    :param spark_conf: extra Spark configuration.
    """

    emits_by_default = False
    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "where", "zorder_by")

    def __init__(
        self,
        *,
        where: str | None = None,
        target_file_size: int | None = None,
        zorder_by: Sequence[str] | None = None,
        full: bool = False,
        spark_conn_id: str | None = DEFAULT_SPARK_CONN_ID,
        spark_conf: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.where = where
        self.target_file_size = target_file_size
        self.zorder_by = zorder_by
        self.full = full
        self.spark_conn_id = spark_conn_id
        self.spark_conf = str_mapping("spark_conf", spark_conf)

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_txnlog.spark import SparkTable  # noqa: PLC0415 - keeps pyspark out of DAG parsing

        with spark_session(self.spark_conn_id, self.spark_conf, f"{self.dag_id}-{self.task_id}") as spark:
            uri = self.hook.resolve_uri(self.table_uri)
            st = SparkTable(spark, uri, storage_options=self.hook.storage_options_for(uri))
            result = st.optimize(
                where=self.where,
                target_file_size=self.target_file_size,
                zorder_by=self.zorder_by,
                full=self.full,
            )
        self.emit(context, result.version, "OPTIMIZE")
        return {"operation": result.operation, "version": result.version, "metrics": dict(result.metrics)}
