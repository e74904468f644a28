"""MERGE INTO: Delta's `MergeIntoCommand` (touched files, then rewrite) on the engine.

    0. source probe (one Spark job over the source): row count, and min/max of every source column
       compared by equality with a target column in ON (`t.k = s.k` conjuncts) -> target filter
       `k >= min AND k <= max`; `read_files(filter)` prunes by partition values / stats and records
       the filter for conflict detection (no usable key: the whole table is read). When ON is only
       such equalities and the WHEN MATCHED clause (if any) has no condition, the job collects the
       source's keys instead, and step 1 runs on the driver for few, small candidates
       (`merge_local`: an Arrow join of the candidates' key columns with the source keys).
    1. touched files (one Spark job): target candidates INNER JOIN source ON <on>, one row per
       (target row, source row) pair, each tagged with the first WHEN MATCHED clause whose condition
       holds. Grouped by target row (`_metadata.file_path`, `_metadata.row_index`): a target row
       paired with several source rows is ambiguous -> `MultipleSourceRowsMatchedError` (unless the
       only matched clause is an unconditional DELETE, as in Delta). Without WHEN NOT MATCHED clauses
       only pairs some clause applies to touch a file; with them every matched pair does, so that a
       source row matching anything is seen as matched in step 2.
    2. rewrite (one Spark job): touched files LEFT (or FULL, with inserts) OUTER JOIN source; per
       row an action: matched -> first applicable clause (update / delete) or copy; target only ->
       copy; source only -> first applicable insert clause or nothing. Written with Spark; commit
       removes of the touched files + adds.
    Insert-only merges skip 1 and 2: source LEFT ANTI JOIN target candidates, appended (no removes).
    With deletion vectors (`delta.enableDeletionVectors=true`, every touched file has numRecords),
    step 2 marks the updated and deleted target rows in DVs and writes only updated + inserted rows.

The source is evaluated once per step: it should be deterministic (cache or checkpoint it
otherwise). Metrics are Delta's (numSourceRows, numTargetRowsInserted / Updated / Deleted /
Copied, numOutputRows, numTargetFilesAdded / Removed, ...). Nothing to change -> no commit.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any, Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import AddCDCFile, AddFile, InvalidArgumentError, Transaction
from airflow_txnlog.spark import change_data, deletion_vectors, merge_local
from airflow_txnlog.spark._arguments import ALL, AllColumns, all_or_sql_mapping, sql_text
from airflow_txnlog.spark._dml import dml_result, elapsed_ms, resolve_columns
from airflow_txnlog.spark.errors import MultipleSourceRowsMatchedError
from airflow_txnlog.spark.merge_keys import equality_keys, probe, probe_keys
from airflow_txnlog.spark.planning import is_true, select_files, total_records
from airflow_txnlog.spark.results import DmlResult
from airflow_txnlog.spark.scan import FILE_COL, ROW_COL, TableContext, TableHandle, scan
from airflow_txnlog.spark.schemas import conform, spark_type
from airflow_txnlog.spark.stage import delete_files, write_files

ClauseKind = Literal["update", "delete", "insert"]
_ACT = "_txnlog_action"
_T_PRESENT = "_txnlog_target"
_S_PRESENT = "_txnlog_source"


@dataclass(frozen=True)
class Clause:
    """One WHEN clause. `assignments` None means `*` until `resolved` expands it (delete: always None)."""

    kind: ClauseKind
    condition: str | None = None
    assignments: Mapping[str, str] | None = None

    @property
    def matched(self) -> bool:
        return self.kind != "insert"

    def describe(self) -> dict[str, str]:
        out: dict[str, str] = {"actionType": self.kind}
        if self.condition is not None:
            out["predicate"] = self.condition
        return out


@dataclass(frozen=True)
class MergeSpec:
    source: DataFrame
    on: str
    source_alias: str
    target_alias: str
    clauses: tuple[Clause, ...] = ()


class MergeBuilder:
    """Builds a MERGE; each `when_*` returns a new builder, `execute()` runs it.

    Clauses of one kind apply in the order given: the first whose condition holds wins, and only the
    last clause of a kind may omit its condition (as in Delta). Expressions are Spark SQL over the
    aliases (`t.col`, `s.col`); `set` / `values` keys are target columns.
    """

    def __init__(self, handle: TableHandle, spec: MergeSpec) -> None:
        self._handle = handle
        self._spec = spec

    def _with(self, clause: Clause) -> MergeBuilder:
        sql_text("condition", clause.condition, none_means="the clause applies to every row")
        same = [c for c in self._spec.clauses if c.matched == clause.matched]
        if same and same[-1].condition is None:
            kind = "WHEN MATCHED" if clause.matched else "WHEN NOT MATCHED"
            raise InvalidArgumentError(f"a {kind} clause after an unconditional one can never apply")
        spec = dataclasses.replace(self._spec, clauses=(*self._spec.clauses, clause))
        return MergeBuilder(self._handle, spec)

    def when_matched_update(
        self, *, set: Mapping[str, str] | AllColumns, condition: str | None = None
    ) -> MergeBuilder:
        """Update matched target rows: `set` maps target columns to SQL, or `"*"` for every column."""
        sets = all_or_sql_mapping("when_matched_update: set", set, all_method="when_matched_update_all")
        return self._with(Clause("update", condition, sets))

    def when_matched_update_all(self, *, condition: str | None = None) -> MergeBuilder:
        return self.when_matched_update(set=ALL, condition=condition)

    def when_matched_delete(self, *, condition: str | None = None) -> MergeBuilder:
        return self._with(Clause("delete", condition))

    def when_not_matched_insert(
        self, *, values: Mapping[str, str] | AllColumns, condition: str | None = None
    ) -> MergeBuilder:
        """Insert unmatched source rows: `values` maps target columns to SQL, or `"*"`."""
        sets = all_or_sql_mapping(
            "when_not_matched_insert: values", values, all_method="when_not_matched_insert_all"
        )
        return self._with(Clause("insert", condition, sets))

    def when_not_matched_insert_all(self, *, condition: str | None = None) -> MergeBuilder:
        return self.when_not_matched_insert(values=ALL, condition=condition)

    def execute(self) -> DmlResult:
        """Run the merge; returns the new version (None if nothing changed) and Delta's metrics."""
        if not self._spec.clauses:
            raise InvalidArgumentError("a merge needs at least one WHEN clause")
        return run_merge(self._handle, self._spec)


# --------------------------------------------------------------------------- assignments
def _assignments(ctx: TableContext, spec: MergeSpec, clause: Clause) -> dict[str, str]:
    if clause.assignments is not None:
        return resolve_columns(ctx, clause.assignments, f"merge {clause.kind}")
    source_cols = {c.lower(): c for c in spec.source.columns}
    missing = [n for n in ctx.schema.names if n.lower() not in source_cols]
    if missing:
        raise InvalidArgumentError(f"merge {clause.kind} *: the source lacks target columns {missing}")
    return {n: f"`{spec.source_alias}`.`{source_cols[n.lower()]}`" for n in ctx.schema.names}


def resolved(ctx: TableContext, spec: MergeSpec) -> MergeSpec:
    """`spec` with each update / insert clause keyed by the table's columns (`*` expanded).

    Done once, before the first Spark job, so that an unknown column (or a source lacking one for
    `*`) fails before anything runs.
    """
    clauses = tuple(
        c if c.kind == "delete" else dataclasses.replace(c, assignments=_assignments(ctx, spec, c))
        for c in spec.clauses
    )
    return dataclasses.replace(spec, clauses=clauses)


def _chain(cases: Sequence[tuple[Column, Column]], default: Column) -> Column:
    if not cases:
        return default
    out = F.when(cases[0][0], cases[0][1])
    for cond, value in cases[1:]:
        out = out.when(cond, value)
    return out.otherwise(default)


def _tags(clauses: Sequence[Clause], default: str) -> Column:
    """The first clause (in order) whose condition holds, as a tag such as `u0`, `d1`, `i0`."""
    cases = [(is_true(c.condition), F.lit(f"{c.kind[0]}{i}")) for i, c in enumerate(clauses)]
    return _chain(cases, F.lit(default))


def _outputs(ctx: TableContext, spec: MergeSpec, with_target: bool) -> list[Column]:
    """Target columns computed from the row's action tag (`_ACT`); inserts leave unset columns NULL.
    `spec` is `resolved`: every update / insert clause carries its assignments."""
    tagged = [(f"u{i}", c.assignments or {}) for i, c in enumerate(_matched(spec)) if c.kind == "update"]
    tagged += [(f"i{j}", c.assignments or {}) for j, c in enumerate(_inserts(spec))]
    cols = []
    for name in ctx.schema.names:
        t = spark_type(ctx.schema, name)
        cases = [
            (F.col(_ACT) == tag, F.expr(sets[name]).cast(t) if name in sets else F.lit(None).cast(t))
            for tag, sets in tagged
            if name in sets or tag.startswith("i")
        ]
        default = F.col(f"`{spec.target_alias}`.`{name}`") if with_target else F.lit(None).cast(t)
        cols.append(_chain(cases, default).alias(name))
    return cols


def _matched(spec: MergeSpec) -> list[Clause]:
    return [c for c in spec.clauses if c.matched]


def _inserts(spec: MergeSpec) -> list[Clause]:
    return [c for c in spec.clauses if not c.matched]


# --------------------------------------------------------------------------- step 1: touched files
@dataclass(frozen=True)
class Touched:
    files: list[AddFile]
    updated: int
    deleted: int


def _unambiguous(spec: MergeSpec) -> bool:
    """Several source rows per target row are fine only for a lone unconditional DELETE (Delta's rule)."""
    matched = _matched(spec)
    return len(matched) == 1 and matched[0].kind == "delete" and matched[0].condition is None


def _ambiguous(spec: MergeSpec, multi: int) -> None:
    if multi and not _unambiguous(spec):
        raise MultipleSourceRowsMatchedError(
            f"MERGE: {multi} target row(s) matched more than one source row, so the update or delete "
            "is ambiguous; nothing was committed. Help: deduplicate the source on the merge keys "
            "or make the ON condition more specific."
        )


def _touched_in_process(
    h: TableHandle,
    ctx: TableContext,
    spec: MergeSpec,
    candidates: list[AddFile],
    *,
    keys: list[tuple[str, str]],
    src: Any,
) -> Touched:
    found = merge_local.touched(ctx, h.table, candidates, keys, src)
    _ambiguous(spec, found.ambiguous)
    kind = _matched(spec)[0].kind  # (one unconditional matched clause: it applies to every match)
    return Touched(
        found.files, found.matched if kind == "update" else 0, found.matched if kind == "delete" else 0
    )


def _find_touched(ctx: TableContext, spec: MergeSpec, candidates: list[AddFile]) -> Touched:
    target = scan(ctx, candidates, with_file=True, with_row=True).alias(spec.target_alias)
    source = spec.source.alias(spec.source_alias)
    pairs = target.join(source, F.expr(spec.on), "inner").withColumn(_ACT, _tags(_matched(spec), "c"))
    if not _inserts(spec):
        pairs = pairs.filter(F.col(_ACT) != "c")  # files where no clause applies stay untouched
    per_row = pairs.groupBy(FILE_COL, ROW_COL).agg(F.count(F.lit(1)).alias("n"), F.min(_ACT).alias("a"))
    per_file = per_row.groupBy(FILE_COL).agg(
        F.sum(F.when(F.col("n") > 1, 1).otherwise(0)).alias("multi"),
        F.sum(F.when(F.col("a").startswith("u"), 1).otherwise(0)).alias("upd"),
        F.sum(F.when(F.col("a").startswith("d"), 1).otherwise(0)).alias("del"),
    )
    rows = per_file.collect()
    _ambiguous(spec, sum(int(r["multi"]) for r in rows))
    keys = {ctx.file_key(r[FILE_COL]): 1 for r in rows}
    return Touched(
        select_files(candidates, ctx, keys),
        sum(int(r["upd"]) for r in rows),
        sum(int(r["del"]) for r in rows),
    )


# --------------------------------------------------------------------------- step 2: rewrite
def _rewrite(ctx: TableContext, spec: MergeSpec, touched: list[AddFile]) -> DataFrame:
    source = spec.source.withColumn(_S_PRESENT, F.lit(True)).alias(spec.source_alias)
    keep = F.col(_ACT).rlike("^[cui]")
    if not touched:  # nothing matched: only inserts, straight from the source
        rows = source.withColumn(_ACT, _tags(_inserts(spec), "n"))
        return rows.filter(keep).select(*_outputs(ctx, spec, with_target=False))
    joined = _joined(ctx, spec, touched)
    return joined.filter(keep).select(*_outputs(ctx, spec, with_target=True))


def _joined(
    ctx: TableContext, spec: MergeSpec, touched: list[AddFile], *, with_position: bool = False
) -> DataFrame:
    """Touched target rows joined with the source, each pair tagged with its action (`_ACT`);
    `with_position`: the target row's file and row index too (`FILE_COL`, `ROW_COL`)."""
    source = spec.source.withColumn(_S_PRESENT, F.lit(True)).alias(spec.source_alias)
    scanned = scan(ctx, touched, with_file=with_position, with_row=with_position)
    target = scanned.withColumn(_T_PRESENT, F.lit(True)).alias(spec.target_alias)
    joined = target.join(source, F.expr(spec.on), "full" if _inserts(spec) else "left")
    both = F.col(_T_PRESENT).isNotNull() & F.col(_S_PRESENT).isNotNull()
    action = _chain(
        [(both, _tags(_matched(spec), "c")), (F.col(_T_PRESENT).isNull(), _tags(_inserts(spec), "n"))],
        F.lit("c"),
    )
    return joined.withColumn(_ACT, action)


def _changes(ctx: TableContext, spec: MergeSpec, touched: list[AddFile]) -> DataFrame:
    """The change data of a merge that rewrote files: updated rows before and after, deleted rows,
    inserted rows (copied rows changed nothing)."""
    joined = _joined(ctx, spec, touched, with_position=True)
    before = [F.col(f"`{spec.target_alias}`.`{n}`").alias(n) for n in ctx.schema.names]
    after = _outputs(ctx, spec, with_target=True)
    act = F.col(_ACT)
    parts = [
        (act.startswith("u"), before, "update_preimage"),
        (act.startswith("u"), after, "update_postimage"),
        (act.startswith("d"), before, "delete"),
        (act.startswith("i"), after, "insert"),
    ]
    # (an unconditional DELETE may match a target row to several source rows: it is deleted once)
    frames = [
        change_data.tagged(
            joined.filter(cond).dropDuplicates([FILE_COL, ROW_COL]).select(*cols)
            if kind == "delete"
            else joined.filter(cond).select(*cols),
            ctx,
            kind,
        )
        for cond, cols, kind in parts
    ]
    return reduce(DataFrame.unionByName, frames)


def _insert_only(ctx: TableContext, spec: MergeSpec, candidates: list[AddFile]) -> DataFrame:
    source = spec.source.alias(spec.source_alias)
    target = scan(ctx, candidates).alias(spec.target_alias)
    unmatched = source.join(target, F.expr(spec.on), "left_anti") if candidates else source
    rows = unmatched.withColumn(_ACT, _tags(_inserts(spec), "n"))
    return rows.filter(F.col(_ACT).startswith("i")).select(*_outputs(ctx, spec, with_target=False))


# --------------------------------------------------------------------------- driver
def _parameters(spec: MergeSpec) -> dict[str, str]:
    return {
        "predicate": json.dumps([spec.on]),
        "matchedPredicates": json.dumps([c.describe() for c in _matched(spec)]),
        "notMatchedPredicates": json.dumps([c.describe() for c in _inserts(spec)]),
        "notMatchedBySourcePredicates": "[]",
    }


def _touched_rows(ctx: TableContext, files: list[AddFile]) -> int:
    known = total_records(files)
    return known if known is not None else scan(ctx, files).count()


def run_merge(h: TableHandle, spec: MergeSpec) -> DmlResult:
    start = time.monotonic()
    txn = h.table.transaction("MERGE", _parameters(spec))
    ctx = h.context(txn.snapshot)
    spec = resolved(ctx, spec)
    keys = equality_keys(ctx, spec.on, spec.source, spec.source_alias, spec.target_alias)
    conditions = [c.condition for c in _matched(spec)]
    src_keys = (
        merge_local.source_keys(spec.source, keys)
        if merge_local.eligible(ctx, spec.on, keys, conditions)
        else None
    )
    if src_keys is None:
        num_source, target_filter = probe(spec.source, spec.source_alias, keys)
    else:
        num_source, target_filter = probe_keys(keys, src_keys)
    candidates = txn.read_files(target_filter) if target_filter else txn.read_files()
    if not _matched(spec):
        touched = Touched([], 0, 0)
        out = _insert_only(ctx, spec, candidates) if num_source else None
    else:
        if not (num_source and candidates):
            touched = Touched([], 0, 0)
        elif src_keys is not None and merge_local.small(candidates):
            touched = _touched_in_process(h, ctx, spec, candidates, keys=keys, src=src_keys)
        else:
            touched = _find_touched(ctx, spec, candidates)
        needed = bool(touched.files) or (bool(_inserts(spec)) and num_source > 0)
        out = _rewrite(ctx, spec, touched.files) if needed else None
    marked: list[AddFile] = []
    if touched.files and deletion_vectors.enabled(ctx) and not deletion_vectors.split(touched.files)[1]:
        out, marked = _with_deletion_vectors(h, ctx, spec, touched.files)
    scan_ms = elapsed_ms(start)
    adds = write_files(ctx, h.table, conform(out, ctx.schema)[0], what="MERGE") if out is not None else []
    cdc: list[AddCDCFile] = []
    if touched.files and change_data.enabled(ctx):  # (an insert-only merge's feed is its adds)
        try:
            cdc = change_data.write_changes(ctx, h.table, _changes(ctx, spec, touched.files), what="MERGE")
        except BaseException:
            delete_files(h.table, adds)
            raise
    metrics = _metrics(ctx, touched, adds, num_source, in_place=bool(marked))
    metrics.update(
        scanTimeMs=scan_ms, rewriteTimeMs=elapsed_ms(start) - scan_ms, numDeletionVectorsAdded=len(marked)
    )
    return _finish(
        h,
        txn,
        candidates,
        removes=touched.files,
        adds=[*marked, *adds],
        metrics=metrics,
        start=start,
        cdc=cdc,
    )


def _with_deletion_vectors(
    h: TableHandle, ctx: TableContext, spec: MergeSpec, touched: list[AddFile]
) -> tuple[DataFrame, list[AddFile]]:
    """Deletion-vector MERGE: the updated and deleted target rows are marked in DVs (one Spark job
    collects their positions), copied rows stay in place; the rows to write are only the updated
    and inserted ones. Returns (rows to write, the touched files with their new DVs)."""
    joined = _joined(ctx, spec, touched, with_position=True)
    act = F.col(_ACT)
    found = deletion_vectors.collect_positions(ctx, touched, joined.filter(act.rlike("^[ud]")))
    marked = deletion_vectors.marked(ctx, h.table, touched, found)
    return joined.filter(act.rlike("^[ui]")).select(*_outputs(ctx, spec, with_target=True)), marked


def _metrics(
    ctx: TableContext, touched: Touched, adds: list[AddFile], num_source: int, *, in_place: bool = False
) -> dict[str, int]:
    """Delta's MERGE metrics; `in_place`: deletion vectors were used, so nothing was copied."""
    out_rows = sum(a.num_records or 0 for a in adds)
    copied = 0
    if touched.files and not in_place:
        copied = _touched_rows(ctx, touched.files) - touched.updated - touched.deleted
    return {
        "numSourceRows": num_source,
        "numTargetRowsInserted": out_rows - copied - touched.updated,
        "numTargetRowsUpdated": touched.updated,
        "numTargetRowsMatchedUpdated": touched.updated,
        "numTargetRowsNotMatchedBySourceUpdated": 0,
        "numTargetRowsDeleted": touched.deleted,
        "numTargetRowsMatchedDeleted": touched.deleted,
        "numTargetRowsNotMatchedBySourceDeleted": 0,
        "numTargetRowsCopied": copied,
        "numOutputRows": out_rows,
        "numTargetFilesAdded": len(adds),
        "numTargetFilesRemoved": len(touched.files),
        "numTargetBytesAdded": sum(a.size for a in adds),
        "numTargetBytesRemoved": sum(f.size for f in touched.files),
        "numTargetChangeFilesAdded": 0,
    }


def _finish(
    h: TableHandle,
    txn: Transaction,
    candidates: list[AddFile],
    *,
    removes: list[AddFile],
    adds: list[AddFile],
    metrics: dict[str, int],
    start: float,
    cdc: Sequence[AddCDCFile] = (),
) -> DmlResult:
    metrics["executionTimeMs"] = elapsed_ms(start)
    scanned = tuple(f.path for f in candidates)
    return dml_result("MERGE", h, txn, removes=removes, adds=adds, metrics=metrics, scanned=scanned, cdc=cdc)
