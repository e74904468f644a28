"""`df.write.format("txnlog")`: executors write the files, the driver makes one commit.

    driver (`TxnlogWriter.__init__`, before any task): the options are checked; the table (if it
        exists) is opened and must be writable by this engine; the DataFrame's schema is matched to
        the table's (case-insensitive names; `mergeSchema` adds new columns, `overwriteSchema` with
        mode overwrite replaces the schema); `replaceWhere` must name partition columns only; a
        `txnAppId` / `txnVersion` pair the table already holds turns the whole write into a no-op
    executors (`write`): the Arrow batches are conformed to the table schema (the engine's
        `conform_to_schema`), checked against `replaceWhere`, and written as parquet straight to
        their final `col=value/part-....parquet` paths by the engine's writer (`write_data_files`:
        stats from the batches, physical names on column-mapped tables), in runs of at most
        `maxRowsPerFile` rows; the task returns its `add` actions. A task that fails deletes the
        files it wrote.
    driver (`commit`): ONE engine transaction: the adds, the removes (mode overwrite: every live file,
        or with `replaceWhere` the files of the matching partitions), the new metadata, the txn id;
        a table that does not exist yet is created by this very commit (version 0 carries the
        protocol and metaData from the DataFrame's schema and `partitionBy`, as Delta's first
        write to a new path; `Table.create(defer=True)`). A failed commit deletes the new files
        unless it may have landed.
    driver (`abort`): every file the successful tasks wrote is deleted.

No staging folder, no footer reads, no moves: the only storage calls on the driver are the log's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from airflow_txnlog.engine import (
    AddFile,
    CommitConflictError,
    CommitRetriesExceededError,
    ConcurrentTransactionError,
    InvalidArgumentError,
    Metadata,
    SchemaMismatchError,
    Table,
    TableNotFoundError,
    Transaction,
    UnsupportedExpressionError,
    UnsupportedFeatureError,
    parse_predicate,
    schema_from_json,
    schema_to_json,
)
from airflow_txnlog.engine.spi import (
    ColumnNames,
    RowRule,
    check_row_rules,
    check_variant_values,
    column_defaults,
    compile_row_rules,
    conform_rows,
    generated_columns,
    identity_columns,
    row_rules,
    row_tracking,
    storage_for,
    uses_variant,
    with_new_fields,
    write_data_files,
)
from airflow_txnlog.spark.errors import carrying, checked
from airflow_txnlog.spark.schemas import to_arrow_schema
from airflow_txnlog.spark.source.one_file import runs, write_one_file
from airflow_txnlog.spark.source.options import WriteOptions


@dataclass(frozen=True)
class Plan:
    """What every task needs to write (picklable)."""

    uri: str
    storage_options: Mapping[str, Any] | None = field(repr=False)
    schema: pa.Schema  # the table schema after this write (logical names)
    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str]
    names: ColumnNames | None
    renames: Mapping[str, str]  # DataFrame column -> table column (case differs)
    replace_where: str | None
    max_rows: int
    prefix: str = ""  # a folder of the table for the files (`_change_data/`)
    # the table's CHECK constraints and invariants, checked on the executors by the engine's Arrow
    # evaluator (a files-only write has none: SparkTable checked them with Spark, `spark.features.rules`)
    rules: tuple[RowRule, ...] = ()
    generated: Mapping[str, str] = field(default_factory=dict)  # columns the rows may lack: computed
    defaults: Mapping[str, str] = field(default_factory=dict)  # columns the rows may lack: their defaults
    check_variants: bool = False  # variant bytes that did not come from Spark's VariantType: validated
    one_file: bool = False  # each task's rows as exactly one file (a rewrite's: spark.source.one_file)


@dataclass(frozen=True)
class Written(WriterCommitMessage):
    adds: tuple[AddFile, ...]


def _variants_unchecked(table: pa.Schema, incoming: pa.Schema) -> bool:
    """Whether a variant column of the table gets its bytes from something other than Spark's own
    VariantType (a struct of binaries `value` and `metadata`): those are validated on write."""
    by_lower = {f.name.lower(): f for f in incoming}
    for f in table:
        src = by_lower.get(f.name.lower())
        if src is not None and src.type != f.type and uses_variant(schema_to_json(pa.schema([f]))):
            return True
    return False


def _evolved(
    current: pa.Schema,
    incoming: pa.Schema,
    options: WriteOptions,
    generated: Mapping[str, str],
    defaults: Mapping[str, str],
) -> tuple[pa.Schema, dict[str, str]]:
    """(the table schema after the write, DataFrame column -> table column renames)."""
    by_lower = {n.lower(): n for n in current.names}
    renames = {
        n: by_lower[n.lower()] for n in incoming.names if n.lower() in by_lower and by_lower[n.lower()] != n
    }
    extra = [f for f in incoming if f.name.lower() not in by_lower]
    if extra and not options.merge_schema:
        raise SchemaMismatchError(
            f"txnlog: columns {[f.name for f in extra]} are not in the table schema {current.names}. "
            'Help: .option("mergeSchema", "true") adds them'
        )
    # (new columns come as plain nullable columns: a rule on one would not hold for the rows already there)
    target = pa.schema(list(current) + [f.with_nullable(True).remove_metadata() for f in extra])
    probe = incoming.empty_table().rename_columns([renames.get(n, n) for n in incoming.names])
    conform_rows(
        probe, target, generated, defaults
    )  # a type or NOT NULL mismatch fails here, before any task
    return target, renames


class TxnlogWriter(DataSourceArrowWriter):
    """See the module docstring."""

    def __init__(self, options: WriteOptions, schema: StructType, overwrite: bool) -> None:
        self.options = options
        self.overwrite = overwrite
        self.skip = False
        self.read_version = -1
        self.metadata: Metadata | None = None
        incoming = to_arrow_schema(schema)
        if options.manifest is not None:  # SparkTable's own file writes: no table, no commit here
            self.exists = True
            self.plan = files_plan(options)
            return
        try:
            table: Table | None = Table.open(options.path, storage_options=options.storage_options or None)
        except TableNotFoundError:
            table = None
        self.exists = table is not None
        if table is None:
            self.plan = self._new_table_plan(incoming)
            return
        snap = table.snapshot()
        table.check_writable()
        seen = snap.txn_version(options.txn[0]) if options.txn is not None else None
        if options.txn is not None and seen is not None and seen >= options.txn[1]:
            self.skip = True  # this write already committed: tasks write nothing, commit is a no-op
        identities = identity_columns(snap.metadata)
        if identities:  # (SparkTable's own file writes, numbered before, do not come here)
            # Numbering needs the rows materialized and counted first (spark.features.identity), which a
            # data source's tasks cannot do: they see neither the other tasks nor their count.
            raise UnsupportedFeatureError(
                f"txnlog: the table has identity column {identities[0].column!r}, which the data source "
                "cannot number; nothing was written. Help: SparkTable(spark, uri).write(df) numbers "
                "them (a stream: foreachBatch with SparkTable.write(df, txn=(query_id, batch_id)))",
                feature="identityColumns",
            )
        self.read_version = snap.version
        self.metadata = snap.metadata
        self.plan = self._existing_table_plan(snap, incoming)

    def _new_table_plan(self, incoming: pa.Schema) -> Plan:
        incoming = _nullable(incoming)  # (Delta creates tables from DataFrames as nullable too)
        ruled = [f.name for f in incoming if any(k.startswith(b"delta.") for k in (f.metadata or {}))]
        if ruled:  # (an invariant, generation or identity key: create the table with them first)
            raise InvalidArgumentError(
                f"txnlog: column {ruled[0]!r} of the DataFrame carries Delta column metadata (a rule); a "
                "table is not created from it by a write. Help: create it first with Table.create / "
                "SparkTable.create (generated_columns=, identity_columns=), then write"
            )
        parts = tuple(self.options.partition_by or ())
        missing = [c for c in parts if c not in incoming.names]
        if missing:
            raise InvalidArgumentError(
                f"txnlog: partitionBy columns {missing} are not in the data {incoming.names}"
            )
        self._check_replace_where(incoming, parts)
        return Plan(
            self.options.path, self.options.storage_options or None, incoming, parts, {}, None, {},
            self.options.replace_where, self.options.max_rows,
        )  # fmt: skip

    def _existing_table_plan(self, snap: Any, incoming: pa.Schema) -> Plan:
        parts = tuple(snap.partition_columns)
        if self.options.partition_by is not None and list(self.options.partition_by) != list(parts):
            raise InvalidArgumentError(
                f"txnlog: partitionBy {list(self.options.partition_by)} differs from the table's partition "
                f"columns {list(parts)}; a table's partitioning cannot change"
            )
        if self.options.overwrite_schema:
            if not self.overwrite or snap.column_names is not None:
                raise InvalidArgumentError(
                    "txnlog: overwriteSchema needs mode('overwrite') and a table without column mapping"
                )
            schema, renames = incoming, dict[str, str]()
            self.metadata = dataclasses.replace(snap.metadata, schema_string=schema_to_json(incoming))
        else:
            generated = generated_columns(snap.metadata, snap.protocol)
            defaults = column_defaults.enforced(snap.metadata, snap.protocol)
            schema, renames = _evolved(snap.schema, incoming, self.options, generated, defaults)
            if schema != snap.schema:
                self.metadata = with_new_fields(snap.metadata, schema)
                schema = schema_from_json(self.metadata.schema_string)
        self._check_replace_where(schema, parts)
        names = ColumnNames.of(self.metadata) if self.metadata is not None else snap.column_names
        rules = tuple(row_rules(self.metadata or snap.metadata, snap.protocol))
        computed = generated_columns(self.metadata or snap.metadata, snap.protocol)
        try:
            compile_row_rules(rules, schema)  # one the executors cannot check fails here, before any task
        except UnsupportedExpressionError as exc:
            raise UnsupportedExpressionError(
                f"txnlog: {exc} Help: write with SparkTable.write, which checks the table's rules with "
                "Spark SQL"
            ) from exc
        return Plan(
            self.options.path, self.options.storage_options or None, schema, parts,
            dict(snap.properties), names, renames, self.options.replace_where, self.options.max_rows,
            rules=rules, generated=computed, check_variants=_variants_unchecked(schema, incoming),
            defaults=column_defaults.enforced(self.metadata or snap.metadata, snap.protocol),
        )  # fmt: skip

    def _check_replace_where(self, schema: pa.Schema, parts: Sequence[str]) -> None:
        rw = self.options.replace_where
        if rw is None:
            return
        if not self.overwrite:
            raise InvalidArgumentError('txnlog: replaceWhere needs mode("overwrite")')
        columns = parse_predicate(rw, schema).columns
        if not columns <= set(parts):
            raise InvalidArgumentError(
                f"txnlog: replaceWhere {rw!r} names data columns {sorted(columns - set(parts))}; the data "
                "source replaces whole partitions only. Help: SparkTable.write(replace_where=...) "
                "rewrites files for a predicate on data columns"
            )

    @carrying
    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        if self.skip:
            return Written(())
        return Written(tuple(write_task(self.plan, iterator)))

    @carrying
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        adds = [a for m in messages if isinstance(m, Written) for a in m.adds]
        if self.options.manifest is not None:
            lines = b"".join(json.dumps(a.to_wire()).encode() + b"\n" for a in adds)
            storage_for(self.plan.uri, self.plan.storage_options).write(self.options.manifest, lines)
        elif not self.skip:
            commit_write(self, adds, self.options.txn)

    @carrying
    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # Spark also aborts when commit() raised, even after a put whose outcome is unknown: the
        # files are deleted only when no version of the table holds them
        abort_files(self.plan, [a for m in messages if isinstance(m, Written) for a in m.adds])


def files_plan(options: WriteOptions) -> Plan:
    """The plan of a files-only write, as `spark.write.stage.write_files` describes it: the table schema
    (mapping metadata included) plus any extra columns (a change file's `_change_type`), the
    partition columns, the properties that choose the stats, and the folder prefix."""
    raw = json.loads(options.files_plan or "{}")
    meta = Metadata(
        id="", schema_string=raw["schema"], partition_columns=tuple(raw["partitionColumns"]),
        configuration=dict(raw["configuration"]),
    )  # fmt: skip
    extra = schema_from_json(raw["extra"]) if raw.get("extra") else pa.schema([])
    schema = pa.schema(list(schema_from_json(raw["schema"])) + list(extra))
    return Plan(
        options.path, options.storage_options or None, schema, meta.partition_columns,
        meta.configuration, ColumnNames.of(meta), {}, None, options.max_rows, raw.get("prefix", ""),
        one_file=bool(raw.get("oneFilePerTask")),
    )  # fmt: skip


def _nullable_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_nullable_type(f.type)).with_nullable(True) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = t.value_field.with_type(_nullable_type(t.value_type)).with_nullable(True)
        return pa.list_(inner) if pa.types.is_list(t) else pa.large_list(inner)
    if pa.types.is_map(t):
        item = t.item_field.with_type(_nullable_type(t.item_type)).with_nullable(True)
        return pa.map_(t.key_field, item)
    return t


def _nullable(schema: pa.Schema) -> pa.Schema:
    """`schema` with every field nullable (a map's keys stay NOT NULL, as Spark requires)."""
    return pa.schema([f.with_type(_nullable_type(f.type)).with_nullable(True) for f in schema])


def write_task(plan: Plan, batches: Iterator[pa.RecordBatch]) -> list[AddFile]:
    """Write one task's rows (see the module docstring); on failure, delete what it wrote."""
    storage = storage_for(plan.uri, plan.storage_options)
    conf = dict(plan.configuration)
    written: list[AddFile] = []
    pending: list[pa.RecordBatch] = []
    rows = 0
    rules = compile_row_rules(plan.rules, plan.schema)
    if plan.one_file and not plan.prefix:
        pieces = (prepared(plan, conf, run, rules) for run in runs(batches))
        return write_one_file(
            storage, pieces, schema=plan.schema, partition_columns=plan.partition_columns, conf=conf,
            names=plan.names,
        )  # fmt: skip
    try:
        for batch in batches:
            if batch.num_rows:
                pending.append(batch)
                rows += batch.num_rows
            if rows >= plan.max_rows:
                written += _flush(plan, storage, conf, pending, rules)
                pending, rows = [], 0
        if pending:
            written += _flush(plan, storage, conf, pending, rules)
    except BaseException:
        for a in written:
            with contextlib.suppress(OSError):
                storage.delete(a.path)
        raise
    return written


def _flush(
    plan: Plan, storage: Any, conf: dict[str, str], batches: list[pa.RecordBatch], rules: Sequence[Any]
) -> list[AddFile]:
    data = prepared(plan, conf, batches, rules)
    return write_data_files(
        storage,
        data,
        list(plan.partition_columns),
        conf,
        max_rows_per_file=plan.max_rows,
        names=plan.names,
        prefix=plan.prefix,
        hidden=[h for h in row_tracking.hidden_columns(conf) if h in data.column_names],
    )


def prepared(
    plan: Plan, conf: dict[str, str], batches: list[pa.RecordBatch], rules: Sequence[Any]
) -> pa.Table:
    """A task's batches as the table's rows (names, types, generated columns), its rules checked."""
    data = pa.Table.from_batches(batches)
    if plan.renames:
        data = data.rename_columns([plan.renames.get(n, n) for n in data.column_names])
    data = conform_rows(data, plan.schema, plan.generated, plan.defaults)  # (what the rows lack: computed)
    if plan.check_variants:
        check_variant_values(data)
    check_row_rules(rules, data)
    if plan.replace_where is not None:
        predicate = parse_predicate(plan.replace_where, plan.schema)
        # (a NULL result is not TRUE: such a row does not satisfy the predicate either)
        if predicate.filter(data).num_rows != data.num_rows:
            raise InvalidArgumentError(
                checked(
                    f"a written row does not satisfy replaceWhere {plan.replace_where!r}; "
                    "nothing was committed"
                )
            )
    return data


def delete_files(plan: Plan, adds: Sequence[AddFile]) -> None:
    storage = storage_for(plan.uri, plan.storage_options)
    for a in adds:
        with contextlib.suppress(OSError):
            storage.delete(a.path)


def landed(plan: Plan, adds: Sequence[AddFile]) -> bool:
    """Whether the latest version of the table holds any of `adds` (a commit of them landed)."""
    if not adds:
        return False
    try:
        live = set(Table.open(plan.uri, storage_options=plan.storage_options).snapshot().file_paths())
    except TableNotFoundError:
        return False
    return any(a.path in live for a in adds)


def abort_files(plan: Plan, adds: Sequence[AddFile]) -> None:
    """Delete a failed write's files, unless a commit of them landed after all."""
    if not landed(plan, adds):
        delete_files(plan, adds)


def txn_version(plan: Plan, app_id: str) -> int | None:
    """The latest txn version the table holds for `app_id` (None: none, or no table yet)."""
    try:
        return Table.open(plan.uri, storage_options=plan.storage_options).snapshot().txn_version(app_id)
    except TableNotFoundError:
        return None


def committed(plan: Plan, txn: tuple[str, int]) -> bool:
    """Whether the table already holds txn `txn` (this write, or a later one of the same app)."""
    seen = txn_version(plan, txn[0])
    return seen is not None and seen >= txn[1]


def commit_write(writer: TxnlogWriter, adds: list[AddFile], txn: tuple[str, int] | None) -> None:
    """The one commit of a data source write (see the module docstring)."""
    plan = writer.plan
    try:
        t, removed = _transaction(writer, adds, txn)
    except BaseException:
        delete_files(plan, adds)  # nothing was committed
        raise
    try:
        _commit(t, writer, adds, removed)
    except ConcurrentTransactionError:
        abort_files(plan, adds)  # (kept if our own put landed and was reported as a lost race)
        if txn is not None and committed(plan, txn):
            return  # the same idempotent write won concurrently: ours stays out
        raise
    except BaseException as exc:
        # only when the commit certainly did not happen: an I/O error during the put may hide a
        # commit that landed, and deleting its files would corrupt that version
        if t.attempts == 0 or isinstance(exc, CommitConflictError | CommitRetriesExceededError):
            delete_files(plan, adds)
        raise


def _transaction(
    writer: TxnlogWriter, adds: list[AddFile], txn: tuple[str, int] | None
) -> tuple[Transaction, list[AddFile]]:
    """The staged commit and the files it removes. A new table is created deferred: this commit is
    its version 0, with the protocol and metaData (as Delta's first write to a new path)."""
    plan = writer.plan
    if writer.exists:
        table = Table.open(plan.uri, storage_options=plan.storage_options)
    else:
        table = Table.create(
            plan.uri, schema=plan.schema, partition_by=plan.partition_columns,
            storage_options=plan.storage_options, defer=True,
        )  # fmt: skip
    mode = "Overwrite" if writer.overwrite else "Append"
    params = {"mode": mode, "partitionBy": json.dumps(list(plan.partition_columns))}
    if plan.replace_where is not None:
        params["predicate"] = json.dumps([plan.replace_where])
    snapshot = table.snapshot(version=writer.read_version) if writer.exists else None
    t = table.transaction("WRITE", params, snapshot=snapshot)
    if writer.exists and writer.metadata is not None and writer.metadata != t.snapshot.metadata:
        t.update_metadata(writer.metadata)
    removed = t.read_files(plan.replace_where) if writer.overwrite and writer.exists else []
    for f in removed:
        t.remove(f)
    for a in adds:
        t.add(a)
    t.rows_checked()  # (every task checked plan.rules, which came from the version `t` reads)
    if txn is not None:
        t.set_app_transaction(*txn)
    return t, removed


def _commit(t: Any, writer: TxnlogWriter, adds: list[AddFile], removed: list[AddFile]) -> None:
    metrics = {
        "numFiles": len(adds),
        "numOutputRows": sum(a.num_records or 0 for a in adds),
        "numOutputBytes": sum(a.size for a in adds),
    }
    if writer.overwrite:
        metrics["numRemovedFiles"] = len(removed)
    t.rows_preserved()  # (row tracking: whole files replaced, new rows inserted, none copied)
    t.commit(metrics=metrics)
