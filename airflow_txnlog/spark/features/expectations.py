"""Expectations: named row rules a write or merge declares on its source, with what to do with rows
that break them (Delta Live Tables' expectations, for the Airflow operators).

    fail        (the default) any breaking row fails the task before anything is written: the error
                names the rule, how many rows break it and one of them
    drop        breaking rows are not written
    quarantine  breaking rows are not written to the table but to a quarantine table, with the names
                of the quarantine rules each broke in `_broken_rules` (array<string>)

A rule holds when its Spark SQL boolean is TRUE; FALSE and NULL break it, as the table's own CHECK
constraints (which are enforced as well, always). A row that breaks a quarantine rule is quarantined
even if it also breaks a drop rule (quarantine keeps the data). `check` pins the source with
`localCheckpoint()` first, so the counts and the rows written are from one evaluation of it (a
source read twice could differ), then counts every rule's breaking rows in ONE aggregation job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import ConstraintViolationError
from airflow_txnlog.engine.spi import RowRule, row_rule_violation
from airflow_txnlog.spark.conditions import check_condition

ACTIONS = ("fail", "drop", "quarantine")
QUARANTINE_COLUMN = "_broken_rules"


@dataclass(frozen=True)
class Expectation:
    """A named row rule: `Expectation("positive_amount", "amount > 0", "drop")`."""

    name: str
    expression: str
    action: str = "fail"


@dataclass(frozen=True)
class Checked:
    """The source split by the expectations."""

    rows: DataFrame  # what to write to the table
    quarantined: DataFrame | None = None  # what to write to the quarantine table (None: no such rule)
    counts: Mapping[str, int] = field(default_factory=dict)  # rows each drop / quarantine rule caught
    actions: Mapping[str, str] = field(default_factory=dict)
    quarantined_rows: int = 0  # rows quarantined (a row that broke two rules counts once)

    def metrics(self) -> dict[str, int]:
        """commitInfo.operationMetrics entries: `expectations.<rule>.dropped` / `.quarantined`."""
        verb = {"drop": "dropped", "quarantine": "quarantined"}
        return {f"expectations.{n}.{verb[self.actions[n]]}": c for n, c in self.counts.items()}

    def report(self) -> dict[str, dict[str, Any]]:
        """For XCom and asset events: {rule: {"action": ..., "rows": n}}."""
        return {n: {"action": self.actions[n], "rows": c} for n, c in self.counts.items()}


def _holds(e: Expectation) -> Column:
    return F.coalesce(F.expr(e.expression), F.lit(False))


def check(df: DataFrame, expectations: Sequence[Expectation]) -> Checked:
    """Split `df` by `expectations` (see the module docstring); ConstraintViolationError for a fail rule."""
    if not expectations:
        return Checked(df)
    for e in expectations:
        check_condition(df, e.expression, f"expectation {e.name}")
    df = df.localCheckpoint()
    quarantine = [e for e in expectations if e.action == "quarantine"]
    counts = _counts(df, expectations, quarantine)
    for e in expectations:
        if e.action == "fail" and counts[e.name]:
            row = df.filter(~_holds(e)).limit(1).collect()[0].asDict(recursive=True)
            raise _failed(e, row, counts[e.name])
    kept = [e for e in expectations if e.action != "fail"]
    rows = df.filter(_all(kept)) if kept else df
    quarantined = None
    if quarantine:
        names = F.array(*[F.when(~_holds(e), F.lit(e.name)) for e in quarantine])
        broken = F.filter(names, lambda x: x.isNotNull())
        quarantined = df.filter(~_all(quarantine)).withColumn(QUARANTINE_COLUMN, broken)
    actions = {e.name: e.action for e in kept}
    caught = {n: counts[n] for n in actions}
    return Checked(rows, quarantined, caught, actions, counts.get("", 0))


def _counts(
    df: DataFrame, expectations: Sequence[Expectation], quarantine: Sequence[Expectation]
) -> dict[str, int]:
    """Rows breaking each rule, and under "" the rows breaking any quarantine rule: one job."""
    columns = [F.sum(F.when(_holds(e), 0).otherwise(1)).alias(f"c{i}") for i, e in enumerate(expectations)]
    if quarantine:
        columns.append(F.sum(F.when(_all(quarantine), 0).otherwise(1)).alias("q"))
    row = df.agg(*columns).first()
    values = row.asDict() if row is not None else {}
    counts = {e.name: int(values.get(f"c{i}") or 0) for i, e in enumerate(expectations)}
    counts[""] = int(values.get("q") or 0)
    return counts


def _all(expectations: Sequence[Expectation]) -> Column:
    out = _holds(expectations[0])
    for e in expectations[1:]:
        out = out & _holds(e)
    return out


def _failed(e: Expectation, row: dict[str, Any], count: int) -> ConstraintViolationError:
    error = row_rule_violation(RowRule("expectation", e.name, e.expression), row, count)
    error.args = (f"{error} (expectation, action fail)",)
    return error
