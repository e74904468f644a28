"""The table's row rules (CHECK constraints, column invariants) on Spark paths, by Spark SQL itself.

    guard(df, rules)         every Spark write of data files (append, overwrite, replace_where,
                             UPDATE, MERGE, DELETE's rewrites: `write.stage.write_files`) checks
                             each row inside the write job: the first column of `df` becomes
                             `CASE WHEN coalesce(<rule>, false) THEN col ELSE raise_error(...) END`,
                             one such guard per rule. A NULL result breaks the rule, as in Delta on
                             Spark. The error message carries the rule's index and the row as JSON
                             (`errors.rule_tagged`), so no second job is needed to show an offending
                             row: `errors.rule_failure` reads them back into the rule's
                             ConstraintViolationError (the engine's class: one for every path). The
                             guard is in the projection that is written, so Spark's optimizer cannot
                             prune it.
    rows_breaking(df, rule)  (how many rows of `df` break `rule`, one of them): ADD CONSTRAINT's
                             check of the existing rows, one count job plus one `limit(1)` job.

The `txnlog` data source used directly (`df.write.format("txnlog")`) cannot rewrite the plan it is
given, so its executors check the rules with the engine's Arrow evaluator (`source.writer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import PredicateError
from airflow_txnlog.engine.spi import RowRule
from airflow_txnlog.spark.errors import quiet_analysis, rule_tagged

_SHOWN_ROW = 2000  # characters of the offending row's JSON carried in the error


def _holds(rule: RowRule) -> Column:
    return F.coalesce(F.expr(rule.expression), F.lit(False))


def guard(df: DataFrame, rules: Sequence[RowRule]) -> DataFrame:
    """`df` whose write fails on the first row that breaks one of `rules` (see the module docstring)."""
    if not rules or not df.columns:
        return df
    first = df.columns[0]
    row = F.substring(F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns])), 1, _SHOWN_ROW)
    col = F.col(f"`{first}`")
    for i, rule in enumerate(rules):
        message = F.concat(F.lit(rule_tagged(i)), row)
        col = F.when(_holds(rule), col).otherwise(F.raise_error(message))
    guarded = df.withColumn(first, col)
    with quiet_analysis():
        try:
            guarded.schema  # noqa: B018 (analyse now: a rule Spark cannot resolve fails before any job)
        except AnalysisException as exc:
            raise PredicateError(f"a row rule of the table does not resolve in Spark SQL: {_rules(rules)}: "
                                 f"{str(exc).strip().splitlines()[0]}") from exc  # fmt: skip
    return guarded


def _rules(rules: Sequence[RowRule]) -> str:
    return "; ".join(r.label for r in rules)


def rows_breaking(df: DataFrame, rule: RowRule) -> tuple[int, dict[str, Any] | None]:
    """(rows of `df` that break `rule`, one of them as a dict)."""
    with quiet_analysis():
        try:
            bad = df.filter(~_holds(rule))
            bad.schema  # noqa: B018
        except AnalysisException as exc:
            raise PredicateError(
                f"{rule.label} does not resolve as a boolean over the table's columns "
                f"{df.columns}: {str(exc).strip().splitlines()[0]}. Nothing was written"
            ) from exc
    count = bad.count()
    if not count:
        return 0, None
    return count, bad.limit(1).collect()[0].asDict(recursive=True)
