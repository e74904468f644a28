"""Streaming through `format("txnlog")`: offsets are table versions, every micro-batch is one commit,
exactly once across restarts. Expected rows are the rows the test appended to the source."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable, register
from tests.deltars import deltars_rows

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema([("id", pa.int64())])


def _source(path: Path, *batches: list[int]) -> Table:
    t = Table.create(str(path), schema=SCHEMA)
    for ids in batches:
        t.write(pa.table({"id": ids}, schema=SCHEMA))
    return t


def _run(spark, src: Path, dst: Path, checkpoint: Path, **options: object) -> None:
    """One availableNow run of src -> dst."""
    register(spark)
    reader = spark.readStream.format("txnlog")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    query = (
        reader.load(str(src))
        .writeStream.format("txnlog")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(str(dst))
    )
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))


def _ids(path: Path) -> list[int]:
    return sorted(Table.open(str(path)).snapshot().to_arrow().column("id").to_pylist())


def test_snapshot_first_then_new_versions_one_commit_per_batch(spark, tmp_path: Path) -> None:
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    t = _source(src, [0, 1], [2])
    _run(spark, src, dst, ck)
    assert _ids(dst) == [0, 1, 2]
    first = Table.open(str(dst)).latest_version()
    t.write(pa.table({"id": [3]}, schema=SCHEMA))
    t.write(pa.table({"id": [4, 5]}, schema=SCHEMA))
    _run(spark, src, dst, ck)
    assert _ids(dst) == [0, 1, 2, 3, 4, 5]
    assert sorted(r["id"] for r in deltars_rows(dst)) == [0, 1, 2, 3, 4, 5]
    history = Table.open(str(dst)).history()
    txns = [h for h in history if h["version"] > first]
    assert txns and all(h["operation"] == "WRITE" for h in txns)
    _run(spark, src, dst, ck)  # nothing new: no commit
    assert Table.open(str(dst)).latest_version() == history[0]["version"]


def test_starting_version_and_max_files(spark, tmp_path: Path) -> None:
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    _source(src, [0], [1], [2], [3])  # versions 1..4
    _run(spark, src, dst, ck, startingVersion=3, maxFilesPerTrigger=1)
    assert _ids(dst) == [2, 3]


def test_data_change_free_commits_are_skipped_and_deletes_fail_the_stream(spark, tmp_path: Path) -> None:
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    _source(src, [0], [1], [2])
    SparkTable(spark, str(src)).optimize()  # dataChange=false: nothing for the stream
    _run(spark, src, dst, ck, startingVersion=1)
    assert _ids(dst) == [0, 1, 2]
    SparkTable(spark, str(src)).delete("id = 0")
    with pytest.raises(Exception, match="skipChangeCommits"):
        _run(spark, src, dst, ck, startingVersion=1)
    Table.open(str(src)).write(pa.table({"id": [7]}, schema=SCHEMA))
    _run(spark, src, dst, tmp_path / "ck2", startingVersion=1, skipChangeCommits="true")
    assert _ids(dst) == [0, 0, 1, 1, 2, 2, 7]  # (a new query: its own checkpoint, all appends again)


def test_a_replayed_batch_commits_nothing(spark, tmp_path: Path) -> None:
    """Spark replays a batch whose commit it did not record (a crash between the sink's commit and
    the checkpoint's): the sink finds the batch id in the table and adds nothing."""
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    t = _source(src, [0, 1])
    _run(spark, src, dst, ck)
    t.write(pa.table({"id": [2]}, schema=SCHEMA))
    _run(spark, src, dst, ck)
    version = Table.open(str(dst)).latest_version()
    commits = sorted((ck / "commits").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    last = [p for p in commits if p.name.isdigit()][-1]
    last.unlink()  # as if the query died right after the sink committed batch `last`
    (last.parent / f".{last.name}.crc").unlink(missing_ok=True)
    files = {p.name for p in dst.rglob("*.parquet")}
    _run(spark, src, dst, ck)  # Spark replays that batch
    assert last.exists()  # (it did: the batch was run and recorded again)
    assert _ids(dst) == [0, 1, 2] == sorted(r["id"] for r in deltars_rows(dst))
    assert Table.open(str(dst)).latest_version() == version
    assert {p.name for p in dst.rglob("*.parquet")} == files  # the replay's files were deleted


def test_a_streaming_write_needs_a_checkpoint_or_an_app_id(spark, tmp_path: Path) -> None:
    src = tmp_path / "src"
    _source(src, [0])
    register(spark)
    with pytest.raises(Exception, match="checkpointLocation"):
        q = (
            spark.readStream.format("txnlog")
            .load(str(src))
            .writeStream.format("txnlog")
            .start(str(tmp_path / "d"))
        )
        q.awaitTermination(30)
        if q.exception() is not None:
            raise RuntimeError(str(q.exception()))
