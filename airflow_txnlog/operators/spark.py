"""Spark DML operators: write, delete, update and merge a table through PySpark.

Each task builds a Spark session from the apache-spark provider's connection (`spark_conn_id`,
default `spark_default`: `local[*]` when it is not defined) plus `spark_conf`, runs the operation
through `airflow_txnlog.spark.SparkTable` and commits with the engine. pyspark is imported only in
`execute`, so DAG files using these operators parse without it.

Source data (write, merge) is one of:
- `source`: a callable `(spark, context) -> DataFrame`, or a Spark SQL string;
- `source_path` (+ `source_format`, default parquet, and `source_options`).

Bad arguments (a mode outside `WriteMode`, a mapping that is not str to str, a merge clause that is
neither a mapping nor "*") raise `InvalidArgumentError` when the operator is built, or, for templated
fields, at the start of `execute`: before a Spark session starts or anything is written.

Every commit is tagged with the run's owner tag, so `TxnLogRestoreOperator` / `restore_on_failure`
treat this run's commits as their own. Writes are idempotent per task and logical date: the commit
carries `txn=("<dag_id>.<task_id>@<logical date>", <logical date in ms>)`, so a retry, or a re-run
of the same date, after a committed write commits nothing. The date is part of the app id (rather
than only the version, as streaming writers do) because Airflow runs dates out of order: with one app
id per task, a backfill of an older date would look already written and be skipped.

OpenLineage (docs/lineage.md): a commit reports the table as an output at the committed version and
an input at the version it read; no commit (a skipped re-run, no matching rows) reports it as an
input only. A `source_path` is an input too; a callable or SQL source is not named.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from airflow.sdk import Context

from airflow_txnlog.arguments import (
    WriteMode,
    check_choice,
    column_names,
    invalid,
    renders_later,
    str_mapping,
)
from airflow_txnlog.operators import _expectations
from airflow_txnlog.operators._base import TxnLogBaseOperator, run_owner, run_version
from airflow_txnlog.operators._spark_session import DEFAULT_SPARK_CONN_ID, spark_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from airflow_txnlog.engine import Table
    from airflow_txnlog.spark import DmlResult, SparkTable, WriteResult

SourceFn = Callable[["SparkSession", Context], "DataFrame"]


def idempotency_txn(context: Context, task_key: str) -> tuple[str, int]:
    """(app id, version) making a write idempotent per logical date (see module docstring)."""
    version = run_version(context)
    stamp = dt.datetime.fromtimestamp(version / 1000, dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    return f"{task_key}@{stamp}", version


def _clause(name: str, value: Mapping[str, str] | str | None) -> dict[str, str] | Literal["*"] | None:
    """A merge clause's columns: None (no clause), "*" (every column) or {"column": "SQL expression"}."""
    if value is None:
        return None
    if value == "*":
        return "*"
    if isinstance(value, str):
        raise invalid(f"{name} must be a mapping of column to SQL expression or '*'; got {value!r}")
    return str_mapping(name, value)


def _delete_clause(name: str, value: object) -> bool | str:
    """A merge delete clause: False (none), True (unconditional) or a condition."""
    if not isinstance(value, (bool, str)):
        raise invalid(f"{name} must be True, False or a condition; got {value!r}")
    return value


def dml_xcom(result: DmlResult) -> dict[str, Any]:
    return {"operation": result.operation, "version": result.version, "metrics": dict(result.metrics)}


class _SparkOperator(TxnLogBaseOperator):
    """Session handling shared by the Spark operators."""

    def __init__(
        self,
        *,
        spark_conn_id: str | None = DEFAULT_SPARK_CONN_ID,
        spark_conf: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spark_conn_id = spark_conn_id
        self.spark_conf = str_mapping("spark_conf", spark_conf)

    def _open(self, spark: SparkSession, context: Context, table: Table | None = None) -> SparkTable:
        """The table (`table`, else the one at `table_uri`) for Spark, its commits tagged as this run's."""
        from airflow_txnlog.spark import SparkTable  # noqa: PLC0415 - pyspark only at run time

        table = self.hook.get_table(self.table_uri) if table is None else table
        table.default_tags = {"owner": run_owner(context)}
        options = self.hook.storage_options_for(table.uri) or None
        return SparkTable(spark, table.uri, storage_options=options, table=table)

    def _session(self) -> Any:
        return spark_session(self.spark_conn_id, self.spark_conf, f"{self.dag_id}-{self.task_id}")


class _SourceMixin:
    """The source of a write or merge, and the expectations it is checked against (_expectations)."""

    render_template: Callable[..., Any]
    hook: Any
    expectations: _expectations.Specs
    quarantine_table_uri: str | None
    table_uri: str
    source: SourceFn | str | None
    source_path: str | None
    source_format: str
    source_options: dict[str, str]

    def _init_source(
        self,
        source: SourceFn | str | None,
        source_path: str | None,
        source_format: str,
        source_options: Mapping[str, str] | None,
    ) -> None:
        if (source is None) == (source_path is None):
            raise invalid("give exactly one of source (callable or SQL) and source_path")
        if not isinstance(source_format, str) or not source_format:
            raise invalid(
                f"source_format must be a Spark data source name such as 'parquet'; got {source_format!r}"
            )
        self.source, self.source_path = source, source_path
        self.source_format, self.source_options = source_format, str_mapping("source_options", source_options)

    def _init_expectations(self, expectations: object, quarantine_table_uri: str | None) -> None:
        self.expectations = _expectations.specs(expectations, quarantine_table_uri)
        self.quarantine_table_uri = quarantine_table_uri
        if self._quarantines():
            _expectations.refuse_quarantine_is_target(self.table_uri, quarantine_table_uri)

    def _quarantines(self) -> bool:
        return any(action == "quarantine" for _, action in self.expectations.values())

    def _check_quarantine(self) -> None:
        """Before any work: the quarantine table, as the connection resolves it, is not the target."""
        if self._quarantines() and self.quarantine_table_uri is not None:
            _expectations.same_table(self.hook, self.table_uri, self.quarantine_table_uri)

    def _checked(
        self, spark: SparkSession, context: Context, df: DataFrame, txn: tuple[str, int]
    ) -> tuple[DataFrame, dict[str, int], dict[str, Any] | None]:
        """The source split by the expectations (the quarantine committed first, with `txn`), its
        metrics and report."""
        if not self.expectations:
            return df, {}, None
        return _expectations.apply(
            spark, df, self.expectations, hook=self.hook, quarantine_table_uri=self.quarantine_table_uri,
            txn=txn, tags={"owner": run_owner(context)},
        )  # fmt: skip

    def lineage_inputs(self) -> list[str]:
        """OpenLineage: a `source_path` is an input; a callable or SQL source cannot be named."""
        return [self.source_path] if self.source_path else []

    def _source_df(self, spark: SparkSession, context: Context) -> DataFrame:
        if callable(self.source):
            return self.source(spark, context)
        if isinstance(self.source, str):  # SQL is rendered here: a callable source must not be
            return spark.sql(self.render_template(self.source, context))  # (it is not a template field)
        assert self.source_path is not None
        return spark.read.format(self.source_format).options(**self.source_options).load(self.source_path)


class TxnLogSparkWriteOperator(_SourceMixin, _SparkOperator):
    """Append or overwrite rows (idempotent across retries). Creates the table if it is missing.

    :param mode: "append" or "overwrite" (`WriteMode`). Templated.
    :param replace_where: overwrite only rows matching it (needs mode "overwrite"). Templated.
    :param partition_by: partition columns when the table is created by this task.
    :param merge_schema: add new nullable columns of the source to the table.
    :param expectations: {name: expression or (expression, "fail" | "drop" | "quarantine")}: row rules
        of this write (operators/_expectations.py); :param quarantine_table_uri: where quarantined rows go.
    """

    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "source_path", "replace_where", "mode")

    def __init__(
        self,
        *,
        source: SourceFn | str | None = None,
        source_path: str | None = None,
        source_format: str = "parquet",
        source_options: Mapping[str, str] | None = None,
        mode: WriteMode = "append",
        partition_by: Sequence[str] | None = None,
        replace_where: str | None = None,
        merge_schema: bool = False,
        expectations: Mapping[str, str | tuple[str, str]] | None = None,
        quarantine_table_uri: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._init_source(source, source_path, source_format, source_options)
        self._init_expectations(expectations, quarantine_table_uri)
        self.mode = mode
        self.partition_by = column_names("partition_by", partition_by)
        self.replace_where = replace_where
        self.merge_schema = merge_schema
        if not renders_later(mode) and not renders_later(replace_where):
            self._check_mode()

    def _check_mode(self) -> None:
        """Before any work: a missing table would otherwise be created before Spark refuses the mode."""
        check_choice("mode", self.mode, WriteMode)
        if self.replace_where is not None and self.mode != "overwrite":
            raise invalid(f"replace_where needs mode 'overwrite'; got mode {self.mode!r}")

    def execute(self, context: Context) -> dict[str, Any]:
        self._check_mode()  # templated: rendered by now
        self._check_quarantine()
        txn = idempotency_txn(context, f"{self.dag_id}.{self.task_id}")
        with self._session() as spark:
            rows, metrics, report = self._checked(spark, context, self._source_df(spark, context), txn)
            result = self._write(spark, context, rows, metrics, txn)
        if result.skipped:
            self.log.info(
                "write already committed as version %s by an earlier try: nothing to do", result.version
            )
        more = {"expectations": report} if report is not None else None
        self.emit(context, None if result.skipped else result.version, "WRITE", more=more)  # a re-run: none
        return {
            "version": result.version,
            "num_files": result.num_files,
            "num_rows": result.num_rows,
            "num_bytes": result.num_bytes,
            "skipped": result.skipped,
            **(more or {}),
        }

    def _write(
        self,
        spark: SparkSession,
        context: Context,
        df: DataFrame,
        metrics: Mapping[str, int],
        txn: tuple[str, int],
    ) -> WriteResult:
        """The write; a missing table is created by it (version 0, one commit, as Delta does). When
        another writer creates the table first (two first writes racing), an append runs again into
        that table (its schema and partitioning then decide, as for any later write); an overwrite
        fails rather than replace what the other writer just wrote."""
        from airflow_txnlog.engine import (  # noqa: PLC0415 - no pyarrow at parse time
            TableCreatedConcurrentlyError,
            TableExistsError,
            TableNotFoundError,
        )
        from airflow_txnlog.spark.schemas import to_arrow_schema  # noqa: PLC0415

        def write(st: SparkTable) -> WriteResult:
            return st.write(
                df, mode=self.mode, replace_where=self.replace_where, merge_schema=self.merge_schema, txn=txn,
                metrics=metrics,
            )  # fmt: skip

        try:
            st = self._open(spark, context)
        except TableNotFoundError:
            schema = to_arrow_schema(df.schema)
            try:
                table = self.hook.create_table(
                    self.table_uri, schema=schema, partition_by=self.partition_by, defer=True
                )
                return write(self._open(spark, context, table))
            except (TableExistsError, TableCreatedConcurrentlyError):
                if self.mode != "append":  # an overwrite would replace what the other writer just wrote
                    raise
                self.log.info("another writer created %s first: appending to that table", self.table_uri)
                st = self._open(spark, context)
        return write(st)


class TxnLogSparkDeleteOperator(_SparkOperator):
    """Delete rows matching `predicate` (Spark SQL; all rows when None). No match: no new version."""

    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "predicate")

    def __init__(self, *, predicate: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.predicate = predicate

    def execute(self, context: Context) -> dict[str, Any]:
        with self._session() as spark:
            result = self._open(spark, context).delete(self.predicate)
        self.emit(context, result.version, "DELETE")
        return dml_xcom(result)


class TxnLogSparkUpdateOperator(_SparkOperator):
    """Set columns (`{"col": "<SQL expression>"}`) on rows matching `predicate`."""

    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "predicate", "set")

    def __init__(self, *, set: Mapping[str, str], predicate: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.set = str_mapping("set", set)
        self.predicate = predicate

    def execute(self, context: Context) -> dict[str, Any]:
        self.set = str_mapping("set", self.set)  # templated: rendered by now
        with self._session() as spark:
            result = self._open(spark, context).update(self.predicate, self.set)
        self.emit(context, result.version, "UPDATE")
        return dml_xcom(result)


class TxnLogSparkMergeOperator(_SourceMixin, _SparkOperator):
    """MERGE a source into the table.

    :param on: the join condition over the aliases, e.g. "t.id = s.id".
    :param when_matched_update: {"col": "s.col", ...} or "*"; :param when_matched_update_condition:.
    :param when_matched_delete: True, or a condition string.
    :param when_not_matched_insert: {"col": "s.col", ...} or "*".
    :param when_not_matched_by_source_update: {"col": "SQL over t"} for target rows the source
        lacks; :param when_not_matched_by_source_update_condition:.
    :param when_not_matched_by_source_delete: True, or a condition over the target (e.g. a full
        sync: delete the target rows the source no longer has).
    """

    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "source_path", "on")

    def __init__(
        self,
        *,
        on: str,
        source: SourceFn | str | None = None,
        source_path: str | None = None,
        source_format: str = "parquet",
        source_options: Mapping[str, str] | None = None,
        source_alias: str = "s",
        target_alias: str = "t",
        when_matched_update: Mapping[str, str] | str | None = None,
        when_matched_update_condition: str | None = None,
        when_matched_delete: bool | str = False,
        when_not_matched_insert: Mapping[str, str] | str | None = None,
        when_not_matched_by_source_update: Mapping[str, str] | None = None,
        when_not_matched_by_source_update_condition: str | None = None,
        when_not_matched_by_source_delete: bool | str = False,
        expectations: Mapping[str, str | tuple[str, str]] | None = None,
        quarantine_table_uri: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._init_source(source, source_path, source_format, source_options)
        self._init_expectations(expectations, quarantine_table_uri)
        self.on, self.source_alias, self.target_alias = on, source_alias, target_alias
        self.when_matched_update = _clause("when_matched_update", when_matched_update)
        self.when_matched_update_condition = when_matched_update_condition
        self.when_matched_delete = _delete_clause("when_matched_delete", when_matched_delete)
        self.when_not_matched_insert = _clause("when_not_matched_insert", when_not_matched_insert)
        by_source = "when_not_matched_by_source_update"
        self.when_not_matched_by_source_update = (
            None
            if when_not_matched_by_source_update is None
            else str_mapping(by_source, when_not_matched_by_source_update)
        )
        if (
            when_not_matched_by_source_update_condition is not None
            and when_not_matched_by_source_update is None
        ):
            raise invalid(
                "when_not_matched_by_source_update_condition needs when_not_matched_by_source_update"
            )
        self.when_not_matched_by_source_update_condition = when_not_matched_by_source_update_condition
        self.when_not_matched_by_source_delete = _delete_clause(
            "when_not_matched_by_source_delete", when_not_matched_by_source_delete
        )

    def execute(self, context: Context) -> dict[str, Any]:
        self._check_quarantine()
        with self._session() as spark:
            st = self._open(spark, context)
            txn = idempotency_txn(context, f"{self.dag_id}.{self.task_id}")  # (the quarantine's only)
            rows, metrics, report = self._checked(spark, context, self._source_df(spark, context), txn)
            builder = st.merge(
                rows,
                self.on,
                source_alias=self.source_alias,
                target_alias=self.target_alias,
            )
            # The delete clause goes first: after an unconditional update no clause of its kind applies.
            if self.when_matched_delete:
                cond = self.when_matched_delete if isinstance(self.when_matched_delete, str) else None
                builder = builder.when_matched_delete(condition=cond)
            if self.when_matched_update is not None:
                builder = builder.when_matched_update(
                    set=self.when_matched_update, condition=self.when_matched_update_condition
                )
            if self.when_not_matched_insert is not None:
                builder = builder.when_not_matched_insert(values=self.when_not_matched_insert)
            if self.when_not_matched_by_source_delete:
                delete = self.when_not_matched_by_source_delete
                builder = builder.when_not_matched_by_source_delete(
                    condition=delete if isinstance(delete, str) else None
                )
            if self.when_not_matched_by_source_update is not None:
                builder = builder.when_not_matched_by_source_update(
                    set=self.when_not_matched_by_source_update,
                    condition=self.when_not_matched_by_source_update_condition,
                )
            result = builder.execute(metrics=metrics)
        more = {"expectations": report} if report is not None else None
        self.emit(context, result.version, "MERGE", more=more)
        return {**dml_xcom(result), **(more or {})}
