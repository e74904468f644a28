"""In-commit timestamps (PROTOCOL.md "In-Commit Timestamps"): a table created with
`delta.enableInCommitTimestamps=true` names the writer feature, and every commit, the first included,
carries a strictly increasing `inCommitTimestamp` in its commitInfo (the first action) - even when the
writer's clock goes back or another writer won the version first. Time travel and history use it."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table, UnsupportedFeatureError
from airflow_txnlog.engine.write import transaction

SCHEMA = pa.schema([("id", pa.int64())])
ICT = {"delta.enableInCommitTimestamps": "true"}


def _infos(root: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted((root / "_delta_log").glob("*.json")):
        first = json.loads(f.read_text().splitlines()[0])
        assert "commitInfo" in first  # commitInfo is the first action of every commit
        out.append(first["commitInfo"])
    return out


def test_every_commit_carries_an_increasing_ict(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties=ICT)
    p = t.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version, p.writer_features) == (1, 7, ("inCommitTimestamp",))
    for i in range(3):
        t.write(pa.table({"id": [i]}, schema=SCHEMA))
    t.checkpoint()
    t.write(pa.table({"id": [9]}, schema=SCHEMA))  # the previous commit's ICT read past a checkpoint
    icts = [info["inCommitTimestamp"] for info in _infos(root)]
    assert len(icts) == 5 and all(b > a for a, b in itertools.pairwise(icts))


def test_ict_increases_when_the_clock_goes_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties=ICT)
    first = _infos(root)[0]["inCommitTimestamp"]
    monkeypatch.setattr(transaction.time, "time", lambda: (first - 60_000) / 1000)  # a minute earlier
    t.write(pa.table({"id": [1]}, schema=SCHEMA))
    t.write(pa.table({"id": [2]}, schema=SCHEMA))
    infos = _infos(root)
    assert [i["inCommitTimestamp"] for i in infos] == [first, first + 1, first + 2]
    assert infos[1]["timestamp"] == first - 60_000  # the wall clock is still recorded as such


def test_a_retried_commit_follows_the_winner(tmp_path: Path) -> None:
    root = tmp_path / "t"
    Table.create(str(root), schema=SCHEMA, properties=ICT)
    a, b = Table.open(str(root)), Table.open(str(root))
    ta, tb = a.transaction("WRITE"), b.transaction("WRITE")
    ta.commit()
    future = _infos(root)[1]["inCommitTimestamp"] + 10_000_000
    log = root / "_delta_log" / f"{1:020d}.json"
    lines = log.read_text().splitlines()
    info = json.loads(lines[0])
    info["commitInfo"]["inCommitTimestamp"] = future  # the winner's clock ran far ahead
    log.write_text("\n".join([json.dumps(info), *lines[1:]]) + "\n")
    assert tb.commit() == 2
    assert _infos(root)[2]["inCommitTimestamp"] == future + 1


def test_time_travel_and_history_use_ict(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties=ICT)
    t.write(pa.table({"id": [1]}, schema=SCHEMA))
    t.write(pa.table({"id": [2]}, schema=SCHEMA))
    icts = [i["inCommitTimestamp"] for i in _infos(root)]
    for f in (root / "_delta_log").glob("*.json"):
        os.utime(f, (0, 0))  # file times say nothing now (a copied table)
    fresh = Table.open(str(root))
    assert fresh.snapshot(timestamp=icts[1]).version == 1
    assert fresh.snapshot(timestamp=icts[2] - 1).version == 1
    assert [h["timestamp"] for h in fresh.history()] == icts[::-1]


def test_enabling_on_an_existing_table(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA)
    t.write(pa.table({"id": [1]}, schema=SCHEMA))
    assert t.set_properties(ICT) == 2
    t.write(pa.table({"id": [2]}, schema=SCHEMA))
    infos = _infos(root)
    assert "inCommitTimestamp" not in infos[1] and infos[2]["inCommitTimestamp"] > infos[1]["timestamp"]
    assert infos[3]["inCommitTimestamp"] > infos[2]["inCommitTimestamp"]
    conf = t.snapshot().metadata.configuration
    # PROTOCOL.md: the enabling commit records its own version and in-commit timestamp
    assert conf["delta.inCommitTimestampEnablementVersion"] == "2"
    assert conf["delta.inCommitTimestampEnablementTimestamp"] == str(infos[2]["inCommitTimestamp"])
    p = t.snapshot().protocol
    assert (p.min_writer_version, p.writer_features) == (7, ("appendOnly", "inCommitTimestamp", "invariants"))
    assert deltalake_version_of(root) == 3


def deltalake_version_of(root: Path) -> int:
    deltalake = pytest.importorskip("deltalake")
    return int(deltalake.DeltaTable(str(root)).version())


def test_a_raw_metadata_change_cannot_turn_them_on(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA)
    txn = t.transaction("SET TBLPROPERTIES")
    meta = t.snapshot().metadata
    txn.update_metadata(dataclasses.replace(meta, configuration={**meta.configuration, **ICT}))
    with pytest.raises(UnsupportedFeatureError, match=r"Help: use Table\.set_properties") as info:
        txn.commit()
    assert info.value.feature == "inCommitTimestamp"
    assert len(list((root / "_delta_log").glob("*.json"))) == 1


def test_deltalake_reads_an_ict_table_we_wrote(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties=ICT)
    for i in range(3):
        t.write(pa.table({"id": [i]}, schema=SCHEMA))
    dt = deltalake.DeltaTable(str(root))
    assert dt.version() == 3 and sorted(dt.to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2]
    assert dt.protocol().writer_features == ["inCommitTimestamp"]


def test_concurrent_writers_keep_icts_strictly_increasing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    Table.create(str(root), schema=SCHEMA, properties=ICT)

    def writer(k: int) -> None:
        t = Table.open(str(root))
        for i in range(5):
            t.write(pa.table({"id": [k * 100 + i]}, schema=SCHEMA))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    icts = [i["inCommitTimestamp"] for i in _infos(root)]
    assert len(icts) == 21 and all(b > a for a, b in itertools.pairwise(icts))
