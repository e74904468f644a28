"""Errors of the `txnlog` data source as Spark reports them, turned back into ours.

Spark runs a Python data source in its own Python worker and reports what the source raised as its
own `AnalysisException` (PYTHON_DATA_SOURCE_ERROR) or job failure, whose message is the worker's
traceback: Spark's sentence first, ours last (`airflow_txnlog.engine.errors.InvalidArgumentError:
txnlog: unknown read options ['bogus']; ...`), about 1 KB in all. The class of an exception raised
through Spark's own API (`spark.read.format("txnlog")...load()`) is Spark's to choose.

    carried_error(exc)   the TxnLogError a Spark exception carries from the data source: the last
                         `<module>.<Class>: <message>` line whose class is one of ours (found among
                         TxnLogError's subclasses by qualified name; nothing is imported by name).
                         It holds the message only (no extra attributes such as `feature`), with
                         the Spark exception as `__cause__` when raised; None for other failures.
    txnlog_errors()      a context manager that re-raises such an exception as that TxnLogError,
                         for code that calls Spark's reader / writer with format("txnlog"); the
                         SparkTable API applies it itself.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from airflow_txnlog.engine import TxnLogError
from airflow_txnlog.spark.conditions import quiet_analysis

_RAISED = re.compile(r"^(airflow_txnlog(?:\.\w+)+)\.(\w+): (.+)$", re.MULTILINE)


def _ours() -> dict[str, type[TxnLogError]]:
    """Every loaded TxnLogError subclass (the root included) by `module.Class`."""
    found: dict[str, type[TxnLogError]] = {}
    pending: list[type[TxnLogError]] = [TxnLogError]
    while pending:
        cls = pending.pop()
        found[f"{cls.__module__}.{cls.__qualname__}"] = cls
        pending.extend(cls.__subclasses__())
    return found


def carried_error(exc: BaseException) -> TxnLogError | None:
    """The TxnLogError `exc` (a Spark exception) carries from the data source, or None."""
    classes = _ours()
    for module, name, message in reversed(_RAISED.findall(str(exc))):
        cls = classes.get(f"{module}.{name}")
        if cls is not None:
            error = cls.__new__(cls)  # its own __init__ may want more than the message (feature=...)
            Exception.__init__(error, message.split(" SQLSTATE:")[0].strip())
            return error
    return None


@contextlib.contextmanager
def txnlog_errors() -> Iterator[None]:
    """Re-raise a Spark exception that carries one of our errors as that error (first line: ours)."""
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
