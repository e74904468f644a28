"""The planner at scale (issue 41, item 3): one backwards pass over the commits for VACUUM LITE's
history and the Z-order look-up, commits skimmed (commitInfo alone unless they hold a remove), big
partitions dealt in serpentine order, partitions grouped by dense ids (several columns, nulls)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from airflow_txnlog.engine import LogCorruptedError, Table
from airflow_txnlog.engine.log import log_reader
from airflow_txnlog.engine.log.log_reader import skim_commit
from airflow_txnlog.engine.log.log_segment import list_log
from airflow_txnlog.engine.maintenance.compaction_plan import SERPENTINE_FILES_PER_BIN, PartitionFiles, pack
from airflow_txnlog.engine.maintenance.rewrite_layout import ZOrderFinder, zorder_in_log
from airflow_txnlog.engine.maintenance.vacuum_log import vacuum_history
from tests.storage_calls import RecordingStorage

SCHEMA = pa.schema([("p", pa.string()), ("x", pa.int64())])
DAY_MS = 86_400_000


def _table(path: Path) -> Table:
    """Appends, an overwrite (removes), a Z-order OPTIMIZE, then more appends."""
    t = Table.create(str(path), schema=SCHEMA, partition_by=["p"])
    for i in range(6):
        t.write(pa.table({"p": ["a"] * 20, "x": list(range(i * 20, i * 20 + 20))}, schema=SCHEMA))
    t.write(pa.table({"p": ["a"], "x": [1]}, schema=SCHEMA), mode="overwrite")
    for i in range(5):
        t.write(pa.table({"p": ["a"] * 5, "x": list(range(i * 5, i * 5 + 5))}, schema=SCHEMA))
    t.optimize(zorder_by=["x"])
    for i in range(8):
        t.write(pa.table({"p": ["b"] * 5, "x": list(range(i * 5, i * 5 + 5))}, schema=SCHEMA))
    return t


def test_a_plan_reads_each_commit_once_and_parses_only_those_holding_a_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(tmp_path / "t")
    fresh = Table.open(str(tmp_path / "t"))
    recording = RecordingStorage(fresh._storage)
    fresh._storage = recording
    parsed: list[str] = []
    real_parse = log_reader.parse_commit

    def spy(data: bytes, *, name: str = "commit") -> list[dict[str, object]]:
        parsed.append(name)
        return real_parse(data, name=name)

    monkeypatch.setattr(log_reader, "parse_commit", spy)
    plan = fresh.plan_maintenance(quiet_minutes=0, now_ms=int(time.time() * 1000) + 8 * DAY_MS).to_dict()
    reads = Counter(k for k in recording.keys if k.startswith("_delta_log/") and k.endswith(".json"))
    assert reads and max(reads.values()) == 1, reads  # (the snapshot was loaded by open, before)
    holding_remove = {
        f"{v:020d}.json" for v, c in enumerate(_commits(tmp_path / "t")) if any("remove" in a for a in c)
    }
    assert set(parsed) == holding_remove and len(holding_remove) == 2  # the overwrite and the OPTIMIZE
    compact = [a for a in plan["actions"] if a["kind"] == "compact"]
    assert compact and all(a["layout"]["columns"] == ["x"] and a["layout"]["version"] == 13 for a in compact)
    lite = [a for a in plan["actions"] if a["kind"] == "vacuum" and a["estimate"]["mode"] == "lite"]
    assert len(lite) == 1 and len(lite[0]["files"]) == 6 + 6  # the overwrite's six, the OPTIMIZE's six


def _commits(path: Path) -> list[list[dict[str, object]]]:
    import json  # noqa: PLC0415

    files = sorted((path / "_delta_log").glob("*.json"))
    return [[json.loads(line) for line in f.read_text().splitlines() if line] for f in files]


def test_a_rider_sees_the_commits_past_the_historys_end_and_changes_nothing(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    t.vacuum(dry_run=False, retention_hours=0, enforce_retention=False)
    for i in range(3):
        t.write(pa.table({"p": ["c"], "x": [i]}, schema=SCHEMA))
    storage, listing, now = t._storage, list_log(t._storage), int(time.time() * 1000)
    args = {"now_ms": now, "retention_ms": 0, "full_days": 0}
    alone = vacuum_history(storage, listing, **args)
    finder = ZOrderFinder()
    seen: list[int] = []

    def rider(commit: log_reader.SkimmedCommit) -> bool:
        seen.append(commit.version)
        return finder(commit)

    assert vacuum_history(storage, listing, **args, rider=rider) == alone
    # the history ends at the vacuum (newest); the rider read on, newest first, to the Z-order
    assert finder.found == (["x"], 13) == zorder_in_log(storage, listing)
    assert seen == list(range(max(listing.commits), 12, -1))


def test_skim_commit_parses_the_commitinfo_line_alone_unless_asked() -> None:
    info = b'{"commitInfo":{"operation":"VACUUM START"}}\n{"add":{"path":"a"}}\n'
    first = skim_commit(3, "3.json", info)
    assert first.info == {"operation": "VACUUM START"} and first.actions is None
    both = skim_commit(3, "3.json", info, parse_when=(b'"add"',))
    assert both.actions == [{"commitInfo": {"operation": "VACUUM START"}}, {"add": {"path": "a"}}]
    last = skim_commit(4, "4.json", b'{"add":{"path":"a"}}\n{"commitInfo":{"operation":"WRITE"}}')
    assert last.info == {"operation": "WRITE"} and last.actions is None
    assert skim_commit(5, "5.json", b'{"add":{"path":"a"}}\n').info == {}
    blind = b'{"commitInfo":{"isBlindAppend":true}}\n{"remove":{"path":"a"}}\n'
    removes = (b'"remove"',)
    assert skim_commit(8, "8.json", blind, parse_when=removes, blind_appends_skipped=True).actions is None
    assert skim_commit(8, "8.json", blind, parse_when=removes).actions == [
        {"commitInfo": {"isBlindAppend": True}},
        {"remove": {"path": "a"}},
    ]  # (a blind append that lies is searched unless the caller trusts the flag: VACUUM LITE does)
    with pytest.raises(LogCorruptedError, match=r"6\.json is empty"):
        skim_commit(6, "6.json", b"\n \n")
    with pytest.raises(LogCorruptedError, match=r"7\.json is not valid newline-delimited JSON"):
        skim_commit(7, "7.json", b'{"commitInfo": nope}\n')


def test_many_files_a_bin_are_dealt_in_serpentine_order_and_stay_balanced() -> None:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1_000, 50_000, 5_000)
    files = PartitionFiles.of(
        pa.table({
            "path": [f"f{i:05d}" for i in range(len(sizes))], "size_bytes": sizes,
            "modification_time": np.zeros(len(sizes), np.int64), "num_records": np.full(len(sizes), 10),
            "_deleted": np.zeros(len(sizes), np.int64),
        }),
        0,
    )  # fmt: skip
    capacity = 2_000_000
    bins = pack(files, np.arange(len(sizes)), capacity)
    assert len(sizes) >= SERPENTINE_FILES_PER_BIN * len(bins)  # (the serpentine path)
    assert sorted(np.concatenate(bins).tolist()) == list(range(len(sizes)))  # each file once
    totals = [int(sizes[b].sum()) for b in bins]
    assert len(bins) == -(-int(sizes.sum()) // capacity)
    assert max(totals) - min(totals) <= int(sizes.max()) and max(totals) <= 1.25 * capacity
    assert [b.tolist() for b in pack(files, np.arange(len(sizes)), capacity)] == [b.tolist() for b in bins]


def test_partitions_of_several_columns_with_nulls_are_planned_each_on_its_own(tmp_path: Path) -> None:
    schema = pa.schema([("a", pa.string()), ("b", pa.int64()), ("x", pa.int64())])
    t = Table.create(str(tmp_path / "t"), schema=schema, partition_by=["a", "b"])
    keys = [("u", 1), ("u", None), (None, 1), ("v", 1)]
    for i in range(5):
        for a, b in keys:
            t.write(pa.table({"a": [a] * 3, "b": [b] * 3, "x": [i] * 3}, schema=schema))
    plan = t.plan_maintenance(quiet_minutes=0).to_dict()
    compact = [a for a in plan["actions"] if a["kind"] == "compact"]
    assert sorted((c["partition"]["a"] or "", c["partition"]["b"] or 0) for c in compact) == sorted(
        (a or "", b or 0) for a, b in keys
    )
    by_files = {f: c["partition"] for c in compact for f in c["files"]}
    live = {f.path: f.partition_values for f in t.snapshot().files()}
    assert set(by_files) == set(live)  # every file in the bin of its own partition
    for path, part in by_files.items():
        expected = {"a": live[path]["a"], "b": live[path]["b"]}
        assert {k: None if v is None else str(v) for k, v in part.items()} == expected
