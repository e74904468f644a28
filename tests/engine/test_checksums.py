"""Version checksums (`<version>.crc`): every commit the engine makes writes one that equals replay,
Spark's own `.crc` files agree field by field with our replay, a checksum never fails a commit and is
never replaced, a bad one is detected by validation and not built upon, and `Table.summary` answers
from the latest version's checksum without reading a checkpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from airflow_txnlog.engine import AddFile, Table
from airflow_txnlog.engine.log.checksum import (
    DEFAULT_BIN_BOUNDARIES,
    LEGACY_HISTOGRAM,
    FileSizeHistogram,
    checksum_key,
    parse_checksum,
    read_checksum,
)
from airflow_txnlog.engine.state.checksums import checksum_of, checksum_problems, histogram_of, mismatches
from airflow_txnlog.engine.storage import LOG_DIR

GOLDEN = Path(__file__).resolve().parents[1] / "compat" / "golden"
SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


def rows(ids: list[int], part: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "part": [part] * len(ids)})


def _history(uri: str) -> Table:
    """A table through most commit paths: create, appends, overwrite, a remove with a txn and a
    domain, property changes, a checkpoint, optimize, restore."""
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"])
    t.write(rows([1, 2, 3]))
    t.write(rows(list(range(10, 60)), "b"))
    with t.transaction("DELETE") as txn:
        txn.remove(txn.read_files("part = 'a'")[0])
        txn.set_app_transaction("loader", 7)
        txn.set_domain_metadata("my.domain", '{"x": 1}')
        txn.commit()
    t.write(rows([4, 5]), mode="overwrite")
    t.set_properties({"delta.appendOnly": "false", "delta.logRetentionDuration": "interval 31 days"})
    for i in range(6):
        t.write(rows([100 + i], "c"))
    t.checkpoint()
    t.optimize()
    t.restore(version=2, dry_run=False)
    return t


def test_every_commit_writes_a_checksum_equal_to_replay(tmp_path: Path) -> None:
    t = _history(str(tmp_path / "t"))
    latest = t.latest_version()
    operations = {c["operation"] for c in t.history()}
    assert {"CREATE TABLE", "WRITE", "DELETE", "SET TBLPROPERTIES", "OPTIMIZE", "RESTORE"} <= operations
    for v in range(latest + 1):
        crc = read_checksum(t.storage, v)
        assert crc is not None, f"version {v} has no checksum"
        snap = t.snapshot(version=v)
        assert mismatches(crc, checksum_of(snap)) == [], v
        sizes = [f.size for f in snap.files()]
        assert (crc.num_files, crc.table_size_bytes) == (len(sizes), sum(sizes))
        assert crc.file_size_histogram is not None and sum(crc.file_size_histogram.file_counts) == len(sizes)
    last = read_checksum(t.storage, 3)
    assert last is not None and last.set_transactions is not None and last.domain_metadata is not None
    assert {x.app_id: x.version for x in last.set_transactions} == {"loader": 7}
    assert {d.domain: d.configuration for d in last.domain_metadata} == {"my.domain": '{"x": 1}'}


def test_the_checksum_matches_the_files_on_disk(tmp_path: Path) -> None:
    """Not only replay against itself: the sizes a checksum adds up are the data files' own."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows(list(range(1000))))
    t.write(rows([1]))
    crc = read_checksum(t.storage, 2)
    on_disk = [p.stat().st_size for p in (tmp_path / "t").rglob("*.parquet") if LOG_DIR not in str(p)]
    assert crc is not None and (crc.num_files, crc.table_size_bytes) == (2, sum(on_disk))


def test_written_checksum_fields_are_the_protocols_names(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1]))
    wire = json.loads((tmp_path / "t" / LOG_DIR / f"{1:020d}.crc").read_text())
    required = {"tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "metadata", "protocol"}
    optional = {"txnId", "setTransactions", "domainMetadata", "fileSizeHistogram"}
    optional |= {"numDeletedRecordsOpt", "numDeletionVectorsOpt", "inCommitTimestampOpt"}
    assert required <= set(wire) <= required | optional
    assert wire["numMetadata"] == wire["numProtocol"] == 1
    assert wire["fileSizeHistogram"]["sortedBinBoundaries"] == list(DEFAULT_BIN_BOUNDARIES)
    assert wire["txnId"] == t.history(1)[0]["txnId"]  # the commit's own transaction id


def test_default_bins_are_deltas() -> None:
    """95 bins from 0 to 256 GiB, as delta-kernel's FileSizeHistogram and Spark's golden `.crc`."""
    spark = json.loads((GOLDEN / "collations-table" / LOG_DIR / f"{0:020d}.crc").read_text())
    assert list(DEFAULT_BIN_BOUNDARIES) == spark[LEGACY_HISTOGRAM]["sortedBinBoundaries"]
    assert len(DEFAULT_BIN_BOUNDARIES) == 95


def _golden_checksums() -> list[Path]:
    return sorted(p for p in GOLDEN.rglob(f"{LOG_DIR}/*.crc") if p.name[:20].isdigit() and len(p.name) == 24)


@pytest.mark.parametrize("crc_path", _golden_checksums(), ids=lambda p: f"{p.parents[1].name}-{p.stem[-2:]}")
def test_spark_checksums_agree_with_our_replay(crc_path: Path) -> None:
    """Every `.crc` Delta on Spark wrote in the reference tables parses, and each field it has equals
    what our replay computes for that version (tableSizeBytes, numFiles, metadata, protocol, txns,
    domains, histogram)."""
    table = crc_path.parents[1]
    recorded = parse_checksum(crc_path.read_bytes())
    ours = checksum_of(Table.open(str(table)).snapshot(version=int(crc_path.name[:20])))
    assert mismatches(recorded, ours) == []
    if recorded.file_size_histogram is not None:
        assert recorded.file_size_histogram == ours.file_size_histogram


def test_golden_checksums_are_enough_to_check() -> None:
    assert len(_golden_checksums()) >= 9  # (the test above is not vacuous)


def test_a_commit_succeeds_when_its_checksum_cannot_be_written(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    real = t.storage.put_if_absent

    def put(key: str, data: bytes) -> None:
        if key.endswith(".crc"):
            raise ConnectionResetError("store went away")
        real(key, data)

    t.storage.put_if_absent = put  # type: ignore[method-assign]
    assert t.write(rows([1, 2])) == 1
    assert not (tmp_path / "t" / LOG_DIR / f"{1:020d}.crc").exists()
    t.storage.put_if_absent = real  # type: ignore[method-assign]
    t.write(rows([3]))  # the next one builds on the snapshot instead
    crc = read_checksum(t.storage, 2)
    assert crc is not None and mismatches(crc, checksum_of(t.snapshot())) == []


def test_an_existing_checksum_is_never_replaced(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    squatter = tmp_path / "t" / LOG_DIR / f"{1:020d}.crc"
    squatter.write_bytes(b"not json")
    t.write(rows([1]))
    assert squatter.read_bytes() == b"not json"
    assert read_checksum(t.storage, 1) is None  # ignored by readers, never an error
    assert Table.open(t.uri).snapshot().num_files == 1
    (problem,) = checksum_problems(t.snapshot()) or ["none"]
    assert problem.startswith(f"{1:020d}.crc: not a version checksum: ")


def _corrupt(path: Path, **fields: Any) -> None:
    wire = orjson.loads(path.read_bytes())
    wire.update(fields)
    path.write_bytes(orjson.dumps(wire))


def test_a_wrong_checksum_is_detected_and_not_built_upon(tmp_path: Path) -> None:
    """Another writer's `.crc` that contradicts the snapshot (its count, and it does not name the
    commit's txnId) is reported by health and not built upon by the next commit."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1, 2]))
    crc1 = tmp_path / "t" / LOG_DIR / f"{1:020d}.crc"
    _corrupt(crc1, numFiles=41, tableSizeBytes=7, txnId="another-writer")
    problems = t.health().checksum_problems
    assert problems is not None and len(problems) == 2
    assert problems[0].startswith(f"{1:020d}.crc: tableSizeBytes: the checksum says 7, the log says ")
    assert problems[1] == f"{1:020d}.crc: numFiles: the checksum says 41, the log says 1"
    t.write(rows([3]))  # the next commit computes from its snapshot, not from the bad file
    assert checksum_problems(t.snapshot()) == []
    assert t.health().checksum_problems == []


def test_incremental_checksums_are_anchored_at_checkpoint_versions(tmp_path: Path) -> None:
    """A `.crc` naming its own commit is trusted as the next one's base (counting a million live files
    each commit would cost more than the commit); at a checkpoint version the checksum is computed
    from the snapshot, so a wrong count lives one interval at most, reported by health meanwhile."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties={"delta.checkpointInterval": "3"})
    t.write(rows([1, 2]))
    _corrupt(tmp_path / "t" / LOG_DIR / f"{1:020d}.crc", numFiles=41)  # (txnId kept)
    t.write(rows([3]))  # version 2: built on version 1's file
    assert t.health().checksum_problems == [f"{2:020d}.crc: numFiles: the checksum says 42, the log says 2"]
    t.write(rows([4]))  # version 3, a checkpoint version: from the snapshot
    assert t.health().checksum_problems == []
    t.write(rows([5]))
    assert t.health().checksum_problems == []


def test_a_checkpoint_reports_a_wrong_checksum(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1, 2]))
    _corrupt(tmp_path / "t" / LOG_DIR / f"{1:020d}.crc", numFiles=3)
    t.checkpoint()
    assert "numFiles: the checksum says 3, the log says 1" in caplog.text
    assert Table.open(t.uri).snapshot().checkpoint_version == 1  # written from the log all the same


def test_a_checksum_never_decides_a_conflict(tmp_path: Path) -> None:
    """A `.crc` that claims a protocol the engine cannot write changes nothing: writes decide by the log."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1]))
    _corrupt(
        tmp_path / "t" / LOG_DIR / f"{1:020d}.crc",
        protocol={
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["x"],
            "writerFeatures": ["x"],
        },
    )
    txn = Table.open(t.uri).transaction()
    txn.add(AddFile("part=a/new.parquet", {"part": "a"}, 10, 1))
    t.write(rows([2]))  # a winner
    assert txn.commit() == 3  # a blind append: no conflict, decided by the commits
    crc = read_checksum(t.storage, 3)
    assert crc is not None and crc.protocol.min_reader_version == 1  # not the bad file's (built on 2's)


def test_summary_answers_from_the_checksum_without_a_checkpoint(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties={"delta.checkpointInterval": "2"})
    for i in range(5):
        t.write(rows([i, i + 100]))
    lazy = Table.open(t.uri, lazy=True)
    read: list[str] = []
    real_read, real_open = lazy.storage.read, lazy.storage.open_input
    lazy.storage.read = lambda key: read.append(key) or real_read(key)  # type: ignore[method-assign, func-returns-value]
    lazy.storage.open_input = lambda key: read.append(key) or real_open(key)  # type: ignore[method-assign, func-returns-value]
    summary = lazy.summary()
    assert summary.source == "checksum" and summary.version == 5
    assert all(not k.endswith(".parquet") and not k.endswith(".json") for k in read), read
    full = t.snapshot()
    sizes = [f.size for f in full.files()]
    assert (summary.num_files, summary.size_bytes) == (len(sizes), sum(sizes))
    assert summary.metadata == full.metadata and summary.protocol == full.protocol
    assert summary.to_dict()["num_files"] == 5


def test_summary_falls_back_to_the_snapshot(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1, 2]))
    os.remove(tmp_path / "t" / LOG_DIR / f"{1:020d}.crc")
    summary = Table.open(t.uri, lazy=True).summary()
    assert summary.source == "snapshot" and summary.version == 1 and summary.num_files == 1


def test_a_spark_table_opens_from_its_checksum() -> None:
    """A table Delta on Spark wrote with `.crc` files: the summary comes from Spark's checksum."""
    table = GOLDEN / "commit-info-containing-arbitrary-operationParams-types"
    summary = Table.open(str(table), lazy=True).summary()
    assert summary.source == "checksum" and summary.version == 2
    assert (summary.num_files, summary.size_bytes) == (2, 904)
    assert summary.metadata.partition_columns == ("month",)


def test_histogram_moves_with_adds_and_removes() -> None:
    sizes = [0, 1, 8191, 8192, 5 * 1024**2, 300 * 1024**3]
    h = histogram_of(pa.array(sizes, pa.int64()))
    assert h.file_counts[:3] == (3, 1, 0) and h.file_counts[-1] == 1
    assert sum(h.total_bytes) == sum(sizes)
    moved = h.moved([10], [8192])
    assert moved is not None and moved == histogram_of(pa.array([0, 1, 8191, 10, 5 * 1024**2, 300 * 1024**3]))
    assert FileSizeHistogram.empty().moved([], [5]) is None  # a file it never held


def test_checksum_parsing_rejects_what_is_not_one(tmp_path: Path) -> None:
    for bad, why in [
        (b"[]", "not a JSON object"),
        (b'{"numFiles": 1}', "required fields missing"),
        (orjson.dumps({**_valid(), "metadata": {"schemaString": "{}"}}), "not a version checksum"),
        (orjson.dumps({**_valid(), "numMetadata": 2}), "numMetadata and numProtocol must be 1"),
        (orjson.dumps({**_valid(), "fileSizeHistogram": {"sortedBinBoundaries": [1, 2], "fileCounts": [0, 0],
                                                          "totalBytes": [0, 0]}}), "must start at 0"),
    ]:  # fmt: skip
        with pytest.raises(ValueError, match=why):
            parse_checksum(bad)
    assert parse_checksum(orjson.dumps(_valid())).num_files == 0


def _valid() -> dict[str, Any]:
    return {
        "tableSizeBytes": 0, "numFiles": 0, "numMetadata": 1, "numProtocol": 1,
        "metadata": {"id": "x", "schemaString": '{"type":"struct","fields":[]}', "partitionColumns": [],
                     "configuration": {}, "format": {"provider": "parquet", "options": {}}},
        "protocol": {"minReaderVersion": 1, "minWriterVersion": 2},
    }  # fmt: skip


def test_delta_rs_and_polars_read_a_table_with_our_checksums(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    pl = pytest.importorskip("polars")
    t = _history(str(tmp_path / "t"))
    assert (tmp_path / "t" / LOG_DIR / f"{t.latest_version():020d}.crc").exists()
    ours = sorted(t.snapshot().to_arrow().column("id").to_pylist())
    theirs = sorted(deltalake.DeltaTable(t.uri).to_pyarrow_table().column("id").to_pylist())
    polars_ids = sorted(pl.read_delta(t.uri).get_column("id").to_list())
    assert ours == theirs == polars_ids and ours


def test_delta_rs_appends_next_to_our_checksums(tmp_path: Path) -> None:
    """delta-rs 1.6 writes no `.crc`: after its commit the summary replays, and our next commit
    computes its checksum from the snapshot (no `.crc` of the version before)."""
    deltalake = pytest.importorskip("deltalake")
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1, 2]))
    deltalake.write_deltalake(t.uri, rows([999], "z"), mode="append")
    fresh = Table.open(t.uri)
    assert fresh.latest_version() == 2 and read_checksum(fresh.storage, 2) is None
    assert Table.open(t.uri, lazy=True).summary().source == "snapshot"
    fresh.write(rows([3]))
    crc = read_checksum(fresh.storage, 3)
    assert crc is not None and mismatches(crc, checksum_of(fresh.snapshot())) == [] and crc.num_files == 3
    assert sorted(deltalake.DeltaTable(t.uri).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 999]
    assert checksum_key(0) == f"{LOG_DIR}/{0:020d}.crc"


def test_a_commit_with_its_checksum_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow imports pandas on its first conversion of Python objects (0.2 s of a fresh process's
    first commit); the checksum step builds its Arrow input from buffers instead."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties={"delta.checkpointInterval": "100"})
    t.write(rows([1, 2]))
    script = (
        "import sys, time\n"
        "from airflow_txnlog.engine import AddFile, Table\n"
        f"t = Table.open({t.uri!r})\n"
        "txn = t.transaction()\n"
        "txn.add(AddFile('part=a/x.parquet', {'part': 'a'}, 10, int(time.time() * 1000)))\n"
        "print(txn.commit(), 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["2", "False"]
    crc = read_checksum(t.storage, 2)
    assert crc is not None and crc.num_files == 2 and mismatches(crc, checksum_of(t.snapshot())) == []
