"""Errors raised by the Spark layer (all derive from the engine's `TxnLogError`).

The engine's own errors (conflicts, `SchemaMismatchError`, `PredicateError`, ...) pass through
unchanged; these add the failures that only a Spark job can detect while it runs (a row that breaks
a check fails the job, so nothing is committed).
"""

from __future__ import annotations

from airflow_txnlog.engine import ConstraintViolationError, TxnLogError

__all__ = [
    "ConstraintViolationError",  # the engine's: one class whichever path found the violating row
    "MultipleSourceRowsMatchedError",
    "SparkJobError",
    "SparkWorkersError",
]


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
    package (or pyarrow); the message names the interpreter to give them (`spark.workers`)."""
