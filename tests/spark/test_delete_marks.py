"""DELETE with deletion vectors marked on the driver (spark.delete_local.marks_apply, then
spark.features.deletion_vectors.positions_in_process): the same table, metrics and deletion vectors
as Spark's own DV path, DVs that delta-rs and our engine read, the byte bound choosing the path, and
one Spark job (positions, no counting pass) when Spark runs."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable
from airflow_txnlog.spark.dml import delete, delete_local
from airflow_txnlog.spark.features import deletion_vectors
from airflow_txnlog.spark.read import planning
from tests.spark.helpers import deltalake_rows, deltalake_scan_rows, engine_rows

pytestmark = [pytest.mark.spark]

DV = {"delta.enableDeletionVectors": "true"}
_METRICS = ("numDeletedRows", "numDeletionVectorsAdded", "numRemovedFiles", "numAddedFiles", "numCopiedRows")


def _fail(what: str) -> Callable[..., Any]:
    def fail(*_: object, **__: object) -> Any:
        raise AssertionError(f"{what} ran")

    return fail


@pytest.fixture
def three(copy_table: Callable[[bool, str], Path]) -> Callable[[bool], tuple[Path, Path, Path]]:
    """(ours in-process, ours on Spark, deltalake's): identical copies, ours two with DVs on."""

    def _three(partitioned: bool) -> tuple[Path, Path, Path]:
        local, spark_path, theirs = (copy_table(partitioned, n) for n in ("local", "spark", "theirs"))
        for p in (local, spark_path):
            Table.open(str(p)).set_properties(DV)
        return local, spark_path, theirs

    return _three


def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark's jobs refused: the positions must come from the driver."""
    monkeypatch.setattr(deletion_vectors, "positions", _fail("the Spark positions job"))
    monkeypatch.setattr(delete, "matched_files", _fail("the Spark counting job"))
    monkeypatch.setattr(planning, "matched_files", _fail("the Spark counting job"))


def _on_spark(spark: Any, path: Path, predicate: str) -> Any:
    """The DELETE with the lever off (DV_MAX_BYTES 0): Spark's DV path, without a counting job."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(delete_local, "DV_MAX_BYTES", 0)
        mp.setattr(deletion_vectors, "positions_in_process", _fail("the in-process lever"))
        mp.setattr(delete, "matched_files", _fail("the Spark counting job (every file takes a DV)"))
        return SparkTable(spark, str(path)).delete(predicate)


def _dvs(path: Path) -> dict[str, int]:
    return {
        f.path: int(f.deletion_vector["cardinality"])
        for f in Table.open(str(path)).snapshot().files()
        if f.deletion_vector
    }


def _same(local: Path, spark_path: Path | None, theirs: Path) -> None:
    rows = engine_rows(local)
    assert rows == deltalake_rows(theirs)  # delta-rs rewrote its copy (no DVs)
    assert rows == deltalake_scan_rows(local)  # delta-rs reads our DVs
    if spark_path is not None:
        assert rows == engine_rows(spark_path) == deltalake_scan_rows(spark_path)
        assert _dvs(local) == _dvs(spark_path)


@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize(
    "predicate",
    [
        "id % 7 = 0",  # rows in every file
        "name = 'name-007' OR id > 2390",  # NULL names: not TRUE, kept
        "id IN (1, 2, 3, 2399) AND NOT (part = 'b')",
        "value / 2 > 500 AND day >= DATE '2024-01-10'",
        "amount > 200 AND ts < '2024-01-01T20:00:00Z'",  # session zone UTC: exact
    ],
)
def test_marks_in_process_equal_sparks_marks_and_deltalake(
    spark, three, monkeypatch, partitioned: bool, predicate: str
) -> None:
    local, spark_path, theirs = three(partitioned)
    before = {f.path for f in Table.open(str(local)).snapshot().files()}
    on_spark = _on_spark(spark, spark_path, predicate)
    _in_process(monkeypatch)
    result = SparkTable(spark, str(local)).delete(predicate)
    theirs_metrics = DeltaTable(str(theirs)).delete(predicate)
    _same(local, spark_path, theirs)
    assert {f.path for f in Table.open(str(local)).snapshot().files()} == before  # nothing rewritten
    assert {m: result.metrics[m] for m in _METRICS} == {m: on_spark.metrics[m] for m in _METRICS}
    assert result.metrics["numDeletedRows"] == theirs_metrics["num_deleted_rows"] > 0
    assert result.metrics["numDeletionVectorsAdded"] == len(_dvs(local)) > 0
    marked = [f for f in Table.open(str(local)).snapshot().files() if f.deletion_vector]
    assert all(json.loads(f.stats or "{}")["tightBounds"] is False for f in marked)


def test_rows_a_dv_already_deletes_are_neither_counted_nor_evaluated(spark, three, monkeypatch) -> None:
    """The second DELETE reads files whose DVs delete the multiples of 7, id 0 among them: 35 matches
    again and must not count twice, and `100 / id` must not be evaluated on id 0 (an ANSI division
    by zero), neither on the driver nor in Spark's DV path (whose scan once let the filter be pushed
    below the anti join that drops deleted rows: spark/read/scan.py `_barrier`); nor by a read."""
    local, spark_path, theirs = three(False)
    first, second = "id % 7 = 0", "100 / id > 1000 OR id % 5 = 0"
    DeltaTable(str(theirs)).delete(first)
    theirs_second = DeltaTable(str(theirs)).delete(second)
    _on_spark(spark, spark_path, first)
    on_spark = _on_spark(spark, spark_path, second)
    read = SparkTable(spark, str(spark_path)).to_df().filter("100 / id > 10").count()  # ids 1..9 live
    assert read == len([i for i in range(1, 10) if i % 7 and i % 5])
    _in_process(monkeypatch)
    SparkTable(spark, str(local)).delete(first)
    result = SparkTable(spark, str(local)).delete(second)
    _same(local, spark_path, theirs)
    expected = len([i for i in range(1, 2400) if i % 5 == 0 and i % 7])
    assert result.metrics["numDeletedRows"] == theirs_second["num_deleted_rows"] == expected
    assert on_spark.metrics["numDeletedRows"] == expected


def test_a_second_delete_grows_the_dvs_as_sparks_path_does(spark, three, monkeypatch) -> None:
    local, spark_path, theirs = three(True)
    for predicate in ("id % 7 = 0", "id % 5 = 0 OR name IS NULL"):
        _on_spark(spark, spark_path, predicate)
        DeltaTable(str(theirs)).delete(predicate)
        with monkeypatch.context() as mp:
            _in_process(mp)
            SparkTable(spark, str(local)).delete(predicate)
    _same(local, spark_path, theirs)


def test_the_byte_bound_chooses_the_path(spark, three, monkeypatch) -> None:
    local, spark_path, _ = three(True)
    predicate = "id % 11 = 0"  # (every file holds a match: every file is a candidate)
    total = sum(f.size for f in Table.open(str(local)).snapshot().files())
    with monkeypatch.context() as mp:
        mp.setattr(delete_local, "DV_MAX_BYTES", total - 1)
        mp.setattr(deletion_vectors, "positions_in_process", _fail("the in-process lever"))
        over = SparkTable(spark, str(spark_path)).delete(predicate)
    monkeypatch.setattr(delete_local, "DV_MAX_BYTES", total)
    _in_process(monkeypatch)
    at = SparkTable(spark, str(local)).delete(predicate)
    assert at.metrics["numDeletedRows"] == over.metrics["numDeletedRows"] == len(range(0, 2400, 11))
    assert engine_rows(local) == engine_rows(spark_path)


def test_a_file_without_a_row_count_or_over_the_bound_is_not_marked_in_process(
    spark, three, monkeypatch
) -> None:
    """A DV needs the file's numRecords: a candidate without it is rewritten, on Spark."""
    local, _, _ = three(False)
    snap = Table.open(str(local)).snapshot()
    files = snap.files()
    ctx = SparkTable(spark, str(local))._handle.context(snap)
    parsed = planning.classify("id % 3 = 0", ctx).parsed
    assert delete_local.marks_apply(ctx, parsed, files)
    assert not delete_local.marks_apply(ctx, parsed, [dataclasses.replace(files[0], stats=None), *files[1:]])
    assert not delete_local.marks_apply(ctx, planning.classify("1 = 1", ctx).parsed, files)  # no column
    monkeypatch.setattr(delete_local, "DV_MAX_BYTES", sum(f.size for f in files) - 1)
    assert not delete_local.marks_apply(ctx, parsed, files)


def test_no_match_commits_nothing(spark, three, monkeypatch) -> None:
    local, _, _ = three(False)
    version = Table.open(str(local)).snapshot().version
    _in_process(monkeypatch)
    result = SparkTable(spark, str(local)).delete("id % 2 = 0 AND id % 2 = 1")
    assert result.version is None and result.metrics["numDeletedRows"] == 0
    assert Table.open(str(local)).snapshot().version == version
    assert not list(local.glob("deletion_vector_*.bin"))


MAPPED = Path(__file__).parents[1] / "compat" / "golden" / "dv-with-columnmapping"
KERNEL = [x for x in range(50) if not (x % 2 == 0 and x < 30)]  # Delta Kernel's rows of it (col1)


@pytest.mark.parametrize(
    ("predicate", "hit"),
    [
        ("col1 >= 25 AND col1 < 40", lambda x: 25 <= x < 40),  # 26 and 28: already deleted
        ("col1 % 3 = 0 OR col2 = 'foo4'", lambda x: x % 3 == 0 or x % 5 == 4),
    ],
)
def test_a_spark_written_table_with_dvs_and_column_mapping(
    spark, tmp_path: Path, monkeypatch, predicate: str, hit: Callable[[int], bool]
) -> None:
    """Delta on Spark's table (mode name, partitioned, DVs in place): physical names read, old DVs
    kept, positions mapped back to the files', as Spark's DV path and delta-rs see them."""
    local, spark_path = (tmp_path / "local", tmp_path / "spark")
    for p in (local, spark_path):
        shutil.copytree(MAPPED, p, ignore=shutil.ignore_patterns("*.crc"))
    on_spark = _on_spark(spark, spark_path, predicate)
    _in_process(monkeypatch)
    result = SparkTable(spark, str(local)).delete(predicate)
    want = [x for x in KERNEL if not hit(x)]
    for p in (local, spark_path):
        assert (
            sorted(Table.open(str(p)).snapshot().to_arrow(columns=["col1"]).column("col1").to_pylist())
            == want
        )
        assert sorted(pa.table(DeltaTable(str(p)).scan().read_all()).column("col1").to_pylist()) == want
    assert _dvs(local) == _dvs(spark_path)
    assert {m: result.metrics[m] for m in _METRICS} == {m: on_spark.metrics[m] for m in _METRICS}
    assert result.metrics["numDeletedRows"] == len(KERNEL) - len(want)
