"""The table's row rules (CHECK constraints, column invariants) on Spark paths, by Spark SQL itself.

    guard(df, rules)         every Spark write of data files (append, overwrite, replace_where,
                             UPDATE, MERGE, DELETE's rewrites: `stage.write_files`) checks each row
                             inside the write job: the first column of `df` becomes
                             `CASE WHEN coalesce(<rule>, false) THEN col ELSE raise_error(...) END`,
                             one such guard per rule. A NULL result breaks the rule, as in Delta on
                             Spark. The error message carries the rule's index and the row as JSON,
                             so no second job is needed to show an offending row. The guard is in
                             the projection that is written, so Spark's optimizer cannot prune it.
    rule_failure(exc, ...)   the ConstraintViolationError (the engine's class: one for every path) a
                             failed job's exception stands for, or None.
    rows_breaking(df, rule)  (how many rows of `df` break `rule`, one of them): ADD CONSTRAINT's
                             check of the existing rows, one count job plus one `limit(1)` job.

The `txnlog` data source used directly (`df.write.format("txnlog")`) cannot rewrite the plan it is
given, so its executors check the rules with the engine's Arrow evaluator (`source_write`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import ConstraintViolationError, PredicateError, RowRule, row_rule_violation
from airflow_txnlog.spark.conditions import quiet_analysis
from airflow_txnlog.spark.schemas import CHECK_MARKER

RULE_TAG = "[TXNLOG_RULE "
_TAGGED = re.compile(re.escape(RULE_TAG) + r"(\d+)\] ")
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
        message = F.concat(F.lit(f"{CHECK_MARKER} {RULE_TAG}{i}] "), row)
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


def rule_failure(exc: BaseException, rules: Sequence[RowRule], what: str) -> ConstraintViolationError | None:
    """The violation a failed write job's exception reports (None: not one of the rules' guards)."""
    text = str(exc)
    found = _TAGGED.search(text)
    if found is None or int(found.group(1)) >= len(rules):
        return None
    rest = text[found.end() :]
    row: dict[str, Any]
    try:
        decoded, _ = json.JSONDecoder().raw_decode(rest)
        row = decoded if isinstance(decoded, dict) else {"row": decoded}
    except ValueError:  # cut at _SHOWN_ROW characters
        row = {"row": rest.split(" SQLSTATE:")[0].splitlines()[0]}
    error = row_rule_violation(rules[int(found.group(1))], row, None)
    error.args = (f"{what} failed: {error}",)
    return error


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
