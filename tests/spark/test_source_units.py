"""Pieces of the `txnlog` data source that need no Spark job: streaming offsets under a file limit,
a reset checkpoint, a failed write's abort after a commit that landed, storage option values."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles

from airflow_txnlog.engine import InvalidArgumentError, Table, schema_to_json
from airflow_txnlog.spark import SparkTable
from airflow_txnlog.spark.source.options import WriteOptions
from airflow_txnlog.spark.source.reader import spark_schema
from airflow_txnlog.spark.source.stream import StreamOptions, TxnlogStreamReader, TxnlogStreamWriter
from airflow_txnlog.spark.source.writer import Written, abort_files, files_plan

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema([("id", pa.int64())])


def _reader(path: Path, **options: str) -> TxnlogStreamReader:
    snap = Table.open(str(path)).snapshot()
    return TxnlogStreamReader(StreamOptions.parse({"path": str(path), **options}), spark_schema(snap))


def _ids(reader: TxnlogStreamReader, start: dict, end: dict) -> list[int]:
    out: list[int] = []
    for part in reader.partitions(start, end):
        for batch in reader.read(part):
            out += batch.column("id").to_pylist()
    return sorted(out)


def test_offsets_cut_versions_at_the_file_limit_and_never_repeat_or_skip(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(pa.table({"id": [0, 1]}, schema=SCHEMA))  # v1: one file
    for ids in ([2], [3], [4]):
        t.write(pa.table({"id": ids}, schema=SCHEMA))  # v2..v4
    reader = _reader(tmp_path / "t", maxFilesPerTrigger="2")
    start = reader.initialOffset()
    assert start == {"version": 4, "index": 0, "snapshot": True}  # the current snapshot first
    seen: list[int] = []
    offsets = [start]
    while True:
        end = reader.latestOffset(offsets[-1], ReadMaxFiles(2))
        if end == offsets[-1]:
            break
        seen += _ids(reader, offsets[-1], end)
        offsets.append(end)
    assert sorted(seen) == [0, 1, 2, 3, 4] and len(offsets) == 3  # the snapshot's 4 files in 2 batches of 2
    t.write(pa.table({"id": [5]}, schema=SCHEMA))
    t.write(pa.table({"id": [6]}, schema=SCHEMA))
    end = reader.latestOffset(offsets[-1], ReadMaxFiles(1))
    assert _ids(reader, offsets[-1], end) == [5]
    last = reader.latestOffset(end, ReadAllAvailable())
    assert _ids(reader, end, last) == [6] and last == {"version": 7, "index": 0, "snapshot": False}
    from_v2 = _reader(tmp_path / "t", startingVersion="2")
    s2 = from_v2.initialOffset()
    assert _ids(from_v2, s2, from_v2.latestOffset(s2, ReadAllAvailable())) == [2, 3, 4, 5, 6]


def test_a_reset_checkpoint_fails_the_stream_instead_of_dropping_data(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = Table.create(str(path), schema=SCHEMA)
    with t.transaction("WRITE", {}) as txn:
        txn.set_app_transaction("my-stream", 5)
        txn.commit()
    df = spark.createDataFrame([(1,)], "id long")
    writer = TxnlogStreamWriter({"path": str(path), "txnAppId": "my-stream"}, df.schema)
    with pytest.raises(InvalidArgumentError, match="checkpoint was reset"):
        writer.commit([Written(())], 0)
    writer.commit([Written(())], 5)  # the replay of the last batch: nothing
    assert Table.open(str(path)).latest_version() == 1


def test_abort_keeps_the_files_of_a_commit_that_landed(spark, tmp_path: Path) -> None:
    """Spark aborts when commit() raised, also after a put whose outcome was unknown."""
    path = tmp_path / "t"
    SparkTable.create(spark, str(path), spark.createDataFrame([(1,)], "id long"))
    st = SparkTable(spark, str(path))
    st.write(spark.createDataFrame([(1,), (2,)], "id long"))
    files = Table.open(str(path)).snapshot().files()
    raw = json.dumps({"schema": schema_to_json(SCHEMA), "partitionColumns": [], "configuration": {}})
    plan = files_plan(WriteOptions.parse({"path": str(path), "__txnlog_manifest": "x", "__txnlog_plan": raw}))
    abort_files(plan, files)
    assert all((path / f.path).exists() for f in files)  # a live version holds them: kept
    orphan = list(files)
    Table.open(str(path)).write(pa.table({"id": [9]}, schema=SCHEMA), mode="overwrite")
    abort_files(plan, orphan)
    assert not any((path / f.path).exists() for f in orphan)  # no longer live: deleted


def test_storage_option_values() -> None:
    parsed = WriteOptions.parse(
        {"path": "/t", "storage.anon": "false", "storage.max_retries": "3", "storage.region": "eu-west-1"}
    )
    assert parsed.storage_options == {"anon": False, "max_retries": 3, "region": "eu-west-1"}
    assert "eu-west-1" not in repr(parsed)  # credentials never in a repr
