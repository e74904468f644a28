"""DELETE: the seed article's three cases, told apart by metrics and by what Spark read; results
equal deltalake's on an identical copy; no match -> no commit; data skipping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable
from tests.spark.helpers import (
    assert_same_as_deltalake,
    commit_actions,
    engine_rows,
    files_with_matches,
    removed_paths,
)

pytestmark = [pytest.mark.spark]


def _corrupt(path: Path, rel_paths: set[str] | list[str]) -> dict[str, bytes]:
    """Make data files unreadable (any attempt by Spark to read one fails); returns their bytes."""
    saved = {}
    for rel in rel_paths:
        saved[rel] = (path / rel).read_bytes()
        (path / rel).write_bytes(b"not a parquet file")
    return saved


def _restore(path: Path, saved: dict[str, bytes]) -> None:
    for rel, data in saved.items():
        (path / rel).write_bytes(data)


def _live(path: Path) -> list[str]:
    return [f.path for f in Table.open(str(path)).snapshot().files()]


@pytest.mark.parametrize(
    ("partitioned", "predicate"),
    [
        (True, "id >= 500 AND id < 700"),
        (False, "name = 'name-007' OR id > 2350"),
        (True, "part = 'b' AND day > DATE '2024-01-20'"),
        (False, "amount > 200 AND ts < '2024-01-02T00:00:00Z'"),
    ],
)
def test_delete_matches_deltalake(spark, pair, partitioned: bool, predicate: str) -> None:
    ours, theirs = pair(partitioned)
    expected_removed = files_with_matches(ours, predicate)
    result = SparkTable(spark, str(ours)).delete(predicate)
    theirs_metrics = DeltaTable(str(theirs)).delete(predicate)
    assert_same_as_deltalake(ours, theirs)
    assert result.metrics["numDeletedRows"] == theirs_metrics["num_deleted_rows"]
    assert result.metrics["numCopiedRows"] == theirs_metrics["num_copied_rows"]
    assert set(result.removed_files) == expected_removed
    assert result.metrics["numRemovedFiles"] == len(expected_removed)


def test_case_1_no_predicate_removes_every_file_reading_nothing(spark, copy_table) -> None:
    path = copy_table(True, "t")
    files = _live(path)
    _corrupt(path, files)
    result = SparkTable(spark, str(path)).delete()
    assert result.scanned_files == () and result.added_files == ()
    assert set(result.removed_files) == set(files) and len(files) == 24
    assert result.metrics["numRemovedFiles"] == 24 and result.metrics["numDeletedRows"] == 2400
    assert Table.open(str(path)).snapshot().files() == []
    info = commit_actions(path, result.version)[0]["commitInfo"]
    assert info["operation"] == "DELETE" and info["operationParameters"]["predicate"] == "[]"


def test_case_2_partition_predicate_removes_files_from_metadata_only(spark, copy_table) -> None:
    path = copy_table(True, "t")
    snap = Table.open(str(path)).snapshot()
    in_b = {f.path for f in snap.files() if f.partition_values["part"] == "b"}
    _corrupt(path, _live(path))  # nothing may be read
    result = SparkTable(spark, str(path)).delete("part = 'b' OR part IS NULL")
    assert result.scanned_files == () and result.added_files == ()
    assert set(result.removed_files) == in_b == removed_paths(path, result.version)
    assert result.metrics["numDeletedRows"] == 600 and result.metrics["numCopiedRows"] == 0
    remove = next(a["remove"] for a in commit_actions(path, result.version) if "remove" in a)
    assert remove["dataChange"] is True and remove["extendedFileMetadata"] is True


def test_case_3_data_predicate_reads_candidates_and_rewrites_only_files_with_matches(
    spark, copy_table
) -> None:
    path = copy_table(False, "t")
    predicate = "id < 150 AND value >= 10"
    holding = files_with_matches(path, predicate)
    candidates = {f.path for f in Table.open(str(path)).snapshot().files(predicate)}
    assert holding < candidates or holding == candidates
    rows_in_holding = sum(
        f.num_records or 0 for f in Table.open(str(path)).snapshot().files() if f.path in holding
    )
    saved = _corrupt(path, set(_live(path)) - candidates)  # stats rule these out: never read
    result = SparkTable(spark, str(path)).delete(predicate)
    _restore(path, saved)
    assert set(result.scanned_files) == candidates
    assert set(result.removed_files) == holding == removed_paths(path, result.version)
    assert result.metrics["numDeletedRows"] == 150 - 20
    assert result.metrics["numCopiedRows"] == rows_in_holding - 130
    assert len(result.added_files) == result.metrics["numAddedFiles"] >= 1
    assert [r["id"] for r in engine_rows(path) if r["id"] < 150] == list(range(20))


def test_no_match_means_no_commit(spark, copy_table) -> None:
    path = copy_table(True, "t")
    st = SparkTable(spark, str(path))
    before = st.version()
    pruned = st.delete("id > 100000")  # no candidate survives the stats
    scanned = st.delete("name = 'name-0000'")  # within every file's min/max, no row matches
    partition = st.delete("part = 'zz'")
    assert (pruned.version, scanned.version, partition.version) == (None, None, None)
    assert pruned.scanned_files == () and len(scanned.scanned_files) >= 1
    assert scanned.metrics["numDeletedRows"] == 0
    assert st.version() == before


def test_data_skipping_touches_only_files_whose_min_max_admit_the_predicate(spark, copy_table) -> None:
    path = copy_table(False, "t")  # 24 files of ~100 ids each, range partitioned by id
    files = Table.open(str(path)).snapshot().files()
    bounds = {f.path: json.loads(f.stats) for f in files}
    admit = {p: s for p, s in bounds.items() if s["minValues"]["id"] <= 1010 and s["maxValues"]["id"] >= 1000}
    result = SparkTable(spark, str(path)).delete("id BETWEEN 1000 AND 1010")
    assert set(result.scanned_files) == set(admit) and 1 <= len(admit) <= 2
    assert result.metrics["numRemovedFiles"] == len(admit) and result.metrics["numDeletedRows"] == 11
    assert result.metrics["numCopiedRows"] == sum(s["numRecords"] for s in admit.values()) - 11


@pytest.mark.slow
def test_unparseable_predicates_still_work_without_pruning(spark, pair) -> None:
    ours, theirs = pair(True)
    result = SparkTable(spark, str(ours)).delete("id % 7 = 0 AND upper(name) LIKE 'NAME-00%'")
    DeltaTable(str(theirs)).delete("id % 7 = 0 AND upper(name) LIKE 'NAME-00%'")
    assert len(result.scanned_files) == 24
    assert_same_as_deltalake(ours, theirs)
