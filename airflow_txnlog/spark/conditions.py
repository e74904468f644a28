"""A DML's SQL, checked by Spark's analyzer before any job, with errors that say what is wrong.

A DELETE / UPDATE predicate, an UPDATE's set expressions and a MERGE's ON clause are written against
the table's columns (and the source's, for MERGE). Left to the jobs, a misspelled column surfaced as
a raw `AnalysisException` about internal plan columns (`_txnlog_key`), after PySpark had logged it
at ERROR with its query context; `amount >>> 3` spoke of the `coalesce` the planner wraps around it.

Here each piece of SQL is analysed over empty DataFrames (local relations: no job runs) holding
exactly the user's columns, with PySpark's query-context loggers muted for the check
(`errors.quiet_analysis`), and Spark's error becomes ours: `PredicateError` for a condition,
`InvalidArgumentError` for an expression. The first line names the clause and the column, then what
is valid:

    unknown column `amout` in the DELETE predicate; columns: id, amount, day
    the DELETE predicate must be a condition (true / false): "(amount >>> 3)" is BIGINT
    the DELETE predicate is not valid Spark SQL: [PARSE_SYNTAX_ERROR] Syntax error at or near end ...

Spark's exception stays the `__cause__`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.engine import InvalidArgumentError, PredicateError, TxnLogError
from airflow_txnlog.spark.errors import quiet_analysis

_NOT_BOOLEAN = ("DATATYPE_MISMATCH.FILTER_NOT_BOOLEAN", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE")


def check_condition(rows: DataFrame, sql: str | None, what: str, columns: str | None = None) -> None:
    """`sql` must be a boolean condition over `rows`' columns (PredicateError otherwise); `columns`
    describes them in the message (default: their names)."""
    if sql is None:
        return
    with quiet_analysis():
        try:
            rows.filter(F.expr(sql))
        except AnalysisException as exc:
            raise _error(PredicateError, exc, what, columns or f"columns: {_columns(rows)}") from exc


def check_expressions(
    rows: DataFrame, expressions: Mapping[str, str], what: str, columns: str | None = None
) -> None:
    """Each SQL expression (a value to set) must resolve over `rows`' columns."""
    valid = columns or f"columns: {_columns(rows)}"
    with quiet_analysis():
        for column, sql in expressions.items():
            try:
                rows.select(F.expr(sql))
            except AnalysisException as exc:
                raise _error(InvalidArgumentError, exc, f"{what} for {column!r}", valid) from exc


def check_join(target: DataFrame, source: DataFrame, on: str, what: str, columns: str) -> None:
    """`on` must be a boolean condition joining the aliased `target` and `source`."""
    with quiet_analysis():
        try:
            target.join(source, F.expr(on), "inner")
        except AnalysisException as exc:
            raise _error(PredicateError, exc, what, columns) from exc


def _columns(rows: DataFrame) -> str:
    return ", ".join(rows.columns)


def _error(kind: type[TxnLogError], exc: AnalysisException, what: str, valid: str) -> TxnLogError:
    """Our error for Spark's analysis error `exc` of the SQL in `what`; `valid` names the columns."""
    condition = exc.getCondition() or ""
    params = exc.getMessageParameters() or {}
    if condition.startswith("UNRESOLVED_COLUMN") and "objectName" in params:
        return kind(f"unknown column {params['objectName']} in the {what}; {valid}")
    if condition in _NOT_BOOLEAN and kind is PredicateError:
        detail = params.get("sqlExpr") or params.get("exprName") or ""
        kind_of = params.get("actualDataType") or params.get("inputType") or params.get("type") or ""
        return kind(f"the {what} must be a condition (true / false): {detail} is {kind_of}")
    if isinstance(exc, ParseException):
        return kind(f"the {what} is not valid Spark SQL: {_first_line(exc)}")
    return kind(f"the {what} cannot be analysed: {_first_line(exc)} ({valid})")


def _first_line(exc: AnalysisException) -> str:
    """Spark's message without its SQLSTATE tail (ParseException's first line is empty)."""
    line = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
    return line.split(" SQLSTATE:")[0].strip()
