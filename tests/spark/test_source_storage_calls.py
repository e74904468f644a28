"""Writing 1,000 files through `format("txnlog")` makes no listing, no footer read, no move or copy
of a data file: the only storage calls besides writing each file once are the log's.

Every file-system call that touches the table -- in the driver and in every Spark Python worker --
is recorded by a `sitecustomize` module put on the PYTHONPATH of a fresh interpreter (Spark passes
PYTHONPATH on to its workers), which wraps `os` listing / renaming / linking, `shutil` copies and
fsspec's local file system."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SITECUSTOMIZE = r"""
import json, os, shutil

_LOG, _ROOT = os.environ.get("TXNLOG_COUNT_LOG"), os.environ.get("TXNLOG_COUNT_ROOT")


def _record(op, *paths):
    paths = [os.fspath(p) for p in paths if isinstance(p, (str, bytes, os.PathLike))]
    paths = [p.decode() if isinstance(p, bytes) else p for p in paths]
    if _LOG and _ROOT and any(p.startswith(_ROOT) for p in paths):
        with open(_LOG, "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "op": op, "paths": paths}) + "\n")


def _wrap(owner, name, op):
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):
        _record(op, *args[:2])
        return original(*args, **kwargs)

    setattr(owner, name, wrapped)


if _LOG:
    for name, op in [("scandir", "list"), ("listdir", "list"), ("replace", "move"), ("rename", "move"),
                     ("link", "link")]:
        _wrap(os, name, op)
    for name in ("copy", "copy2", "copyfile", "move"):
        _wrap(shutil, name, "copy" if name != "move" else "move")
    try:
        from fsspec.implementations import local as _local
        cls = _local.LocalFileSystem
        for name, op in [("ls", "list"), ("find", "list"), ("glob", "list"), ("mv", "move"),
                         ("cp_file", "copy"), ("copy", "copy")]:
            original = getattr(cls, name)

            def method(self, path, *args, __o=original, __op=op, **kwargs):
                _record(__op, path)
                return __o(self, path, *args, **kwargs)

            setattr(cls, name, method)
        original_open = cls._open

        def _open(self, path, mode="rb", *args, __o=original_open, **kwargs):
            _record("open-" + ("write" if "w" in mode else "read"), path)
            return __o(self, path, mode, *args, **kwargs)

        cls._open = _open
    except ImportError:
        pass
"""

SCRIPT = """
import json, os, sys
from pyspark.sql import SparkSession
from airflow_txnlog.spark import register
root = sys.argv[1]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").getOrCreate())
register(spark)
df = spark.range(0, 100_000, numPartitions=10).selectExpr("id", "id * 2 as v")
df.write.format("txnlog").mode("append").option("maxRowsPerFile", 100).save(root)  # creates: 2 commits
df.write.format("txnlog").mode("append").option("maxRowsPerFile", 100).save(root)  # 1,000 files, 1 commit
spark.stop()
print("DONE")
"""


def test_a_1000_file_write_lists_reads_and_moves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "calls.jsonl"
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", ""), os.getcwd()]),
        "TXNLOG_COUNT_LOG": str(log),
        "TXNLOG_COUNT_ROOT": str(root),
    }
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(root)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        check=False,
    )
    assert "DONE" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-4000:]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    log_dir = str(root / "_delta_log")

    def in_log(call: dict[str, object]) -> bool:
        return all(str(p).startswith(log_dir) for p in call["paths"])  # type: ignore[union-attr]

    data = [c for c in calls if not in_log(c)]
    writes = [c for c in data if c["op"] == "open-write" and str(c["paths"][0]).endswith(".parquet")]
    assert len(writes) == 2000  # each of the 2 x 1,000 files written once, straight to its place
    assert len({c["paths"][0] for c in writes}) == 2000
    others = [c for c in data if c not in writes]
    assert [c for c in others if c["op"] in ("list", "move", "copy", "link", "open-read")] == [], others[:5]
    assert len({c["pid"] for c in writes}) >= 2  # (written by Spark's Python workers, not the driver)
    log_calls = [c for c in calls if in_log(c)]
    assert not [c for c in log_calls if c["op"] == "copy"]
    # the log's own calls: per write, a listing or two and the commit (temp file, then link)
    assert len([c for c in log_calls if c["op"] == "list"]) <= 12, log_calls
    print(
        "storage calls:",
        {op: sum(1 for c in calls if c["op"] == op and not in_log(c)) for op in ("open-write",)},
        "log:",
        {op: sum(1 for c in log_calls if c["op"] == op) for op in sorted({c["op"] for c in log_calls})},
    )
