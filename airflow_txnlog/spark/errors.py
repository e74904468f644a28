"""Errors raised by the Spark layer, and every marker and decoder of what a failed Spark job says.

The classes all derive from the engine's `TxnLogError`. The engine's own errors (conflicts,
`SchemaMismatchError`, `PredicateError`, ...) pass through unchanged; these add the failures that only
a Spark job can detect while it runs (a row that breaks a check fails the job, so nothing is
committed).

A failed job reaches the driver as text: Spark's exception, whose message holds the Python worker's
traceback (Spark's sentence first, ours last, e.g. `airflow_txnlog.engine.errors.InvalidArgumentError:
txnlog: unknown read options ['bogus']; ...`). What our code inside a job raises is therefore marked
where it is raised, and read back here, in one place:

    CHECK_MARKER  `checked(detail)`: a check of ours inside a job (`raise_error`: a NULL in a NOT NULL
                  column, a row outside replace_where, a file not in the table); `spark_failure` makes
                  it a ConstraintViolationError
    RULE_TAG      `rule_tagged(i)`: the guard of the table's rule `i` (spark.features.rules), the row
                  after it as JSON; `rule_failure` makes it that rule's ConstraintViolationError
    CARRIED       `carry(error)` (the data source's methods are `@carrying`): a TxnLogError the
                  `txnlog` data source raises leaves with a note after its message: its class,
                  message and fields (`constraint`, `row`, `feature`, `winning_version`, ...) as JSON;
                  `carried_error` rebuilds it with all of them (a value JSON cannot hold, such as a
                  date, comes back as its text). Without the note (a message Spark cut short) the
                  last `<module>.<Class>: <message>` line of ours gives the class and message only.
    (no marker)   a worker that cannot import the package or pyarrow: `workers_failure`

`spark_failure` tries them in that order; anything else is a `SparkJobError` with Spark's first line.
`txnlog_errors()` re-raises what a Spark call of `format("txnlog")` carries as our error, with
PySpark's loggers of analysis errors muted meanwhile (`quiet_analysis`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ParamSpec, TypeVar

from pyspark.logger import PySparkLogger

from airflow_txnlog.engine import ConstraintViolationError, TxnLogError
from airflow_txnlog.engine.spi import RowRule, row_rule_violation

__all__ = [
    "CARRIED",
    "CHECK_MARKER",
    "RULE_TAG",
    "ConstraintViolationError",  # the engine's: one class whichever path found the violating row
    "MultipleSourceRowsMatchedError",
    "SparkJobError",
    "SparkWorkersError",
    "carried_error",
    "carry",
    "carrying",
    "carrying_iterator",
    "checked",
    "quiet_analysis",
    "rule_failure",
    "rule_tagged",
    "spark_failure",
    "txnlog_errors",
    "workers_failure",
    "workers_fix",
]

#: Marker put in the messages of checks raised inside Spark jobs, to recognise them afterwards.
CHECK_MARKER = "[TXNLOG_CHECK]"
#: After CHECK_MARKER in a rule guard's message: the rule's index, then the row as JSON.
RULE_TAG = "[TXNLOG_RULE "
#: Starts the note a carried error leaves with: its class, message and fields as JSON.
CARRIED = "[TXNLOG_ERROR]"

_TAGGED = re.compile(re.escape(RULE_TAG) + r"(\d+)\] ")
_NOTE = re.compile(re.escape(CARRIED) + " *")
_RAISED = re.compile(r"^(airflow_txnlog(?:\.\w+)+)\.(\w+): (.+)$", re.MULTILINE)
# a Python worker that cannot import the package or a dependency (pyarrow, fsspec, ...: which one
# fails first depends on the import order, not on what the user must fix)
_MISSING = re.compile(r"No module named '[\w.]+'")
_QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")

P = ParamSpec("P")
R = TypeVar("R")


class MultipleSourceRowsMatchedError(TxnLogError):
    """MERGE: one target row matched several source rows, so which one updates (or deletes) it is
    ambiguous. Delta raises the same error (DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE).

    Help: deduplicate the source on the merge keys, or make the ON condition more specific.
    """


class SparkJobError(TxnLogError):
    """A Spark job of a write or DML failed; the table is unchanged (staged files were removed or are
    unreferenced orphans that vacuum reclaims). The Spark exception is the `__cause__`."""


class SparkWorkersError(SparkJobError):
    """A Spark job failed because its Python workers run an interpreter that cannot import this
    package (or pyarrow); the message names the interpreter to give them (`spark.source.workers`)."""


# ---------------------------------------------------------------- marking (inside the jobs)
def checked(detail: str) -> str:
    """The message of a check of ours that fails a job (`F.raise_error`), as `spark_failure` reads it."""
    return f"{CHECK_MARKER} {detail}"


def rule_tagged(index: int) -> str:
    """What starts the message of the guard of rule `index`; the offending row's JSON follows it."""
    return checked(f"{RULE_TAG}{index}] ")


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def carry(error: TxnLogError) -> TxnLogError:
    """`error` with a note (printed after its message in the traceback Spark passes back) holding its
    class, message and fields as JSON, once; `carried_error` reads it."""
    if any(str(n).startswith(CARRIED) for n in getattr(error, "__notes__", ())):
        return error
    fields = {k: v for k, v in vars(error).items() if not k.startswith("_")}
    payload = {"class": _qualified(type(error)), "message": str(error), "fields": fields}
    try:
        note = json.dumps(payload, default=str)
    except (TypeError, ValueError):  # (a field JSON cannot hold even as text: the class and message)
        note = json.dumps({**payload, "fields": {}})
    error.add_note(f"{CARRIED} {note}")
    return error


def carrying(method: Callable[P, R]) -> Callable[P, R]:
    """A data-source method Spark calls: a TxnLogError it raises leaves carrying its fields (`carry`)."""

    @functools.wraps(method)
    def carried(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except TxnLogError as exc:
            carry(exc)
            raise

    return carried


def carrying_iterator(method: Callable[P, Iterator[R]]) -> Callable[P, Iterator[R]]:
    """`carrying` for a method that yields (`read`, `pushFilters`): errors raised while it runs."""

    @functools.wraps(method)
    def carried(*args: P.args, **kwargs: P.kwargs) -> Iterator[R]:
        try:
            yield from method(*args, **kwargs)
        except TxnLogError as exc:
            carry(exc)
            raise

    return carried


# ---------------------------------------------------------------- reading (on the driver)
def spark_failure(exc: Exception, what: str) -> Exception:
    """The error to raise for a failed Spark job (a check of ours, or anything else)."""
    text = str(exc)
    if CHECK_MARKER in text:
        detail = text.split(CHECK_MARKER, 1)[1].strip().splitlines()[0].split(" SQLSTATE:")[0]
        return ConstraintViolationError(f"{what} failed, nothing was committed: {detail}")
    workers = workers_failure(text, what)
    if workers is not None:
        return workers
    carried = carried_error(exc)  # our data source refused something: that error, not Spark's wrapper
    if carried is not None:
        return carried
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return SparkJobError(f"the Spark job for {what} failed, the table is unchanged: {first}")


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
    except ValueError:  # (cut at the guard's length limit of the row)
        row = {"row": rest.split(" SQLSTATE:")[0].splitlines()[0]}
    error = row_rule_violation(rules[int(found.group(1))], row, None)
    error.args = (f"{what} failed: {error}",)
    return error


def workers_fix() -> str:
    """How to give Spark's Python workers this interpreter, with its path."""
    return (
        f"start the Spark session with PYSPARK_PYTHON={sys.executable} (this interpreter), e.g. "
        "os.environ['PYSPARK_PYTHON'] = sys.executable before SparkSession.builder...getOrCreate(); "
        "with spark-submit: --conf spark.pyspark.python=<that interpreter>"
    )


def workers_failure(text: str, what: str) -> SparkWorkersError | None:
    """The error for a job that failed because a Python worker could not import what it needs."""
    found = _MISSING.search(text)
    if found is None:
        return None
    missing = found.group(0)
    return SparkWorkersError(
        f"{what} failed, the table is unchanged: Spark's Python workers cannot import the package "
        f"({missing}). Fix: {workers_fix()}"
    )


def _ours() -> dict[str, type[TxnLogError]]:
    """Every loaded TxnLogError subclass (the root included) by `module.Class`."""
    found: dict[str, type[TxnLogError]] = {}
    pending: list[type[TxnLogError]] = [TxnLogError]
    while pending:
        cls = pending.pop()
        found[_qualified(cls)] = cls
        pending.extend(cls.__subclasses__())
    return found


def _rebuilt(cls: type[TxnLogError], message: str, fields: dict[str, Any]) -> TxnLogError:
    error = cls.__new__(cls)  # its own __init__ may want more than the message (feature=...)
    Exception.__init__(error, message)
    vars(error).update({k: v for k, v in fields.items() if not k.startswith("_")})
    return error


def _from_note(raw: object, classes: dict[str, type[TxnLogError]]) -> TxnLogError | None:
    if not isinstance(raw, dict):
        return None
    cls = classes.get(str(raw.get("class")))
    message, fields = raw.get("message"), raw.get("fields")
    if cls is None or not isinstance(message, str) or not isinstance(fields, dict):
        return None
    return _rebuilt(cls, message, fields)


def _carried_notes(text: str, classes: dict[str, type[TxnLogError]]) -> Iterator[TxnLogError]:
    """The errors of the well-formed CARRIED notes in `text`, in order."""
    decoder = json.JSONDecoder()
    for found in _NOTE.finditer(text):
        try:
            raw, _ = decoder.raw_decode(text, found.end())
        except ValueError:  # (cut short, or the marker's text inside a message)
            continue
        error = _from_note(raw, classes)
        if error is not None:
            yield error


def carried_error(exc: BaseException) -> TxnLogError | None:
    """The TxnLogError `exc` (a Spark exception) carries from the data source, or None: the last
    CARRIED note's, with its fields; else the last `<module>.<Class>: <message>` line of ours."""
    text = str(exc)
    classes = _ours()
    notes = list(_carried_notes(text, classes))
    if notes:
        return notes[-1]  # (a traceback ends with the exception raised: its note comes last)
    for module, name, message in reversed(_RAISED.findall(text)):
        cls = classes.get(f"{module}.{name}")
        if cls is not None:
            return _rebuilt(cls, message.split(" SQLSTATE:")[0].strip(), {})
    return None


@contextlib.contextmanager
def quiet_analysis() -> Iterator[None]:
    """Mute PySpark's loggers that print every captured analysis error at ERROR: while a user's SQL
    is checked, the error raised in its place is the report."""
    # PySparkLogger.getLogger: a plain logging.getLogger would create them as plain Loggers, whose
    # .exception() refuses the errorClass= PySpark passes (a TypeError in every later analysis error).
    loggers = [PySparkLogger.getLogger(name) for name in _QUERY_CONTEXT_LOGGERS]
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, was in zip(loggers, before, strict=True):
            logger.disabled = was


@contextlib.contextmanager
def txnlog_errors() -> Iterator[None]:
    """Re-raise a Spark exception that carries one of our errors as that error (first line: ours), for
    code that calls Spark's reader / writer with format("txnlog"); the SparkTable API applies it
    itself."""
    try:
        with quiet_analysis():
            yield
    except TxnLogError:
        raise
    except Exception as exc:  # pyspark raises many types (captured JVM errors, Py4J, Connect)
        carried = carried_error(exc)
        if carried is None:
            raise
        raise carried from exc
