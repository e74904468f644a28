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

`check_condition_meanwhile` runs the same check on a helper thread and hands back a `PendingCheck`:
the analysis is JVM time (8-25 ms on 2 cores, with the JIT cold for it: most of the 35 ms a
selective DELETE had lost, docs/benchmarks.md D1), which a DELETE overlaps with its engine planning
instead of paying first. The caller waits for it (`wait()`, or leaving a `with` block on an error)
before its first Spark job, file write or commit, so an invalid predicate still fails with the same
error before anything happens.

A pass is remembered when the caller vouches (`columns_key`) that the SQL is made of what the
engine's SQL room parses: columns, literals, operators and builtin functions. Builtins resolve before
any session function in Spark 4 (a UDF named `abs` does not change `abs(id)`), so Spark's answer for
that text over the same columns changes only with the settings that change parsing and resolution
(`_ANALYSIS_SETTINGS`), which are part of the remembered key. A failure is never remembered.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import DataFrame, SparkSession
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


class PendingCheck:
    """A SQL check running on the helper thread (`check_condition_meanwhile`)."""

    def __init__(self, future: Future[None] | None) -> None:
        self._future = future

    def wait(self) -> None:
        """Return once the check passed; raise its error if it failed."""
        if self._future is not None:
            self._future.result()

    def __enter__(self) -> PendingCheck:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if et is not None:  # the SQL's own error comes first, as when the check ran before the work
            self.wait()


def check_condition_meanwhile(
    spark: SparkSession,
    rows: Callable[[], DataFrame],
    sql: str | None,
    what: str,
    *,
    columns_key: str | None = None,
) -> PendingCheck:
    """`check_condition(rows(), sql, what)` started on the helper thread (see the module docstring).
    `columns_key` identifies `rows`' columns (the table's schema JSON) and vouches that `sql` is made
    of the engine's SQL only: a pass is then remembered for the same session, columns, text and
    analysis settings."""
    if sql is None:
        return PendingCheck(None)
    return PendingCheck(_helper().submit(_check_once, spark, rows, sql, what, columns_key))


# Settings that change how Spark parses or resolves a predicate of columns, literals, operators and
# builtin functions: a remembered pass holds for the values it was analysed under only.
_ANALYSIS_SETTINGS = (
    "spark.sql.caseSensitive",
    "spark.sql.ansi.enabled",
    "spark.sql.ansi.enforceReservedKeywords",
    "spark.sql.ansi.doubleQuotedIdentifiers",
    "spark.sql.parser.quotedRegexColumnNames",
    "spark.sql.timestampType",
)
_PASSES_KEPT = 1024
_passes: OrderedDict[tuple[int, str, str, str, tuple[str, ...]], weakref.ref[SparkSession]] = OrderedDict()
_passes_lock = threading.Lock()


def _check_once(
    spark: SparkSession, rows: Callable[[], DataFrame], sql: str, what: str, columns_key: str | None
) -> None:
    key = None if columns_key is None else _pass_key(spark, columns_key, sql, what)
    if key is not None:
        with _passes_lock:
            seen = _passes.get(key)
            if seen is not None and seen() is spark:
                _passes.move_to_end(key)
                return
    check_condition(rows(), sql, what)
    if key is not None:
        with _passes_lock:
            _passes[key] = weakref.ref(spark)
            while len(_passes) > _PASSES_KEPT:
                _passes.popitem(last=False)


def _pass_key(
    spark: SparkSession, columns_key: str, sql: str, what: str
) -> tuple[int, str, str, str, tuple[str, ...]] | None:
    """The remembered key of a pass, None (not remembered) if a setting cannot be read."""
    try:
        settings = tuple(str(spark.conf.get(k)) for k in _ANALYSIS_SETTINGS)
    except Exception:  # (a Spark without one of them: check every time)
        return None
    return (id(spark), columns_key, sql, what, settings)


_helper_lock = threading.Lock()
_helper_pools: dict[int, ThreadPoolExecutor] = {}  # by process id


def _helper() -> ThreadPoolExecutor:
    """One thread for every check, kept: PySpark pins a Python thread to a JVM thread and its own
    gateway connection, which a new thread per check would open each time. A forked child (whose
    copy of its parent's pool has no thread) makes its own."""
    with _helper_lock:
        pid = os.getpid()
        if pid not in _helper_pools:
            _helper_pools.clear()
            _helper_pools[pid] = ThreadPoolExecutor(1, thread_name_prefix="txnlog-sql-check")
        return _helper_pools[pid]


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
