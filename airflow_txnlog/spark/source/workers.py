"""Can Spark's Python workers import this package? Say so before the first job, and in the error.

The `txnlog` data source runs in Spark's Python workers, which start the interpreter the session
was created with: PySpark takes `PYSPARK_PYTHON` when the SparkContext starts (`spark-submit` sets it
from `spark.pyspark.python`), else `python3` from `PATH`. A script run as `.venv/bin/python job.py`,
without the venv activated, therefore gets workers that lack `airflow_txnlog` (and often pyarrow),
and every txnlog job fails with Spark's "Failed to initialize Python data source writer".

    check_workers(spark)   on a local session (the workers run on this machine), once per worker
                           interpreter: resolve it as PySpark will (a path, or a name on PATH); when
                           it is neither this interpreter nor one in this environment's `bin/`
                           folder, warn (WorkersCannotImportWarning) before any job runs. The check
                           starts no process (the package runs no subprocesses), so a foreign
                           interpreter that happens to have the package installed too is warned
                           about needlessly; the warning says so. Remote clusters and Spark Connect
                           are not checked: their workers' interpreter is not this machine's.
    workers_failure(text)  (in `spark.errors`, with the other decoders of failed jobs) the
                           SparkWorkersError for a job that failed because a worker could not
                           import the package or pyarrow, or None for any other failure.

The fix named in both (`errors.workers_fix`): the worker interpreter must be one that has this
package, e.g. this one (`sys.executable`), set as `PYSPARK_PYTHON` before the Spark session starts.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings

from pyspark.sql import SparkSession

from airflow_txnlog.spark.errors import workers_fix

_checked: dict[str, bool] = {}  # worker interpreter -> whether it is this environment's


class WorkersCannotImportWarning(UserWarning):
    """A local Spark session's Python workers would start an interpreter without airflow_txnlog."""


def worker_python(spark: SparkSession) -> str | None:
    """The interpreter a local session's workers start; None for a cluster or Spark Connect."""
    try:
        sc = spark.sparkContext
        master = str(sc.master)
        python = str(sc.pythonExec)
    except Exception:  # Spark Connect has no SparkContext
        return None
    return python if master.startswith("local") else None


def same_environment(python: str) -> bool:
    """Whether `python` (a path, or a name PySpark looks up on PATH) is this interpreter or one in this
    environment's `bin/` folder (a venv's `python3` beside its `python`)."""
    found = shutil.which(python)
    if found is None:
        return False
    here = os.path.abspath(sys.executable)
    there = os.path.abspath(found)
    if there == here or os.path.dirname(there) == os.path.dirname(here):
        return True
    # A venv's python is a symlink to its base interpreter, so one binary serves several environments:
    # the same file means the same environment only outside venvs.
    return _venv(here) is None and _venv(there) is None and os.path.samefile(there, here)


def _venv(python: str) -> str | None:
    """The venv `python` belongs to (the folder above its `bin/` holding a pyvenv.cfg), or None."""
    root = os.path.dirname(os.path.dirname(python))
    return root if os.path.exists(os.path.join(root, "pyvenv.cfg")) else None


def check_workers(spark: SparkSession) -> bool:
    """Warn when a local session's workers would run an interpreter of another environment (see the
    module docstring); True when they run this one, or cannot be checked."""
    python = worker_python(spark)
    if python is None:
        return True
    if python not in _checked:
        _checked[python] = same_environment(python)
        if not _checked[python]:
            warnings.warn(
                f"Spark's Python workers will run {python!r} ({shutil.which(python) or 'not found'}), "
                f"not this interpreter ({sys.executable}): unless that one has airflow_txnlog and "
                f"pyarrow installed too, every txnlog read and write fails. Fix: {workers_fix()}",
                WorkersCannotImportWarning,
                stacklevel=3,
            )
    return _checked[python]
