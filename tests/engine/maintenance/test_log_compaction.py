"""Log compaction files (`x.y.compacted.json`): written by `Table.compact_log` as Delta reconciles the
commits, read instead of the commits they cover (same snapshot, fewer files read), proposed by the
planner between checkpoints, deleted by log cleanup with the commits below a checkpoint, and ignored
or used by delta-rs and polars alike."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table, UnsupportedFeatureError
from airflow_txnlog.engine.log.log_paths import compacted_name
from airflow_txnlog.engine.maintenance.log_compaction import reconcile
from airflow_txnlog.engine.storage import LOG_DIR

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])
NO_CHECKPOINTS = {"delta.checkpointInterval": "1000"}


def rows(ids: list[int], part: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "part": [part] * len(ids)})


def _busy(uri: str) -> Table:
    """Appends, a delete of a file added in the range, a txn twice, a domain set then removed, a
    property change: every reconciliation rule has something to do."""
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"], properties=NO_CHECKPOINTS)
    for i in range(4):
        t.write(rows([i * 10, i * 10 + 1], "a" if i % 2 else "b"))
    with t.transaction("DELETE") as txn:
        txn.remove(txn.read_files("part = 'b'")[0])
        txn.set_app_transaction("app", 1)
        txn.set_domain_metadata("my.domain", "one")
        txn.commit()
    with t.transaction("WRITE") as txn:
        txn.set_app_transaction("app", 2)
        txn.remove_domain_metadata("my.domain")
        txn.commit()
    t.set_properties({"delta.logRetentionDuration": "interval 40 days"})
    t.write(rows([99], "c"))
    return t


def _state(t: Table, version: int | None = None) -> tuple[object, ...]:
    snap = t.snapshot(version)
    tomb = snap.tombstone_table().sort_by("key")
    return (
        sorted((f.path, f.size) for f in snap.files()), tomb.column("key").to_pylist(),
        snap.txn_version("app"), snap.domain_metadata(), snap.metadata, snap.protocol,
        snap.timestamp,
    )  # fmt: skip


def _reads(t: Table) -> list[str]:
    read: list[str] = []
    real = t.storage.read_many

    def read_many(keys: list[str]) -> list[bytes]:
        read.extend(keys)
        return real(keys)  # type: ignore[no-any-return]

    t.storage.read_many = read_many  # type: ignore[method-assign]
    return read


def test_a_compaction_replaces_its_commits_with_the_same_snapshot(tmp_path: Path) -> None:
    t = _busy(str(tmp_path / "t"))
    before = _state(t)
    result = t.compact_log()
    latest = t.latest_version()
    assert (result.first, result.last, result.file) == (0, latest - 1, compacted_name(0, latest - 1))
    reader = Table.open(t.uri, lazy=True)
    read = _reads(reader)
    assert _state(reader) == before  # (a lazy table: this is its first load)
    names = [k.rsplit("/", 1)[-1] for k in read]
    assert compacted_name(0, latest - 1) in names
    assert [n for n in names if n.endswith(".json") and "compacted" not in n] == [f"{latest:020d}.json"]
    lines = [json.loads(x) for x in (tmp_path / "t" / LOG_DIR / result.file).read_text().splitlines()]
    kinds = [next(iter(x)) for x in lines]
    assert "commitInfo" not in kinds and kinds[:2] == ["protocol", "metaData"]
    assert [x["txn"]["version"] for x in lines if "txn" in x] == [2]
    assert [x["domainMetadata"]["removed"] for x in lines if "domainMetadata" in x] == [True]
    assert sum("remove" in x for x in lines) == 1  # the deleted file: its tombstone stays


def test_older_versions_read_the_commits(tmp_path: Path) -> None:
    t = _busy(str(tmp_path / "t"))
    states = [_state(t, v) for v in range(t.latest_version() + 1)]
    t.compact_log()
    t.compact_log(first=2, last=5)
    assert [_state(t, v) for v in range(t.latest_version() + 1)] == states


def test_a_compaction_is_written_once_and_checks_its_range(tmp_path: Path) -> None:
    t = _busy(str(tmp_path / "t"))
    assert t.compact_log(first=1, last=3).file == compacted_name(1, 3)
    again = t.compact_log(first=1, last=3)
    assert again.file is None and again.actions > 0  # put if absent: the first one stays
    latest = t.latest_version()
    for first, last in [(3, 3), (0, latest), (5, 2)]:
        with pytest.raises(InvalidArgumentError, match="covers at least 2 commits before the latest"):
            t.compact_log(first=first, last=last)
    with pytest.raises(InvalidArgumentError, match="first"):
        t.compact_log(first=-1)


def test_an_unknown_action_is_never_compacted_away() -> None:
    with pytest.raises(UnsupportedFeatureError, match="does not know"):
        reconcile([[{"commitInfo": {}}, {"futureAction": {"x": 1}}]], name="1..2")
    assert reconcile([[{"commitInfo": {}}, {"cdc": {"path": "c"}}]], name="1..2") == []


def test_the_planner_proposes_a_compaction_between_checkpoints(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties={"delta.checkpointInterval": "20"})
    for i in range(4):
        t.write(rows([i]))
    (skip,) = [d for d in t.plan_maintenance(log_compaction_commits=5).skipped if d.kind == "compact_log"]
    assert skip.reason == "4 commits not covered by a log compaction < 5"  # 0..3; 4 is the latest
    for i in range(3):
        t.write(rows([10 + i]))
    (action,) = [a for a in t.plan_maintenance(log_compaction_commits=5).actions if a.kind == "compact_log"]
    assert action.estimate == {"first": 0, "last": 6}
    assert t.run_maintenance(action) == {"kind": "compact_log", "dry_run": True, "first": 0, "last": 6}
    assert not (tmp_path / "t" / LOG_DIR / compacted_name(0, 6)).exists()
    done = t.run_maintenance(action, dry_run=False)
    assert done["file"] == compacted_name(0, 6) and (tmp_path / "t" / LOG_DIR / done["file"]).exists()
    (covered,) = [d for d in t.plan_maintenance(log_compaction_commits=5).skipped if d.kind == "compact_log"]
    assert covered.reason == "0 commits not covered by a log compaction < 5"
    off = [d for d in t.plan_maintenance(log_compaction_commits=0).skipped if d.kind == "compact_log"]
    assert off[0].reason == "turned off (log_compaction_commits = 0)"


def test_no_compaction_when_a_checkpoint_is_due(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties={"delta.checkpointInterval": "6"})
    t._post_commit = lambda version: None  # type: ignore[method-assign]  # (no automatic checkpoint)
    for i in range(7):
        t.write(rows([i]))
    plan = t.plan_maintenance()
    assert [a.kind for a in plan.actions if a.kind in ("checkpoint", "compact_log")] == ["checkpoint"]
    (skip,) = [d for d in plan.skipped if d.kind == "compact_log"]
    assert skip.reason is not None and skip.reason.startswith("a checkpoint is due")


def test_log_cleanup_deletes_compactions_below_its_checkpoint(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=NO_CHECKPOINTS)
    for i in range(6):
        t.write(rows([i]))
    t.compact_log(first=1, last=3)
    t.checkpoint()
    t.write(rows([100]))
    t.write(rows([101]))
    dry = t.cleanup_log(retention_hours=0)
    assert compacted_name(1, 3) in dry.files
    t.cleanup_log(retention_hours=0, dry_run=False)
    assert not (tmp_path / "t" / LOG_DIR / compacted_name(1, 3)).exists()
    assert sorted(Table.open(t.uri).snapshot().to_arrow().column("id").to_pylist()) == [
        0,
        1,
        2,
        3,
        4,
        5,
        100,
        101,
    ]


def test_delta_rs_and_polars_read_a_table_with_a_compaction(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    pl = pytest.importorskip("polars")
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["part"], properties=NO_CHECKPOINTS)
    for i in range(6):
        t.write(rows([i, i + 100], "ab"[i % 2]))
    with t.transaction("DELETE") as txn:
        txn.remove(txn.read_files("part = 'a'")[0])
        txn.commit()
    t.write(rows([7]))
    t.compact_log()
    ours = sorted(t.snapshot().to_arrow().column("id").to_pylist())
    assert sorted(deltalake.DeltaTable(t.uri).to_pyarrow_table().column("id").to_pylist()) == ours
    assert sorted(pl.read_delta(t.uri).get_column("id").to_list()) == ours
    assert len(ours) == 11
