"""Spark's Python workers must import this package (issue 30): a local session whose workers would
start another environment's interpreter is warned about before any job, and a job that fails because
a worker could not import the package says so in its first line, with the fix.

The last test is the newcomer's case, run for real: `.venv/bin/python script.py` with the venv not
activated and no PYSPARK_PYTHON, so the workers start `python3` from PATH, an interpreter without
the package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_txnlog.engine import TxnLogError
from airflow_txnlog.spark import SparkJobError, SparkWorkersError, WorkersCannotImportWarning
from airflow_txnlog.spark.errors import workers_failure
from airflow_txnlog.spark.source import workers


def _session(master: str, python: str) -> SimpleNamespace:
    return SimpleNamespace(sparkContext=SimpleNamespace(master=master, pythonExec=python))


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "_checked", {})


def test_this_interpreter_and_its_environment_pass_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))  # an activated venv: python3 is its own
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert workers.check_workers(_session("local[2]", sys.executable))  # type: ignore[arg-type]
        assert workers.check_workers(_session("local[*]", "python3"))  # type: ignore[arg-type]


def test_another_interpreter_on_a_local_session_is_warned_about_once(tmp_path: Path) -> None:
    other = tmp_path / "bin" / "python3"
    other.parent.mkdir()
    other.symlink_to(sys._base_executable)  # the base interpreter: no venv, no airflow_txnlog
    session = _session("local[1]", str(other))
    with pytest.warns(WorkersCannotImportWarning) as caught:
        assert not workers.check_workers(session)  # type: ignore[arg-type]
    message = str(caught[0].message)
    assert f"will run {str(other)!r}" in message and f"not this interpreter ({sys.executable})" in message
    assert f"PYSPARK_PYTHON={sys.executable}" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        workers.check_workers(session)  # type: ignore[arg-type]  # once per interpreter


def test_clusters_and_connect_are_not_checked() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert workers.check_workers(_session("spark://host:7077", "/nowhere/python"))  # type: ignore[arg-type]
        assert workers.check_workers(SimpleNamespace())  # type: ignore[arg-type]  # no sparkContext


def test_a_worker_import_failure_becomes_a_workers_error() -> None:
    text = (
        "Failed to initialize Python data source writer: Traceback ...\n"
        "ModuleNotFoundError: No module named 'airflow_txnlog'"
    )
    error = workers_failure(text, "WRITE")
    assert isinstance(error, SparkWorkersError) and isinstance(error, SparkJobError)
    assert isinstance(error, TxnLogError)
    first = str(error).splitlines()[0]
    assert first.startswith("WRITE failed, the table is unchanged: Spark's Python workers cannot import")
    assert f"PYSPARK_PYTHON={sys.executable}" in first
    assert workers_failure("Division by zero", "WRITE") is None


SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from airflow_txnlog.spark import SparkTable

    warnings.simplefilter("always")
    out = {"warned_before_job": False}
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        st = SparkTable.create(spark, sys.argv[1], pa.schema([("id", pa.int64())]))
        out["warned_before_job"] = any("Spark's Python workers will run" in str(w.message) for w in caught)
    try:
        st.write(spark.createDataFrame([(1,)], "id long"))
        out["error"] = None
    except Exception as exc:
        out["error"] = type(exc).__name__
        out["first_line"] = str(exc).splitlines()[0]
    out["version"] = st.table.latest_version()
    spark.stop()
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
    """
)


@pytest.mark.spark
@pytest.mark.slow
def test_a_plain_script_without_pyspark_python_is_told_what_to_do(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # PATH as a user's shell has it: a python3 that lacks the package
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys._base_executable)
    java = shutil.which("java")
    assert java is not None
    env = {
        "PATH": f"{bin_dir}:{os.path.dirname(os.path.realpath(java))}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SPARK_LOCAL_IP": "127.0.0.1",
        **{k: v for k, v in os.environ.items() if k == "JAVA_HOME"},
    }
    result_file = tmp_path / "result.json"
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "t"), str(result_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result_file.exists(), run.stderr[-3000:]
    out = json.loads(result_file.read_text())
    assert out["warned_before_job"], run.stderr[-3000:]
    assert out["error"] == "SparkWorkersError"
    assert out["first_line"].startswith(
        "WRITE failed, the table is unchanged: Spark's Python workers cannot import the package"
    )
    assert f"PYSPARK_PYTHON={sys.executable}" in out["first_line"]
    assert out["version"] == 0  # nothing was committed
