"""Spark on a table with deletion vectors (the Spark-written reference table dv-partitioned-with-checkpoint:
(x % 10, x, "foo" + x % 5) for x in 0..49, then 15 DELETEs of col1 = 2n). Expected rows are Delta
Kernel's (tests/compat/test_golden.py); DML on it rewrites files copy-on-write, and every remove
carries the DV of the file it removes, so the old (path, DV) key is gone from the log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table, Transaction
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


# ----------------------------------------------------------------------------- writing DVs
SCHEMA_W = pa.schema([("id", pa.int64()), ("p", pa.string())])


@pytest.fixture
def dv_on(spark, tmp_path: Path) -> Path:
    root = tmp_path / "dvw"
    Table.create(
        str(root), schema=SCHEMA_W, partition_by=["p"], properties={"delta.enableDeletionVectors": "true"}
    )
    df = spark.createDataFrame([(i, "a" if i < 50 else "b") for i in range(100)], "id long, p string")
    SparkTable(spark, str(root)).write(df.repartition(1))
    return root


def _ids(spark, root: Path) -> list[int]:
    return sorted(r["id"] for r in SparkTable(spark, str(root)).to_df().collect())


def test_delete_marks_rows_in_a_deletion_vector(spark, dv_on: Path) -> None:
    before = {f.path for f in Table.open(str(dv_on)).snapshot().files()}
    result = SparkTable(spark, str(dv_on)).delete("id IN (3, 7, 60)")
    snap = Table.open(str(dv_on)).snapshot()
    assert {f.path for f in snap.files()} == before  # nothing rewritten
    assert result.metrics["numDeletionVectorsAdded"] == 2 and result.metrics["numCopiedRows"] == 0
    cards = sorted(f.deletion_vector["cardinality"] for f in snap.files() if f.deletion_vector)
    assert cards == [1, 2]
    assert all(json.loads(f.stats or "{}").get("tightBounds") is False for f in snap.files())
    expected = [i for i in range(100) if i not in (3, 7, 60)]
    assert _ids(spark, dv_on) == expected
    assert sorted(snap.to_arrow(columns=["id"]).column("id").to_pylist()) == expected
    SparkTable(spark, str(dv_on)).delete("id = 8")  # the same file again: its DV grows
    snap = Table.open(str(dv_on)).snapshot()
    assert sorted(f.deletion_vector["cardinality"] for f in snap.files() if f.deletion_vector) == [1, 3]
    assert _ids(spark, dv_on) == [i for i in expected if i != 8]
    assert Table.open(str(dv_on)).health().files_with_deletion_vectors == 2


def test_update_with_deletion_vectors_writes_only_the_updated_rows(spark, dv_on: Path) -> None:
    result = SparkTable(spark, str(dv_on)).update("id < 5", {"id": "id + 1000"})
    snap = Table.open(str(dv_on)).snapshot()
    assert result.metrics["numDeletionVectorsAdded"] == 1
    new = [f for f in snap.files() if not f.deletion_vector]
    assert [f.num_records for f in new if f.partition_values == {"p": "a"}] == [5]
    assert _ids(spark, dv_on) == sorted([*range(5, 100), *range(1000, 1005)])


def test_maintenance_after_dv_deletes(spark, dv_on: Path) -> None:
    SparkTable(spark, str(dv_on)).delete("id % 10 = 0")
    t = Table.open(str(dv_on))
    dv_files = {f.name for f in dv_on.glob("deletion_vector_*.bin")}
    assert len(dv_files) == 1
    plan = t.vacuum(dry_run=True, retention_hours=0, enforce_retention=False)
    assert not dv_files & {Path(p).name for p in plan.files}  # live files need it
    t.restore(version=1)
    assert _ids(spark, dv_on) == list(range(100))
    SparkTable(spark, str(dv_on)).delete("id % 10 = 0")
    SparkTable(spark, str(dv_on)).optimize()  # 10% deleted > 5%: purged
    assert not [f for f in Table.open(str(dv_on)).snapshot().files() if f.deletion_vector]
    assert _ids(spark, dv_on) == [i for i in range(100) if i % 10]


def test_a_dv_file_without_its_commit_is_an_orphan(
    spark, dv_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(self: object, **_: object) -> int:
        raise OSError("killed before the commit")

    monkeypatch.setattr(Transaction, "commit", crash)
    with pytest.raises(OSError, match="killed"):
        SparkTable(spark, str(dv_on)).delete("id = 1")
    monkeypatch.undo()
    assert len(list(dv_on.glob("deletion_vector_*.bin"))) == 1  # written, never committed
    t = Table.open(str(dv_on))
    assert _ids(spark, dv_on) == list(range(100))  # no reader sees it
    plan = t.vacuum(dry_run=False, retention_hours=0, enforce_retention=False)
    assert [p for p in plan.files if p.startswith("deletion_vector_")]
    assert not list(dv_on.glob("deletion_vector_*.bin"))


def test_merge_with_deletion_vectors(spark, dv_on: Path) -> None:
    before = {f.path for f in Table.open(str(dv_on)).snapshot().files()}
    src = spark.createDataFrame(
        [(3, "a", "u"), (5, "a", "d"), (60, "b", "u"), (200, "b", "i")], "id long, p string, op string"
    )
    result = (
        SparkTable(spark, str(dv_on))
        .merge(src, "t.id = s.id")
        .when_matched_delete(condition="s.op = 'd'")
        .when_matched_update(set={"id": "s.id + 1000"})
        .when_not_matched_insert(values={"id": "s.id", "p": "s.p"})
        .execute()
    )
    snap = Table.open(str(dv_on)).snapshot()
    assert result.metrics["numDeletionVectorsAdded"] == 2 and result.metrics["numTargetRowsCopied"] == 0
    assert before < {f.path for f in snap.files()}  # the old files stay, with DVs; one new file
    assert sorted(f.deletion_vector["cardinality"] for f in snap.files() if f.deletion_vector) == [1, 2]
    assert (result.metrics["numTargetRowsUpdated"], result.metrics["numTargetRowsInserted"]) == (2, 1)
    expected = sorted([i for i in range(100) if i not in (3, 5, 60)] + [1003, 1060, 200])
    assert _ids(spark, dv_on) == expected
