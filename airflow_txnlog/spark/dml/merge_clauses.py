"""MERGE's WHEN clauses: what each says, and the Spark columns that tag and compute every row.

A clause has a scope, as in Delta:
- `matched`: a target row paired with a source row (update or delete);
- `not_matched`: a source row no target row pairs with (insert);
- `not_matched_by_source`: a target row no source row pairs with (update or delete). Its condition
  and assignments see only the target's columns (`t.x`): there is no source row.
Within a scope the first clause whose condition holds wins; only the last one may omit it. Each row
of the merge's join gets an action tag (`_ACT`) naming that clause: `u<i>` / `d<i>` (matched, `i`
its index among the matched clauses), `i<j>` (insert), `U<k>` / `D<k>` (not matched by source); `c`
copies the target row unchanged and `n` drops a source row no insert clause takes. Every later step
reads only the tag: `UPDATES`, `DELETES` and `KEPT` are the patterns it filters by.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import InvalidArgumentError
from airflow_txnlog.spark.conditions import check_condition, check_expressions, check_join
from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.dml._dml import resolve_columns
from airflow_txnlog.spark.features.generated import assigned
from airflow_txnlog.spark.read.planning import is_true
from airflow_txnlog.spark.read.scan import scan
from airflow_txnlog.spark.schemas import spark_type

ClauseKind = Literal["update", "delete", "insert"]
Scope = Literal["matched", "not_matched", "not_matched_by_source"]
_ACT = "_txnlog_action"
NEW_ROW = "_txnlog_new_row"  # (identity tables) True on the rows an insert clause wrote
UPDATES = "^[uU]"  # action tags of rows an update clause changed
DELETES = "^[dD]"  # ... that a delete clause removed
KEPT = "^[cuiU]"  # ... that the rewrite writes: copied, updated and inserted rows
CHANGED = "^[udUD]"  # target rows an update or delete clause applies to (deletion vectors mark them)
NEW_ROWS = "^[uiU]"  # rows a deletion-vector merge writes: updated and inserted ones
SCOPE_NAMES = {
    "matched": "WHEN MATCHED",
    "not_matched": "WHEN NOT MATCHED",
    "not_matched_by_source": "WHEN NOT MATCHED BY SOURCE",
}


@dataclass(frozen=True)
class Clause:
    """One WHEN clause. `assignments` None means `*` until `resolved` expands it (delete: always None)."""

    kind: ClauseKind
    condition: str | None = None
    assignments: Mapping[str, str] | None = None
    by_source: bool = False  # WHEN NOT MATCHED BY SOURCE (update / delete of target-only rows)

    @property
    def scope(self) -> Scope:
        if self.kind == "insert":
            return "not_matched"
        return "not_matched_by_source" if self.by_source else "matched"

    def tag(self, index: int) -> str:
        return f"{self.kind[0].upper() if self.by_source else self.kind[0]}{index}"

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

    def of(self, scope: Scope) -> list[Clause]:
        """The clauses of one scope, in order."""
        return [c for c in self.clauses if c.scope == scope]


def _assignments(ctx: TableContext, spec: MergeSpec, clause: Clause) -> dict[str, str]:
    """The clause's values keyed by table column, `*` expanded, plus its generated columns'."""
    target = spec.target_alias
    keep = None if clause.kind == "insert" else (lambda c: f"`{target}`.`{c}`")
    if clause.assignments is not None:
        sets = resolve_columns(ctx, clause.assignments, f"merge {clause.kind}")
        return assigned(ctx, _with_defaults(ctx, clause, sets), keep=keep)
    source_cols = {c.lower(): c for c in spec.source.columns}
    # (a source may leave generated and identity columns out, as in Delta, and an insert defaulted ones)
    computed = {*ctx.generated, *(i.column for i in ctx.identities)}
    computed |= set(ctx.defaults) if clause.kind == "insert" else set()
    missing = [n for n in ctx.schema.names if n.lower() not in source_cols and n not in computed]
    if missing:
        raise InvalidArgumentError(f"merge {clause.kind} *: the source lacks target columns {missing}")
    alias = spec.source_alias
    sets = {n: f"`{alias}`.`{source_cols[n.lower()]}`" for n in ctx.schema.names if n.lower() in source_cols}
    return assigned(ctx, _with_defaults(ctx, clause, sets), keep=keep)


def _with_defaults(ctx: TableContext, clause: Clause, sets: dict[str, str]) -> dict[str, str]:
    """An insert clause's values plus, for each defaulted column it does not set, the default
    (engine.features.column_defaults: a constant Spark SQL expression, checked when declared)."""
    if clause.kind != "insert":
        return sets
    return {**{c: f"({text})" for c, text in ctx.defaults.items() if c not in sets}, **sets}


def _check_sql(ctx: TableContext, spec: MergeSpec, clauses: Sequence[Clause]) -> None:
    """ON, and each matched / insert clause's condition and values over the rows its scope sees,
    analysed by Spark over empty DataFrames (no job); the by-source clauses: `_target_only`."""
    t, s = spec.target_alias, spec.source_alias
    target = ctx.empty_df().alias(t)
    source = ctx.spark.createDataFrame([], spec.source.schema).alias(s)
    names = f"target ({t}) columns: {', '.join(target.columns)}; source ({s}) columns: "
    names += ", ".join(source.columns)
    check_join(target, source, spec.on, "MERGE ON clause", names)
    pairs = target.join(source, F.expr(spec.on), "inner")
    for c in clauses:
        if c.by_source:
            continue
        rows, valid = (
            (source, f"source ({s}) columns: {', '.join(source.columns)}")
            if c.kind == "insert"
            else (pairs, names)
        )
        what = f"{SCOPE_NAMES[c.scope]} {c.kind}"
        check_condition(rows, c.condition, f"{what} condition", valid)
        check_expressions(rows, c.assignments or {}, f"{what} value", valid)


def resolved(ctx: TableContext, spec: MergeSpec) -> MergeSpec:
    """`spec` with each update / insert clause keyed by the table's columns (`*` expanded), and the
    not-matched-by-source clauses checked to read the target only.

    Done once, before the first Spark job, so that an unknown column (or a source lacking one for
    `*`) fails before anything runs.
    """
    clauses = tuple(
        c if c.kind == "delete" else dataclasses.replace(c, assignments=_assignments(ctx, spec, c))
        for c in spec.clauses
    )
    _check_sql(ctx, spec, clauses)
    by_source = [c for c in clauses if c.by_source]
    if by_source:
        target_only = scan(ctx, []).alias(spec.target_alias)  # analysed by Spark, no job runs
        for c in by_source:
            for sql in [c.condition, *(c.assignments or {}).values()]:
                _target_only(target_only, sql, c)
    return dataclasses.replace(spec, clauses=clauses)


def _target_only(target: DataFrame, sql: str | None, clause: Clause) -> None:
    if sql is None:
        return
    try:
        target.select(F.expr(sql))
    except AnalysisException as exc:
        raise InvalidArgumentError(
            f"WHEN NOT MATCHED BY SOURCE {clause.kind}: {sql!r} must use only the target's columns "
            f"(there is no source row): {str(exc).splitlines()[0][:200]}"
        ) from exc


def chain(cases: Sequence[tuple[Column, Column]], default: Column) -> Column:
    if not cases:
        return default
    out = F.when(cases[0][0], cases[0][1])
    for cond, value in cases[1:]:
        out = out.when(cond, value)
    return out.otherwise(default)


def tags(clauses: Sequence[Clause], default: str) -> Column:
    """The first clause (in order) whose condition holds, as its tag (`u0`, `d1`, `i0`, `U0`...)."""
    return chain([(is_true(c.condition), F.lit(c.tag(i))) for i, c in enumerate(clauses)], F.lit(default))


def outputs(ctx: TableContext, spec: MergeSpec, with_target: bool) -> list[Column]:
    """Target columns computed from the row's action tag (`_ACT`); inserts leave unset columns NULL.
    `spec` is `resolved`: every update / insert clause carries its assignments."""
    tagged = [
        (c.tag(i), c.assignments or {})
        for scope in ("matched", "not_matched", "not_matched_by_source")
        for i, c in enumerate(spec.of(scope))
        if c.kind != "delete"
    ]
    cols = []
    for name in ctx.schema.names:
        t = spark_type(ctx.schema, name)
        cases = [
            (F.col(_ACT) == tag, F.expr(sets[name]).cast(t) if name in sets else F.lit(None).cast(t))
            for tag, sets in tagged
            if name in sets or tag.startswith("i")
        ]
        default = F.col(f"`{spec.target_alias}`.`{name}`") if with_target else F.lit(None).cast(t)
        cols.append(chain(cases, default).alias(name))
    if numbers_rows(ctx, spec):  # (which rows are new, for `spark.features.identity` to number)
        cols.append(F.col(_ACT).startswith("i").alias(NEW_ROW))
    return cols


def numbers_rows(ctx: TableContext, spec: MergeSpec) -> bool:
    """Whether the merge inserts rows into a table with identity columns, which need values."""
    return bool(ctx.identities) and any(c.kind == "insert" for c in spec.clauses)
