"""Identity columns on Spark paths: Spark numbers the rows, per partition, past the high-water mark.

    1. `stable(df)`: the rows are materialized once (`localCheckpoint`), so the counting job and
       the write see the same rows in the same partitions in the same order, and a write that
       lost the race to another identity writer numbers them again without running its source
       again;
    2. `number(ctx, df, ...)`: one Spark job counts, per partition, its rows, the largest index of
       a row that needs a value (a new row whose identity column is NULL; a new row is every row
       of a write and the inserted rows of a MERGE), and the explicit values new rows carry for a
       GENERATED ALWAYS column (any: `ConstraintViolationError`, nothing written). The driver
       turns the counts into offsets (the rows of the partitions before); the row at index `i`
       of partition `p` gets `first + step * (offset[p] + i)`, computed in the write job itself:
       no row moves, no single task numbers everything.
Invariants: every row has its own global index, so no two rows share a value; every value is
`first + k*step` with k >= 0, so past the mark in the step's direction; the new mark is the value
of the largest index numbered, known (and checked against BIGINT's range) on the driver before a
byte is written. Values are unique, not consecutive: rows that need none (explicit values,
MERGE's copied and updated rows) leave gaps, as Delta on Spark's per-partition strides do.
A commit that lost only to other identity writers (`lost_identity_race`) raises `Renumber`;
`retrying` runs the operation again on a fresh transaction, past the winners' marks (Delta on
Spark fails such a writer instead).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TypeVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from airflow_txnlog.engine import (
    CommitRetriesExceededError,
    MetadataChangedError,
    SchemaMismatchError,
    Table,
    Transaction,
)
from airflow_txnlog.engine.spi import Identity, lost_identity_race
from airflow_txnlog.spark.context import TableContext

ATTEMPTS = 20  # commits lost to other identity writers before giving up (each one reruns Spark jobs)
_PART, _INDEX = "_txnlog_identity_part", "_txnlog_identity_index"
_ROW_BITS = 33  # monotonically_increasing_id() = partition index << 33 | row index in the partition
_EXACT = "decimal(38,0)"  # (the arithmetic never wraps, whatever spark.sql.ansi.enabled says)
T = TypeVar("T")


class Renumber(Exception):
    """The commit lost only to other identity writers: run the operation again (`retrying`)."""


def stable(df: DataFrame) -> DataFrame:
    """`df` materialized on the executors (see the module docstring, step 1)."""
    return df.localCheckpoint(eager=True)


def with_columns(ctx: TableContext, df: DataFrame) -> DataFrame:
    """`df` with each identity column it lacks added as NULL (a write leaves them out); one it has
    must be BIGINT, as the table's."""
    by_lower = {f.name.lower(): f for f in df.schema.fields}
    for ident in ctx.identities:
        f = by_lower.get(ident.column.lower())
        if f is None:
            df = df.withColumn(ident.column, F.lit(None).cast(LongType()))
        elif not isinstance(f.dataType, LongType):
            raise SchemaMismatchError(
                f"column {f.name!r} has type {f.dataType.simpleString()}, the table has bigint "
                "(an identity column); nothing was written"
            )
    return df


def _column(df: DataFrame, name: str) -> str:
    return next(c for c in df.columns if c.lower() == name.lower())


def number(
    ctx: TableContext, df: DataFrame, *, new: Column | None = None
) -> tuple[DataFrame, dict[str, int]]:
    """(`df` with values in its identity columns where new rows have none, the new high-water
    marks); `df` is `stable`'s (plus narrow projections) and has every identity column
    (`with_columns`); `new`: which rows are new (None: all)."""
    for ident in ctx.identities:  # (before any job: also when every row brings its own value)
        ident.check_writable(ctx.generated)
    is_new = F.lit(True) if new is None else new
    part = F.spark_partition_id()
    index = F.monotonically_increasing_id() - F.shiftleft(part.cast("long"), _ROW_BITS)
    indexed = df.withColumn(_PART, part).withColumn(_INDEX, index)
    names = {i.column: _column(df, i.column) for i in ctx.identities}
    counts = _count(indexed, ctx.identities, names, is_new)
    offsets, largest = _offsets(counts, [i.column for i in ctx.identities])
    at = F.element_at(F.array(*(F.lit(o).cast("long") for o in offsets)), F.col(_PART) + 1)
    global_index = (at + F.col(_INDEX)).cast(_EXACT)
    marks: dict[str, int] = {}
    for ident in ctx.identities:
        top = largest[ident.column]
        if top is None:
            continue  # no row needs a value: the mark stays
        first, marks[ident.column] = ident.span(top + 1)
        value = (F.lit(first).cast(_EXACT) + F.lit(ident.step).cast(_EXACT) * global_index).cast("long")
        column = F.col(f"`{names[ident.column]}`")
        numbered = F.when(is_new & column.isNull(), value).otherwise(column)
        indexed = indexed.withColumn(names[ident.column], numbered)
    return indexed.drop(_PART, _INDEX), marks


def _count(
    indexed: DataFrame, identities: Sequence[Identity], names: dict[str, str], is_new: Column
) -> list[dict[str, int | None]]:
    """Per non-empty partition: `rows`, and per identity column its largest index to number and
    (GENERATED ALWAYS) the count of explicit values; the explicit ones refused."""
    aggregates = [F.count(F.lit(1)).alias("rows")]
    for n, ident in enumerate(identities):
        column = F.col(f"`{names[ident.column]}`")
        aggregates.append(F.max(F.when(is_new & column.isNull(), F.col(_INDEX))).alias(f"max{n}"))
        aggregates.append(F.count(F.when(is_new & column.isNotNull(), 1)).alias(f"given{n}"))
    rows = [r.asDict() for r in indexed.groupBy(_PART).agg(*aggregates).collect()]
    for n, ident in enumerate(identities):
        ident.refuse_explicit(sum(r[f"given{n}"] for r in rows))
    largest = {f"max{n}": i.column for n, i in enumerate(identities)}
    return [
        {"part": r[_PART], "rows": r["rows"], **{column: r[key] for key, column in largest.items()}}
        for r in rows
    ]


def _offsets(
    counts: list[dict[str, int | None]], columns: list[str]
) -> tuple[list[int], dict[str, int | None]]:
    """(offset of each partition index: the rows of the partitions before it; per column the largest
    global index that needs a value, None when none does)."""
    size = 1 + max((int(c["part"] or 0) for c in counts), default=0)
    rows = [0] * size
    for c in counts:
        rows[int(c["part"] or 0)] = int(c["rows"] or 0)
    offsets = [0, *itertools.accumulate(rows)][:size]
    largest: dict[str, int | None] = dict.fromkeys(columns)
    for c in counts:
        for column in columns:
            i = c[column]
            if i is not None:
                g = offsets[int(c["part"] or 0)] + int(i)
                largest[column] = g if largest[column] is None else max(g, largest[column] or 0)
    return offsets, largest


def check_lost_race(exc: MetadataChangedError, txn: Transaction, table: Table) -> None:
    """`Renumber` when `exc` lost only to other identity writers; else nothing (re-raise `exc`)."""
    if lost_identity_race(txn.snapshot.metadata, table.snapshot().metadata):
        raise Renumber(str(exc)) from exc


def on_fresh_transactions(
    table: Table, begin: Callable[[], Transaction], run: Callable[[Transaction], T]
) -> T:
    """`run(begin())`, run again on a fresh transaction while its commit loses only to other
    identity writers (whose commits change nothing but marks: a rerun is the same operation on the
    new version, as a user's retry would be)."""

    def once() -> T:
        txn = begin()
        try:
            return run(txn)
        except MetadataChangedError as exc:
            check_lost_race(exc, txn, table)
            raise

    return retrying(once)


def retrying(run: Callable[[], T]) -> T:
    """`run()`, again while it raises `Renumber` (at most `ATTEMPTS` times)."""
    for _ in range(ATTEMPTS):
        try:
            return run()
        except Renumber:
            continue
    raise CommitRetriesExceededError(
        f"other identity writers kept committing first ({ATTEMPTS} attempts); nothing was committed. "
        "Help: retry later"
    )
