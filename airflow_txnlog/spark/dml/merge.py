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
    WHEN NOT MATCHED BY SOURCE clauses (update / delete of target rows no source row pairs with)
    need every target row: no key-range pruning and no in-process lever; step 1 is a LEFT OUTER
    join, where a target-only row touches its file when such a clause applies to it.
    Insert-only merges skip 1 and 2: source LEFT ANTI JOIN target candidates, appended (no removes).
    With deletion vectors (`delta.enableDeletionVectors=true`, every touched file has numRecords),
    step 2 marks the updated and deleted target rows in DVs and writes only updated + inserted rows.

Identity columns: the rows to write are materialized and the inserted ones numbered
(`spark.features.identity`); a merge that loses only to other identity writers runs again on the new version.
The source is evaluated once per step: it should be deterministic (cache or checkpoint it
otherwise). Metrics are Delta's (numSourceRows, numTargetRowsInserted / Updated / Deleted /
Copied, numOutputRows, numTargetFilesAdded / Removed, ...). Nothing to change -> no commit.
The clauses and the action tags every step filters by are `merge_clauses`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import AddCDCFile, AddFile, InvalidArgumentError, Transaction
from airflow_txnlog.spark import _arguments as check
from airflow_txnlog.spark._arguments import ALL, AllColumns, all_or_sql_mapping, sql_mapping, sql_text
from airflow_txnlog.spark.context import TableContext, TableHandle
from airflow_txnlog.spark.dml import merge_local
from airflow_txnlog.spark.dml._dml import dml_result, elapsed_ms
from airflow_txnlog.spark.dml.merge_clauses import (
    _ACT,
    CHANGED,
    DELETES,
    KEPT,
    NEW_ROW,
    NEW_ROWS,
    SCOPE_NAMES,
    UPDATES,
    Clause,
    MergeSpec,
    chain,
    numbers_rows,
    outputs,
    resolved,
    tags,
)
from airflow_txnlog.spark.dml.merge_keys import equality_keys, probe, probe_keys
from airflow_txnlog.spark.dml.results import DmlResult
from airflow_txnlog.spark.errors import MultipleSourceRowsMatchedError
from airflow_txnlog.spark.features import deletion_vectors, identity
from airflow_txnlog.spark.features.generated import refuse_generated_from_identity, refuse_identity_update
from airflow_txnlog.spark.read.planning import select_files, total_records
from airflow_txnlog.spark.read.row_ids import kept_ids, row_id_columns
from airflow_txnlog.spark.read.scan import FILE_COL, ROW_COL, scan
from airflow_txnlog.spark.schemas import conform
from airflow_txnlog.spark.write import change_data
from airflow_txnlog.spark.write.stage import delete_files, write_files

_T_PRESENT = "_txnlog_target"
_S_PRESENT = "_txnlog_source"


class MergeBuilder:
    """Builds a MERGE; each `when_*` returns a new builder, `execute()` runs it.

    Clauses of one scope (matched, not matched, not matched by source) apply in the order given:
    the first whose condition holds wins, and only the last clause of a scope may omit its condition
    (as in Delta). Expressions are Spark SQL over the aliases (`t.col`, `s.col`; only `t.col` in
    the not-matched-by-source clauses); `set` / `values` keys are target columns.
    """

    def __init__(self, handle: TableHandle, spec: MergeSpec) -> None:
        self._handle = handle
        self._spec = spec

    def _with(self, clause: Clause) -> MergeBuilder:
        sql_text("condition", clause.condition, none_means="the clause applies to every row")
        same = self._spec.of(clause.scope)
        if same and same[-1].condition is None:
            kind = SCOPE_NAMES[clause.scope]
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

    def when_not_matched_by_source_update(
        self, *, set: Mapping[str, str] | AllColumns, condition: str | None = None
    ) -> MergeBuilder:
        """Update target rows no source row matches: `set` maps target columns to SQL over the
        target's columns only (there is no source row; `"*"` has nothing to copy from)."""
        name = "when_not_matched_by_source_update: set"
        accepted = "a mapping {target column: SQL over the target} such as {'active': 'false'}"
        if set == ALL:
            raise InvalidArgumentError(f"{name} cannot be '*' (no source row); it must be {accepted}")
        sets = sql_mapping(name, set, accepted=accepted)
        return self._with(Clause("update", condition, sets, by_source=True))

    def when_not_matched_by_source_delete(self, *, condition: str | None = None) -> MergeBuilder:
        """Delete target rows no source row matches (where `condition`, over the target, holds)."""
        return self._with(Clause("delete", condition, by_source=True))

    def execute(self, *, metrics: Mapping[str, int] | None = None) -> DmlResult:
        """Run the merge; returns the new version (None if nothing changed) and Delta's metrics
        (plus `metrics`, e.g. what expectations dropped)."""
        if not self._spec.clauses:
            raise InvalidArgumentError("a merge needs at least one WHEN clause")
        return run_merge(self._handle, self._spec, check.metrics(metrics))


def _matched(spec: MergeSpec) -> list[Clause]:
    return spec.of("matched")


def _inserts(spec: MergeSpec) -> list[Clause]:
    return spec.of("not_matched")


def _by_source(spec: MergeSpec) -> list[Clause]:
    return spec.of("not_matched_by_source")


# --------------------------------------------------------------------------- step 1: touched files
@dataclass(frozen=True)
class Touched:
    files: list[AddFile]
    updated: int  # target rows a WHEN MATCHED clause updates
    deleted: int
    updated_by_source: int = 0  # ... a WHEN NOT MATCHED BY SOURCE clause updates
    deleted_by_source: int = 0


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
    source = spec.source.withColumn(_S_PRESENT, F.lit(True)).alias(spec.source_alias)
    by_source = _by_source(spec)
    # With NOT MATCHED BY SOURCE clauses the target rows no source row pairs with count too.
    pairs = target.join(source, F.expr(spec.on), "left" if by_source else "inner")
    matched = F.col(_S_PRESENT).isNotNull()
    pairs = pairs.withColumn(_ACT, chain([(matched, tags(_matched(spec), "c"))], tags(by_source, "c")))
    # A file is touched by a row some clause changes. With inserts, every matched pair touches its
    # file too (so that its source row is seen as matched in step 2); with inserts or by-source
    # clauses every matched pair counts for the ambiguity check, as in Delta: a target row matched
    # twice in a rewritten file would otherwise be copied twice.
    every_match = bool(_inserts(spec) or by_source)
    pairs = pairs.filter((F.col(_ACT) != "c") | (matched if every_match else F.lit(False)))
    per_row = pairs.groupBy(FILE_COL, ROW_COL).agg(F.count(F.lit(1)).alias("n"), F.min(_ACT).alias("a"))
    counted = {"upd": "u", "del": "d", "upd_s": "U", "del_s": "D"}
    per_file = per_row.groupBy(FILE_COL).agg(
        F.sum(F.when(F.col("n") > 1, 1).otherwise(0)).alias("multi"),
        *[F.sum(F.when(F.col("a").startswith(tag), 1).otherwise(0)).alias(k) for k, tag in counted.items()],
    )
    rows = per_file.collect()
    _ambiguous(spec, sum(int(r["multi"]) for r in rows))
    keys = {ctx.file_key(r[FILE_COL]): 1 for r in rows}
    total = {k: sum(int(r[k]) for r in rows) for k in counted}
    return Touched(
        select_files(candidates, ctx, keys), total["upd"], total["del"], total["upd_s"], total["del_s"]
    )


# --------------------------------------------------------------------------- step 2: rewrite
def _rewrite(ctx: TableContext, spec: MergeSpec, touched: list[AddFile]) -> DataFrame:
    source = spec.source.withColumn(_S_PRESENT, F.lit(True)).alias(spec.source_alias)
    keep = F.col(_ACT).rlike(KEPT)
    if not touched:  # nothing matched: only inserts, straight from the source
        rows = source.withColumn(_ACT, tags(_inserts(spec), "n"))
        return rows.filter(keep).select(*outputs(ctx, spec, with_target=False))
    joined = _joined(ctx, spec, touched)
    return joined.filter(keep).select(
        *outputs(ctx, spec, with_target=True), *kept_ids(ctx, F.col(_ACT).rlike(UPDATES), spec.target_alias)
    )


def _joined(
    ctx: TableContext, spec: MergeSpec, touched: list[AddFile], *, with_position: bool = False
) -> DataFrame:
    """Touched target rows joined with the source, each pair tagged with its action (`_ACT`);
    `with_position`: the target row's file and row index too (`FILE_COL`, `ROW_COL`)."""
    source = spec.source.withColumn(_S_PRESENT, F.lit(True)).alias(spec.source_alias)
    scanned = scan(ctx, touched, with_file=with_position, with_row=with_position, row_ids=True)
    target = scanned.withColumn(_T_PRESENT, F.lit(True)).alias(spec.target_alias)
    joined = target.join(source, F.expr(spec.on), "full" if _inserts(spec) else "left")
    both = F.col(_T_PRESENT).isNotNull() & F.col(_S_PRESENT).isNotNull()
    action = chain(
        [(both, tags(_matched(spec), "c")), (F.col(_T_PRESENT).isNull(), tags(_inserts(spec), "n"))],
        tags(_by_source(spec), "c"),  # a target row no source row pairs with
    )
    return joined.withColumn(_ACT, action)


def _changes(
    ctx: TableContext, spec: MergeSpec, touched: list[AddFile], inserted: DataFrame | None
) -> DataFrame:
    """The change data of a merge that rewrote files: updated rows before and after, deleted rows,
    inserted rows (`inserted`, when identity columns numbered them; copied rows changed nothing)."""
    joined = _joined(ctx, spec, touched, with_position=True)
    before = [F.col(f"`{spec.target_alias}`.`{n}`").alias(n) for n in ctx.schema.names]
    after = outputs(ctx, spec, with_target=True)[: len(ctx.schema.names)]  # (no NEW_ROW)
    act = F.col(_ACT)
    parts = [
        (act.rlike(UPDATES), before, "update_preimage"),
        (act.rlike(UPDATES), after, "update_postimage"),
        (act.rlike(DELETES), before, "delete"),
    ]
    if inserted is None:
        parts.append((act.startswith("i"), after, "insert"))
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
    if inserted is not None:
        frames.append(change_data.tagged(inserted, ctx, "insert"))
    return reduce(DataFrame.unionByName, frames)


def _insert_only(ctx: TableContext, spec: MergeSpec, candidates: list[AddFile]) -> DataFrame:
    source = spec.source.alias(spec.source_alias)
    target = scan(ctx, candidates).alias(spec.target_alias)
    unmatched = source.join(target, F.expr(spec.on), "left_anti") if candidates else source
    rows = unmatched.withColumn(_ACT, tags(_inserts(spec), "n"))
    return rows.filter(F.col(_ACT).startswith("i")).select(*outputs(ctx, spec, with_target=False))


# --------------------------------------------------------------------------- driver
def _plan(
    h: TableHandle, ctx: TableContext, spec: MergeSpec, txn: Transaction
) -> tuple[int, list[AddFile], Touched, DataFrame | None]:
    """Steps 0 and 1: (source rows, the target files read, the touched ones, the rows to write)."""
    by_source = _by_source(spec)
    keys = equality_keys(ctx, spec.on, spec.source, spec.source_alias, spec.target_alias)
    conditions = [c.condition for c in _matched(spec)]
    eligible = not by_source and merge_local.eligible(ctx, spec.on, keys, conditions)
    src_keys = merge_local.source_keys(spec.source, keys) if eligible else None
    if src_keys is None:
        num_source, target_filter = probe(spec.source, spec.source_alias, keys)
    else:
        num_source, target_filter = probe_keys(keys, src_keys)
    if by_source:  # any target row may be one no source row matches: the key range prunes nothing
        target_filter = None
    candidates = txn.read_files(target_filter) if target_filter else txn.read_files()
    if not _matched(spec) and not by_source:
        inserted = _insert_only(ctx, spec, candidates) if num_source else None
        return num_source, candidates, Touched([], 0, 0), inserted
    if not candidates or not (num_source or by_source):
        touched = Touched([], 0, 0)
    elif src_keys is not None and merge_local.small(candidates):
        touched = _touched_in_process(h, ctx, spec, candidates, keys=keys, src=src_keys)
    else:
        touched = _find_touched(ctx, spec, candidates)
    needed = bool(touched.files) or (bool(_inserts(spec)) and num_source > 0)
    return num_source, candidates, touched, _rewrite(ctx, spec, touched.files) if needed else None


def _parameters(spec: MergeSpec) -> dict[str, str]:
    return {
        "predicate": json.dumps([spec.on]),
        "matchedPredicates": json.dumps([c.describe() for c in _matched(spec)]),
        "notMatchedPredicates": json.dumps([c.describe() for c in _inserts(spec)]),
        "notMatchedBySourcePredicates": json.dumps([c.describe() for c in _by_source(spec)]),
    }


def _touched_rows(ctx: TableContext, files: list[AddFile]) -> int:
    known = total_records(files)
    return known if known is not None else scan(ctx, files).count()


def run_merge(h: TableHandle, spec: MergeSpec, extra: Mapping[str, int] | None = None) -> DmlResult:
    """The merge, run again on a fresh transaction while it loses to other identity writers only
    (its inserts' identity values would repeat theirs)."""
    begin = functools.partial(h.table.transaction, "MERGE", _parameters(spec))
    return identity.on_fresh_transactions(h.table, begin, lambda txn: _run(h, txn, spec, extra or {}))


def _run(h: TableHandle, txn: Transaction, spec: MergeSpec, extra: Mapping[str, int]) -> DmlResult:
    start = time.monotonic()
    ctx = h.context(txn.snapshot)
    spec = resolved(ctx, spec)
    _check_identities(ctx, spec)
    num_source, candidates, touched, out = _plan(h, ctx, spec, txn)
    marked: list[AddFile] = []
    if touched.files and deletion_vectors.enabled(ctx) and not deletion_vectors.split(touched.files)[1]:
        out, marked = _with_deletion_vectors(h, ctx, spec, touched.files)
    scan_ms = elapsed_ms(start)
    out, inserted = _numbered(ctx, spec, txn, out)
    if out is not None:  # (an insert-only merge has no target rows, hence no row ids to keep)
        ids = [c for c in row_id_columns(ctx) if c in out.columns]
        adds = write_files(ctx, h.table, conform(out, ctx.schema, keep=ids)[0], what="MERGE")
    else:
        adds = []
    cdc: list[AddCDCFile] = []
    if touched.files and change_data.enabled(ctx):  # (an insert-only merge's feed is its adds)
        try:
            changes = _changes(ctx, spec, touched.files, inserted)
            cdc = change_data.write_changes(ctx, h.table, changes, what="MERGE")
        except BaseException:
            delete_files(h.table, adds)
            raise
    metrics = _metrics(ctx, touched, adds, num_source, in_place=bool(marked))
    metrics.update(
        scanTimeMs=scan_ms, rewriteTimeMs=elapsed_ms(start) - scan_ms, numDeletionVectorsAdded=len(marked)
    )
    metrics.update(extra)
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


def _check_identities(ctx: TableContext, spec: MergeSpec) -> None:
    """As Delta: no clause updates an identity column; a generated column that reads one is not
    filled on inserts here (Table.write does it)."""
    for c in spec.clauses:
        if c.kind == "update":
            refuse_identity_update(ctx, f"MERGE ({SCOPE_NAMES[c.scope]} update)", c.assignments or {})
    if numbers_rows(ctx, spec):
        refuse_generated_from_identity(ctx, "MERGE (an insert clause)")


def _numbered(
    ctx: TableContext, spec: MergeSpec, txn: Transaction, out: DataFrame | None
) -> tuple[DataFrame | None, DataFrame | None]:
    """(`out` with identity values on its inserted rows, those rows alone) and the new marks on
    `txn`; `out` unchanged, None when the merge numbers nothing."""
    if out is None or not numbers_rows(ctx, spec):
        return out, None
    numbered, marks = identity.number(ctx, identity.stable(out), new=F.col(NEW_ROW))
    txn.record_identity_marks(marks)
    inserted = numbered.filter(F.col(NEW_ROW)).drop(NEW_ROW)
    return numbered.drop(NEW_ROW), inserted


def _with_deletion_vectors(
    h: TableHandle, ctx: TableContext, spec: MergeSpec, touched: list[AddFile]
) -> tuple[DataFrame, list[AddFile]]:
    """Deletion-vector MERGE: the updated and deleted target rows are marked in DVs (one Spark job
    collects their positions), copied rows stay in place; the rows to write are only the updated
    and inserted ones. Returns (rows to write, the touched files with their new DVs)."""
    joined = _joined(ctx, spec, touched, with_position=True)
    act = F.col(_ACT)
    found = deletion_vectors.collect_positions(ctx, touched, joined.filter(act.rlike(CHANGED)))
    marked = deletion_vectors.marked(ctx, h.table, touched, found)
    written = joined.filter(act.rlike(NEW_ROWS))
    return written.select(
        *outputs(ctx, spec, with_target=True), *kept_ids(ctx, F.col(_ACT).rlike(UPDATES), spec.target_alias)
    ), marked


def _metrics(
    ctx: TableContext, touched: Touched, adds: list[AddFile], num_source: int, *, in_place: bool = False
) -> dict[str, int]:
    """Delta's MERGE metrics; `in_place`: deletion vectors were used, so nothing was copied."""
    out_rows = sum(a.num_records or 0 for a in adds)
    updated = touched.updated + touched.updated_by_source
    deleted = touched.deleted + touched.deleted_by_source
    copied = 0
    if touched.files and not in_place:
        copied = _touched_rows(ctx, touched.files) - updated - deleted
    return {
        "numSourceRows": num_source,
        "numTargetRowsInserted": out_rows - copied - updated,
        "numTargetRowsUpdated": updated,
        "numTargetRowsMatchedUpdated": touched.updated,
        "numTargetRowsNotMatchedBySourceUpdated": touched.updated_by_source,
        "numTargetRowsDeleted": deleted,
        "numTargetRowsMatchedDeleted": touched.deleted,
        "numTargetRowsNotMatchedBySourceDeleted": touched.deleted_by_source,
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
    return dml_result(
        "MERGE", h, txn, removes=removes, adds=adds, metrics=metrics, scanned=scanned, cdc=cdc, preserved=True
    )
