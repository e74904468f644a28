"""checkpointProtection (Delta 4's DROP FEATURE; protocol RFC checkpoint-protection.md): such a table is
written by the engine and read back by delta-rs; log cleanup deletes nothing below
`delta.requireCheckpointProtectionBeforeVersion` until it can delete all of it at once, and then the
commits before the checkpoints; no checkpoint is written for a version whose protocol the engine's
checkpoints cannot carry. The tables are built as DROP FEATURE leaves them: a commit with the
protocol gaining `checkpointProtection` (and losing the dropped feature) and the metadata gaining V."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import InvalidArgumentError, Table, UnsupportedFeatureError
from airflow_txnlog.engine.storage import Storage

SCHEMA = pa.schema([("id", pa.int64())])
V_KEY = "delta.requireCheckpointProtectionBeforeVersion"


def _raw_commit(root: Path, version: int, actions: list[dict[str, Any]]) -> None:
    """A commit written as another engine would (Delta on Spark's DROP FEATURE here)."""
    info = {"commitInfo": {"timestamp": 1, "operation": "DROP FEATURE"}}
    lines = [json.dumps(a) for a in [info, *actions]]
    (root / "_delta_log" / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


def _drop_feature(root: Path, version: int, protected: str | None, *, dropped: str | None = None) -> None:
    """Commit `version`: the protocol with `checkpointProtection` (without `dropped`) and, unless
    `protected` is None, the metadata with V = `protected`."""
    snap = Table.open(str(root)).snapshot()
    features = ["appendOnly", "invariants", "checkpointProtection"]
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": features}
    meta = snap.metadata.to_wire()["metaData"]
    if protected is not None:
        meta["configuration"] = {**meta.get("configuration", {}), V_KEY: protected}
    assert dropped is None or dropped not in features
    _raw_commit(root, version, [{"protocol": protocol}, {"metaData": meta}])


def _table(root: Path, commits: int) -> Table:
    """Versions 0..commits-1: a create and appends of one row each (ids 1..commits-1)."""
    t = Table.create(str(root), schema=SCHEMA)
    for i in range(1, commits):
        t.write(pa.table({"id": [i]}, schema=SCHEMA))
    return t


def _log(root: Path) -> set[str]:
    return {p.name for p in (root / "_delta_log").iterdir() if p.is_file()}


def _ids(root: Path) -> list[int]:
    return sorted(Table.open(str(root)).snapshot().to_arrow().column("id").to_pylist())


def test_a_protected_table_is_written_and_delta_rs_reads_it(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root, 4)
    _drop_feature(root, 4, "4")
    Table.open(str(root)).write(pa.table({"id": [99]}, schema=SCHEMA))  # (refused before: unknown feature)
    assert _ids(root) == [1, 2, 3, 99]
    assert sorted(DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 99]
    snap = Table.open(str(root)).snapshot()
    assert "checkpointProtection" in (snap.protocol.writer_features or ())
    assert snap.metadata.configuration[V_KEY] == "4"


@pytest.mark.parametrize("protected", [None, "12", "soon"], ids=["unprotected", "V=12", "malformed"])
def test_cleanup_below_the_protected_version_waits_until_it_can_take_all_of_it(
    tmp_path: Path, protected: str | None
) -> None:
    """Checkpoints at 5 and 10, latest 11: a cleanup would delete versions 0..9. With V = 12 (or a V
    that is not a number) it deletes nothing; without V (the feature alone) it deletes them."""
    root = tmp_path / "t"
    t = _table(root, 10)
    t.checkpoint(5)
    _drop_feature(root, 10, protected)
    t = Table.open(str(root))
    t.checkpoint(10)
    t.write(pa.table({"id": [11]}, schema=SCHEMA))
    before = _log(root)
    result = t.cleanup_log(retention_hours=0, dry_run=False)
    if protected is None:
        assert result.checkpoint_version == 10
        assert {n for n in before - _log(root) if n.endswith(".json")} == {
            f"{v:020d}.json" for v in range(10)
        }
    else:
        assert (result.files, result.checkpoint_version) == ([], None)
        assert _log(root) == before
    assert _ids(root) == [*range(1, 10), 11]


def test_a_cleanup_past_the_protected_version_takes_all_of_it_commits_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoints at 5, 10 and 12, V = 12: one cleanup deletes everything below 12, every commit,
    checksum and compaction before any checkpoint (rule d), in separate delete calls."""
    root = tmp_path / "t"
    t = _table(root, 10)
    t.checkpoint(5)
    _drop_feature(root, 10, "12")
    t = Table.open(str(root))
    t.checkpoint(10)
    t.write(pa.table({"id": [11]}, schema=SCHEMA))
    t.write(pa.table({"id": [12]}, schema=SCHEMA))
    t.checkpoint(12)
    calls: list[list[str]] = []
    real = Storage.delete_many

    def record(self: Storage, keys: Any) -> None:
        calls.append([k.rsplit("/", 1)[-1] for k in keys])
        real(self, keys)

    monkeypatch.setattr(Storage, "delete_many", record)
    result = Table.open(str(root)).cleanup_log(retention_hours=0, dry_run=False)
    log_calls = [c for c in calls if c and all(n[:20].isdigit() for n in c)]
    assert result.checkpoint_version == 12
    assert [any(".checkpoint." in n for n in c) for c in log_calls] == [False, True]
    assert {n for n in log_calls[1]} == {f"{5:020d}.checkpoint.parquet", f"{10:020d}.checkpoint.parquet"}
    assert {n for n in log_calls[0] if n.endswith(".json")} == {f"{v:020d}.json" for v in range(12)}
    assert not any(n < f"{12:020d}" for n in _log(root) if n[:20].isdigit())
    assert _ids(root) == [*range(1, 10), 11, 12]
    assert sorted(DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist()) == _ids(root)


def test_no_checkpoint_of_a_version_whose_protocol_has_a_feature_the_engine_cannot_carry(
    tmp_path: Path,
) -> None:
    """Version 4 had a writer feature this engine does not know (`icebergCompatV1`); DROP FEATURE
    removed it at 5 (V = 5). A checkpoint of 4 is refused and nothing is written; 3 and 5 are fine."""
    root = tmp_path / "t"
    _table(root, 4)
    snap = Table.open(str(root)).snapshot()
    old = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["appendOnly", "invariants", "icebergCompatV1"],
    }
    _raw_commit(root, 4, [{"protocol": old}, snap.metadata.to_wire()])
    _drop_feature(root, 5, "5", dropped="icebergCompatV1")
    t = Table.open(str(root))
    before = _log(root)
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV1"):
        t.checkpoint(4)
    assert _log(root) == before
    t.checkpoint(3)
    t.checkpoint(5)
    assert {f"{3:020d}.checkpoint.parquet", f"{5:020d}.checkpoint.parquet"} <= _log(root)


def test_the_protected_version_is_delta_s_to_set(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root, 2)
    with pytest.raises(InvalidArgumentError, match=V_KEY):
        t.set_properties({V_KEY: "3"})
    t.set_properties({"delta.feature.checkpointProtection": "supported"})
    assert "checkpointProtection" in (Table.open(str(root)).snapshot().protocol.writer_features or ())
