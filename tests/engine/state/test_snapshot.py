from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from airflow_txnlog.engine import (
    InvalidArgumentError,
    LogCorruptedError,
    Table,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.storage import LOG_DIR
from tests.conftest import SCHEMA, rows


def _table_with(uri: str, commits: int, **kw: object) -> Table:
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"], **kw)  # type: ignore[arg-type]
    for i in range(commits):
        t.write(rows([i], f"p{i % 3}"))
    return t


def _ids(t: Table, **kw: object) -> list[int]:
    return sorted(t.snapshot(**kw).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


def test_checkpoints_every_ten_commits_by_default(table_uri: str) -> None:
    t = _table_with(table_uri, 25)
    names = {f.name for f in t.storage.list_log()}
    assert {n for n in names if "checkpoint.parquet" in n} == {
        f"{10:020d}.checkpoint.parquet",
        f"{20:020d}.checkpoint.parquet",
    }
    hint = orjson.loads(t.storage.read(f"{LOG_DIR}/_last_checkpoint"))
    assert hint["version"] == 20 and hint["numOfAddFiles"] == 20 and hint["size"] == 22
    fresh = Table.open(table_uri)
    assert fresh.snapshot().checkpoint_version == 20
    assert _ids(fresh) == list(range(25))


def test_checkpoint_interval_property(table_uri: str) -> None:
    t = _table_with(table_uri, 7, properties={"delta.checkpointInterval": "3"})
    cps = sorted(f.name[:20] for f in t.storage.list_log() if "checkpoint.parquet" in f.name)
    assert [int(v) for v in cps] == [3, 6]


def test_multi_part_checkpoint_loads(table_uri: str) -> None:
    _table_with(table_uri, 4)
    t = Table.open(table_uri, checkpoint_part_size=2)
    t.checkpoint()
    parts = sorted(f.name for f in t.storage.list_log() if ".checkpoint." in f.name)
    assert parts == [f"{4:020d}.checkpoint.{i:010d}.{3:010d}.parquet" for i in (1, 2, 3)]
    assert orjson.loads(t.storage.read(f"{LOG_DIR}/_last_checkpoint"))["parts"] == 3
    fresh = Table.open(table_uri)
    assert fresh.snapshot().checkpoint_version == 4 and _ids(fresh) == [0, 1, 2, 3]


def test_incomplete_multi_part_checkpoint_is_ignored(table_uri: str) -> None:
    _table_with(table_uri, 4)
    t = Table.open(table_uri, checkpoint_part_size=2)
    t.checkpoint()
    t.storage.delete(f"{LOG_DIR}/{4:020d}.checkpoint.{2:010d}.{3:010d}.parquet")
    fresh = Table.open(table_uri)
    assert fresh.snapshot().checkpoint_version is None and _ids(fresh) == [0, 1, 2, 3]


@pytest.mark.parametrize("hint", [b"garbage{", b"", b'{"version": 10, "size": 1}', b'{"version": 99}'])
def test_last_checkpoint_is_only_a_hint(table_uri: str, hint: bytes) -> None:
    t = _table_with(table_uri, 23)
    if hint:
        t.storage.write(f"{LOG_DIR}/_last_checkpoint", hint)
    else:
        t.storage.delete(f"{LOG_DIR}/_last_checkpoint")
    fresh = Table.open(table_uri)
    assert fresh.snapshot().version == 23 and fresh.snapshot().checkpoint_version == 20
    assert _ids(fresh) == list(range(23))


@pytest.mark.parametrize("content", [b"", b"not parquet at all", b"PAR1\x00\x00PAR1"])
def test_bad_checkpoint_falls_back_to_older_state(table_uri: str, content: bytes) -> None:
    t = _table_with(table_uri, 21)
    t.storage.write(f"{LOG_DIR}/{20:020d}.checkpoint.parquet", content)
    fresh = Table.open(table_uri)
    assert fresh.snapshot().checkpoint_version == 10
    assert _ids(fresh) == list(range(21))


def test_bad_checkpoint_reads_each_commit_once(table_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commits after the bad checkpoint (read beside it), then the hint's listing found without
    an older checkpoint, the whole log listed again: no commit is read twice on the way."""
    t = _table_with(table_uri, 23)
    t.storage.write(f"{LOG_DIR}/{20:020d}.checkpoint.parquet", b"garbage")
    reads: list[str] = []
    storage_type = type(t.storage)
    real = storage_type.read_many

    def counting(self: object, keys: list[str]) -> list[bytes]:
        reads.extend(k for k in keys if k.endswith(".json"))
        return real(self, keys)  # type: ignore[arg-type]

    monkeypatch.setattr(storage_type, "read_many", counting)
    fresh = Table.open(table_uri)
    assert fresh.snapshot().checkpoint_version == 10
    monkeypatch.undo()
    assert _ids(fresh) == list(range(23))
    assert sorted(reads) == [f"{LOG_DIR}/{v:020d}.json" for v in range(11, 24)]


def test_bad_checkpoint_with_a_log_compaction_behind_it(table_uri: str) -> None:
    """Commit 24 read beside the bad checkpoint 20 is not the compaction `11.24.compacted.json` the
    older checkpoint's attempt replays, though both stand at version 24: commits 11-23 are applied."""
    t = _table_with(table_uri, 25, properties={"delta.checkpointInterval": "1000"})
    t.checkpoint(10)
    assert t.compact_log(first=11, last=24).file == f"{11:020d}.{24:020d}.compacted.json"
    t.checkpoint(20)  # (the hint now points at it)
    t.storage.write(f"{LOG_DIR}/{20:020d}.checkpoint.parquet", b"garbage")
    fresh = Table.open(table_uri)
    assert fresh.snapshot().checkpoint_version == 10
    assert _ids(fresh) == list(range(25))


def test_bad_checkpoint_without_fallback_names_the_file(table_uri: str) -> None:
    t = _table_with(table_uri, 11)
    t.storage.write(f"{LOG_DIR}/{10:020d}.checkpoint.parquet", b"garbage")
    t.storage.delete(f"{LOG_DIR}/{0:020d}.json")
    with pytest.raises(LogCorruptedError, match=f"{10:020d}.checkpoint.parquet"):
        Table.open(table_uri).snapshot()


def test_missing_commit_is_log_corruption(table_uri: str) -> None:
    t = _table_with(table_uri, 5)
    t.storage.delete(f"{LOG_DIR}/{3:020d}.json")
    with pytest.raises(LogCorruptedError, match=f"{3:020d}.json"):
        Table.open(table_uri).snapshot()


def test_truncated_commit_is_log_corruption(table_uri: str) -> None:
    t = _table_with(table_uri, 3)
    data = t.storage.read(f"{LOG_DIR}/{3:020d}.json")
    t.storage.write(f"{LOG_DIR}/{3:020d}.json", data[: len(data) // 2])
    with pytest.raises(LogCorruptedError, match=f"{3:020d}.json"):
        Table.open(table_uri).snapshot()


def test_unsupported_reader_feature_is_named(table_uri: str) -> None:
    t = _table_with(table_uri, 1)
    proto = {
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["collations-preview"],
            "writerFeatures": ["collations-preview"],
        }
    }
    t.storage.put_if_absent(f"{LOG_DIR}/{2:020d}.json", orjson.dumps(proto) + b"\n")
    with pytest.raises(UnsupportedFeatureError, match="collations-preview") as err:
        Table.open(table_uri).snapshot()
    assert err.value.feature == "collations-preview"
    assert _ids(t, version=1) == [0]  # older versions stay readable


def test_missing_table_and_bad_versions(table_uri: str) -> None:
    with pytest.raises(TableNotFoundError):
        Table.open(table_uri)
    t = _table_with(table_uri, 2)
    with pytest.raises(VersionNotFoundError, match="latest version is 2"):
        t.snapshot(version=3)
    with pytest.raises(InvalidArgumentError):
        t.snapshot(version=-1)
    with pytest.raises(InvalidArgumentError):
        t.snapshot(version=1, timestamp=0)


def test_time_travel_by_version(table_uri: str) -> None:
    t = _table_with(table_uri, 6)
    for v in range(7):
        assert _ids(t, version=v) == list(range(v))


def test_time_travel_by_timestamp_uses_monotonic_mtimes(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _table_with(uri, 4)
    log = Path(uri) / LOG_DIR
    base = 1_700_000_000
    for v, offset in enumerate([0, 60, 120, 100, 240]):  # v3's clock went backwards
        os.utime(log / f"{v:020d}.json", (base + offset, base + offset))
    fresh = Table.open(uri)
    assert fresh.snapshot(timestamp=(base + 61) * 1000).version == 1
    assert fresh.snapshot(timestamp=(base + 120) * 1000 + 1).version == 3  # v3 adjusted to 120s + 1ms
    assert fresh.snapshot(timestamp="2099-01-01T00:00:00Z").version == 4
    with pytest.raises(VersionNotFoundError, match="before the earliest commit"):
        fresh.snapshot(timestamp=(base - 1) * 1000)
    history = fresh.history()
    assert [h["version"] for h in history] == [4, 3, 2, 1, 0]
    assert history[1]["timestamp"] == (base + 120) * 1000 + 1


def test_incremental_update_reads_only_new_commits(table_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table_with(table_uri, 12)
    writer = Table.open(table_uri)
    t.snapshot()
    writer.write(rows([100]))
    writer.write(rows([101]))
    reads: list[str] = []
    storage = t.storage
    real = storage.read_many

    def counting(keys: list[str]) -> list[bytes]:
        reads.extend(keys)
        return real(keys)

    monkeypatch.setattr(storage, "read_many", counting)
    snap = t.snapshot()
    assert snap.version == 14
    assert reads == [f"{LOG_DIR}/{13:020d}.json", f"{LOG_DIR}/{14:020d}.json"]
    assert 100 in snap.to_arrow().column("id").to_pylist()


def test_files_filter_prunes_by_partition_and_stats(table_uri: str) -> None:
    t = _table_with(table_uri, 9)
    s = t.snapshot()
    assert {f.partition_values["part"] for f in s.files("part = 'p1'")} == {"p1"}
    assert len(s.files("id >= 7")) == 2
    assert len(s.files("id = 4 OR part = 'p0'")) == 4
    assert len(s.files("NOT (id < 8)")) == 1
    assert s.to_arrow(filter="id > 2 AND value < 3.0", columns=["id"]).column("id").to_pylist() == [3, 4, 5]


def test_read_commit_info_reads_one_commit_without_listing(tmp_path: Path) -> None:
    from airflow_txnlog.engine import Table  # noqa: PLC0415
    from airflow_txnlog.engine.spi import log_reader  # noqa: PLC0415

    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1]))
    calls: list[str] = []
    storage = t.storage
    original = storage.list_log
    storage.list_log = lambda *a, **k: calls.append("list") or original(*a, **k)  # type: ignore[method-assign]
    info = log_reader.read_commit_info(storage, 1)
    assert info is not None and info["operation"] == "WRITE" and calls == []
    assert log_reader.read_commit_info(storage, 7) is None
