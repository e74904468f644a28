"""Which files an operation must look at, and which of them actually hold matching rows.

A predicate is SQL. Spark evaluates it on rows (any Spark SQL is accepted there); the engine's
parser (`parse_predicate`, a typed subset: comparisons, IN, BETWEEN, IS NULL, AND/OR/NOT, literals)
reads it too, for two purposes:

- **classification**, the seed article's three cases of DELETE:
    `ALL`       no predicate: every live file;
    `PARTITION` parsed, and every column it names is a partition column: decided exactly from each
                file's partition values (evaluated with pyarrow on the driver), no data read;
    `DATA`      anything else: data must be read;
- **pruning** for `DATA`: `Transaction.read_files(predicate)` keeps only files whose partition values
  and min/max/null-count stats admit a match, and records the predicate for conflict detection. A
  predicate the engine cannot parse still works (Spark evaluates it) but prunes nothing and counts as
  a read of the whole table.

`matched_files` then runs one Spark job over the candidates: rows where the predicate is TRUE,
grouped by `_metadata.file_path` -> {file: matching rows}. Only those files are rewritten.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F

from airflow_txnlog.engine import (
    AddFile,
    Predicate,
    PredicateError,
    Transaction,
    UnsupportedExpressionError,
    parse_predicate,
)
from airflow_txnlog.engine.spi import parse_partition_value
from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.read.scan import FILE_COL, scan


class Case(enum.Enum):
    ALL = "all"
    PARTITION = "partition"
    DATA = "data"


@dataclass(frozen=True)
class Plan:
    case: Case
    predicate: str | None
    parsed: Predicate | None


def classify(predicate: str | None, ctx: TableContext) -> Plan:
    """The case of `predicate` on this table (see the module docstring)."""
    if predicate is None:
        return Plan(Case.ALL, None, None)
    try:
        parsed = parse_predicate(predicate, ctx.schema)
    except (PredicateError, UnsupportedExpressionError):  # (Spark evaluates what the engine cannot)
        return Plan(Case.DATA, predicate, None)
    if parsed.columns and parsed.columns <= set(ctx.partition_columns):
        return Plan(Case.PARTITION, predicate, parsed)
    return Plan(Case.DATA, predicate, parsed)


def read_candidates(txn: Transaction, plan: Plan) -> list[AddFile]:
    """Live files that may hold matching rows, recorded as read by `txn`."""
    if plan.case is Case.ALL or plan.parsed is None:
        return txn.read_files()
    files = txn.read_files(plan.predicate)
    if plan.case is Case.PARTITION:
        return partition_matches(files, plan.parsed, txn.snapshot.schema)
    return files


def partition_matches(files: Sequence[AddFile], parsed: Predicate, schema: pa.Schema) -> list[AddFile]:
    """Files whose partition values make `parsed` TRUE (SQL three-valued logic; NULL is no match)."""
    if not files:
        return []
    columns = sorted(parsed.columns)
    arrays = [
        pa.array(
            [parse_partition_value(f.partition_values.get(c), schema.field(c).type) for f in files],
            type=schema.field(c).type,
        )
        for c in columns
    ]
    index = pa.array(range(len(files)), type=pa.int64())
    table = pa.Table.from_arrays([*arrays, index], names=[*columns, "__index"])
    kept = parsed.filter(table).column("__index").to_pylist()
    return [files[i] for i in kept]


def is_true(sql: str | None) -> Column:
    """A Spark condition that is TRUE exactly where `sql` is TRUE (NULL counts as false)."""
    if sql is None:
        return F.lit(True)
    return F.coalesce(F.expr(sql), F.lit(False))


def matched_files(ctx: TableContext, files: Sequence[AddFile], condition: Column) -> dict[str, int]:
    """{file URI: rows where `condition` holds}, for the files that have any (one Spark job)."""
    if not files:
        return {}
    rows = scan(ctx, files, with_file=True).filter(condition).groupBy(FILE_COL).count().collect()
    return {ctx.file_key(r[FILE_COL]): int(r["count"]) for r in rows}


def select_files(files: Sequence[AddFile], ctx: TableContext, keys: dict[str, int]) -> list[AddFile]:
    return [f for f in files if ctx.uri(f) in keys]


def total_records(files: Sequence[AddFile]) -> int | None:
    """Rows in `files` according to their stats, less the rows their deletion vectors delete
    (`numRecords` counts a file's rows before its DV); None if a file has no stats."""
    total = 0
    for f in files:
        n = f.num_records
        if n is None:
            return None
        total += n - int((f.deletion_vector or {}).get("cardinality") or 0)
    return total


def exact_in_arrow(t: pa.DataType, *, timestamps: bool, floats: bool = False) -> bool:
    """Whether values of type `t` compare in-process as this Spark session compares them (the
    in-process levers' test): integers, decimals, strings, booleans and dates; timestamps when the
    caller allows them (a zone-less timestamp literal depends on the session zone, the engine's is
    UTC); floats when the caller evaluates with the engine's SQL room (Spark's NaN order and
    -0.0 = 0.0: a predicate), never for Arrow's joins (a MERGE's keys), which hash them apart."""
    if pa.types.is_timestamp(t):
        return timestamps
    if pa.types.is_floating(t):
        return floats
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_decimal(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
    )
