"""Spark on a table with deletion vectors (the Spark-written reference table dv-partitioned-with-checkpoint:
(x % 10, x, "foo" + x % 5) for x in 0..49, then 15 DELETEs of col1 = 2n). Expected rows are Delta
Kernel's (tests/compat/test_golden.py); DML on it rewrites files copy-on-write, and every remove
carries the DV of the file it removes, so the old (path, DV) key is gone from the log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable

pytestmark = [pytest.mark.spark]

GOLDEN = Path(__file__).parents[1] / "compat" / "golden" / "dv-partitioned-with-checkpoint"
EXPECTED = [x for x in range(50) if not (x % 2 == 0 and x < 30)]


@pytest.fixture
def dv_path(tmp_path: Path) -> Path:
    root = tmp_path / "dv"
    shutil.copytree(GOLDEN, root, ignore=shutil.ignore_patterns("*.crc"))
    return root


def _col1(df) -> list[int]:  # type: ignore[no-untyped-def]
    return sorted(r["col1"] for r in df.select("col1").collect())


def test_to_df_drops_the_rows_deletion_vectors_delete(spark, dv_path: Path) -> None:
    t = SparkTable(spark, str(dv_path))
    assert _col1(t.to_df()) == EXPECTED
    assert _col1(t.to_df(version=0)) == list(range(50))
    rows = t.to_df().where("part = 1").collect()
    assert sorted((r["part"], r["col1"], r["col2"]) for r in rows) == [
        (x % 10, x, f"foo{x % 5}") for x in EXPECTED if x % 10 == 1
    ]


def test_delete_on_a_dv_table_rewrites_and_removes_the_dv_keys(spark, dv_path: Path) -> None:
    dv_files = {f.path for f in Table.open(str(dv_path)).snapshot().files() if f.deletion_vector}
    assert dv_files
    # the two files with DVs (col1 26/36/46 and 28/38/48, 26 and 28 deleted) hold matches: they are
    # rewritten, and 26 / 28 must not come back
    result = SparkTable(spark, str(dv_path)).delete("col1 >= 40 OR col1 = 31")
    assert _col1(SparkTable(spark, str(dv_path)).to_df()) == [x for x in EXPECTED if x < 40 and x != 31]
    commit = (dv_path / "_delta_log" / f"{result.version:020d}.json").read_text().splitlines()
    removes = [json.loads(line)["remove"] for line in commit if '"remove"' in line]
    assert sum(1 for r in removes if r.get("deletionVector")) == 2
    for r in removes:
        assert bool(r.get("deletionVector")) == (r["path"] in dv_files)
    snap = Table.open(str(dv_path)).snapshot()
    assert len({f.path for f in snap.files()}) == len(snap.files())  # no path live twice
    assert sorted(snap.to_arrow(columns=["col1"]).column("col1").to_pylist()) == _col1(
        SparkTable(spark, str(dv_path)).to_df()
    )


def test_optimize_purges_deletion_vectors(spark, dv_path: Path) -> None:
    # both files with DVs delete 1 of 3 rows (33% > Delta's 5%): rewritten, with their partition's files
    result = SparkTable(spark, str(dv_path)).optimize()
    snap = Table.open(str(dv_path)).snapshot()
    assert not [f for f in snap.files() if f.deletion_vector]
    assert result.metrics["numRemovedFiles"] >= 2
    assert _col1(SparkTable(spark, str(dv_path)).to_df()) == EXPECTED
    assert sorted(snap.to_arrow(columns=["col1"]).column("col1").to_pylist()) == EXPECTED
