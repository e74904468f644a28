from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from airflow_txnlog.engine import (
    CommitRetriesExceededError,
    ConcurrentAppendError,
    ForeignCommitsError,
    InvalidArgumentError,
    RestoreError,
    RestoreFilesMissingError,
    RestoreRetriesExceededError,
    RetentionTooShortError,
    SavepointExistsError,
    SavepointFilesMissingError,
    SavepointNotFoundError,
    Snapshot,
    Table,
    VersionNotFoundError,
)
from airflow_txnlog.engine.storage import LOG_DIR
from tests.conftest import SCHEMA, rows


def _ids(t: Table, **kw: object) -> list[int]:
    return sorted(t.snapshot(**kw).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


def _delete_partition(t: Table, part: str) -> int:
    with t.transaction("DELETE", {"predicate": f"part = '{part}'"}) as txn:
        for f in txn.read_files(f"part = '{part}'"):
            txn.remove(f)
        return txn.commit()


def _risky_history(t: Table) -> None:
    """v4..v11: overwrite, a partition delete, appends (a checkpoint lands at 10)."""
    t.write(rows([100, 101], "x"), mode="overwrite")
    _delete_partition(t, "x")
    for i in range(6):
        t.write(rows([200 + i], "y"))


def _base(uri: str) -> Table:
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"])
    t.write(rows([1, 2], "a"))
    t.write(rows([3], "b"))
    t.write(rows([4], "a"))
    return t


def test_restore_savepoint_after_vacuum_and_log_cleanup(table_uri: str) -> None:
    t = _base(table_uri)
    v3_rows = _ids(t)
    sp = t.create_savepoint("before-merge", reason="risky run", created_by="me")
    assert (sp.version, sp.num_files) == (3, 3)
    _risky_history(t)
    vac = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert vac.deleted == 1  # only the overwrite's file: the savepoint's files stay
    cleaned = t.cleanup_log(retention_hours=0, dry_run=False)
    assert cleaned.checkpoint_version == 10 and f"{3:020d}.json" in cleaned.files
    with pytest.raises(VersionNotFoundError):
        t.snapshot(version=3)  # the log no longer has it, the savepoint does
    result = t.restore(savepoint="before-merge")
    assert result.committed and result.metrics["numRestoredFiles"] == 3
    assert _ids(t) == v3_rows
    again = t.restore(savepoint="before-merge")
    assert (again.committed, again.version) == (False, result.version)
    assert t.latest_version() == result.version
    entry = t.history(1)[0]
    assert entry["operation"] == "RESTORE" and entry["operationParameters"]["savepoint"] == "before-merge"


def test_restore_to_version_and_timestamp(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    t = _base(uri)
    _risky_history(t)
    log = Path(uri) / LOG_DIR
    base = int(time.time()) - 3600
    for v in range(t.latest_version() + 1):
        os.utime(log / f"{v:020d}.json", (base + v * 10, base + v * 10))
    t = Table.open(uri)
    first = t.restore(version=2)
    assert _ids(t) == [1, 2, 3]
    second = t.restore(timestamp=(base + 30) * 1000)  # version 3
    assert second.target_version == 3 and _ids(t) == [1, 2, 3, 4]
    assert second.version == first.version + 1  # type: ignore[operator]


def test_dry_run_changes_nothing(table_uri: str) -> None:
    t = _base(table_uri)
    t.create_savepoint("sp")
    _risky_history(t)
    before = [f.name for f in t.storage.list_log()]
    plan = t.restore(savepoint="sp", dry_run=True)
    assert plan.dry_run and not plan.committed and plan.version is None
    assert plan.metrics["numOfFilesAfterRestore"] == 3 and len(plan.files_to_remove) == 6
    assert [f.name for f in t.storage.list_log()] == before


def test_restore_refuses_when_a_file_was_deleted_by_hand(table_uri: str) -> None:
    t = _base(table_uri)
    t.create_savepoint("sp")
    _risky_history(t)
    victim = t.get_savepoint("sp")
    gone = t.snapshot(version=3).files()[0].path
    t.storage.delete(gone)
    version = t.latest_version()
    with pytest.raises(RestoreFilesMissingError, match="unchanged") as err:
        t.restore(savepoint=victim.name)
    assert err.value.missing == [gone]
    assert t.latest_version() == version


def test_foreign_commits_fail_unless_forced(table_uri: str) -> None:
    t = _base(table_uri)
    t.create_savepoint("sp")
    t.write(rows([50], "a"), tags={"owner": "run-1"})  # our own risky write
    assert t.restore(savepoint="sp", owner="run-1", dry_run=True).foreign_versions == []
    other = Table.open(table_uri)
    foreign = other.write(rows([60], "b"), tags={"owner": "run-2"})
    with pytest.raises(ForeignCommitsError, match=str(foreign)) as err:
        t.restore(savepoint="sp", owner="run-1")
    assert err.value.versions == [foreign]
    forced = t.restore(savepoint="sp", owner="run-1", on_foreign_commits="force")
    assert forced.committed and _ids(t) == [1, 2, 3, 4]
    assert t.history(1)[0]["discardedVersions"] == [foreign]
    assert t.history(1)[0]["tags"] == {"owner": "run-1"}


class _StalePlan:
    """A MaintenanceTable whose first `snapshot()` is a stale one, as if a commit landed right after."""

    def __init__(self, t: Table, stale: Snapshot) -> None:
        self.t, self.storage, self.stale = t, t.storage, [stale]
        self.txn_commit_version = t.txn_commit_version
        self.transaction = t.transaction

    def snapshot(self) -> Snapshot:
        return self.stale.pop() if self.stale else self.t.snapshot()


def test_restore_racing_an_append_never_keeps_the_appended_rows(table_uri: str) -> None:
    """Regression: an append landing between the restore's plan and its transaction was kept.

    The plan is made from a snapshot that is one commit old (as if the append landed right after
    planning); the restore's transaction must read that same snapshot, conflict with the append,
    re-plan from the new latest version and remove the appended file too.
    """
    from airflow_txnlog.engine.maintenance import restore as restore_mod  # noqa: PLC0415

    t = _base(table_uri)
    t.create_savepoint("sp")
    t.write(rows([50], "a"))  # the run's own risky write (v4): the restore must remove it
    stale = t.snapshot()
    Table.open(table_uri).write(rows([70], "a"))  # the racing append (v5)
    result = restore_mod.restore(
        _StalePlan(t, stale),
        restore_mod.savepoint_target(t, "sp"),
        dry_run=False,
        on_foreign_commits="force",
        owner=None,
    )
    assert result.committed and result.version == 6 and result.metrics["numRemovedFiles"] == 2
    assert _ids(t, version=6) == [1, 2, 3, 4]


def test_savepoint_names_and_lifecycle(table_uri: str) -> None:
    t = _base(table_uri)
    for bad in ["", "../x", "a/b", "x" * 129, ".hidden", "a..b"]:
        with pytest.raises(InvalidArgumentError):
            t.create_savepoint(bad)
    t.create_savepoint("v1", version=1)
    with pytest.raises(SavepointExistsError):
        t.create_savepoint("v1")
    with pytest.raises(VersionNotFoundError):
        t.create_savepoint("future", version=99)
    with pytest.raises(InvalidArgumentError, match="future"):
        t.create_savepoint("old", expires_at="2000-01-01T00:00:00Z")
    t.create_savepoint("v3", expires_at="2999-01-01T00:00:00Z")
    assert [s.name for s in t.savepoints()] == ["v1", "v3"]
    assert t.get_savepoint("v3").expires_at == 32472144000000
    t.delete_savepoint("v1")
    with pytest.raises(SavepointNotFoundError):
        t.get_savepoint("v1")
    left = t.storage.fs.ls(t.storage.full_path("_savepoints"), detail=False)
    assert not any(n.rsplit("/", 1)[-1].startswith("v1.") for n in left)


def test_savepoint_refuses_a_version_with_missing_files(table_uri: str) -> None:
    t = _base(table_uri)
    gone = t.snapshot().files()[0].path
    t.write(rows([9], "z"), mode="overwrite")  # v4: v3's files are no longer live, so vacuum may take them
    t.storage.delete(gone)
    with pytest.raises(SavepointFilesMissingError, match="Nothing was created") as err:
        t.create_savepoint("broken", version=3)
    assert err.value.missing == [gone]
    assert t.savepoints() == []


def test_a_savepoint_checks_only_the_files_vacuum_may_take(
    table_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files live in the latest version are never vacuumed: a savepoint of it checks none (one storage
    call per file was hours on a million-file table in an object store); of an older version, only
    the files the latest version no longer has."""
    from airflow_txnlog.engine.maintenance import savepoints as savepoints_mod  # noqa: PLC0415

    t = _base(table_uri)
    _delete_partition(t, "b")  # v4
    checked: list[list[str]] = []
    real = savepoints_mod.missing_files

    def spy(storage: object, paths: list[str]) -> list[str]:
        checked.append(list(paths))
        return real(storage, paths)  # type: ignore[arg-type]

    monkeypatch.setattr(savepoints_mod, "missing_files", spy)
    assert t.create_savepoint("now").num_files == 2 and [p for c in checked for p in c] == []
    checked.clear()
    b_file = next(f.path for f in t.snapshot(version=3).files() if "part=b" in f.path)
    assert t.create_savepoint("v3", version=3).num_files == 3
    assert checked == [[b_file], [b_file]]  # before the record, then after any running vacuum


def test_missing_files_keeps_the_order_of_what_it_checks(table_uri: str) -> None:
    from airflow_txnlog.engine.maintenance.savepoints import missing_files  # noqa: PLC0415

    t = _base(table_uri)
    live = [f.path for f in t.snapshot().files()]
    asked = [f"nope-{i}.parquet" if i % 7 == 0 else live[i % len(live)] for i in range(60)]
    assert missing_files(t.storage, asked) == [p for p in asked if p.startswith("nope-")]
    assert missing_files(t.storage, []) == [] and missing_files(t.storage, ["x"]) == ["x"]


def test_vacuum_is_a_dry_run_with_retention_checks(table_uri: str) -> None:
    t = _base(table_uri)
    _risky_history(t)
    with pytest.raises(RetentionTooShortError, match="enforce_retention=False"):
        t.vacuum(retention_hours=1)
    with pytest.raises(InvalidArgumentError):
        t.vacuum(retention_hours=-1, enforce_retention=False)
    assert t.vacuum().files == []  # nothing is older than 7 days
    plan = t.vacuum(retention_hours=0, enforce_retention=False)
    assert plan.dry_run and len(plan.files) == 4 and plan.bytes > 0
    assert all(t.storage.exists(p) for p in plan.files)
    done = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert done.deleted == 4 and not any(t.storage.exists(p) for p in done.files)
    ops = [h["operation"] for h in t.history(2)]
    assert ops == ["VACUUM END", "VACUUM START"]
    assert t.history(1)[0]["operationMetrics"]["numDeletedFiles"] == "4"
    assert _ids(t) == [200, 201, 202, 203, 204, 205]


def test_vacuum_keeps_young_orphans_and_hidden_files(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    t = _base(uri)
    root = Path(uri)
    (root / "part=a" / "orphan-young.parquet").write_bytes(b"x")
    old = root / "part=a" / "orphan-old.parquet"
    old.write_bytes(b"y")
    os.utime(old, (time.time() - 30 * 86400, time.time() - 30 * 86400))
    (root / "_hidden").mkdir()
    (root / "_hidden" / "keep.txt").write_bytes(b"z")
    (root / ".dot.parquet").write_bytes(b"z")
    os.utime(root / ".dot.parquet", (0, 0))
    plan = t.vacuum()
    assert plan.files == ["part=a/orphan-old.parquet"]


def test_vacuum_never_follows_symlinks_out_of_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "data.parquet").write_bytes(b"keep me")
    os.utime(outside / "data.parquet", (0, 0))
    uri = str(tmp_path / "t")
    t = _base(uri)
    os.symlink(outside, Path(uri) / "part=z")
    t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert (outside / "data.parquet").read_bytes() == b"keep me"


def test_log_cleanup_keeps_a_loadable_table(table_uri: str) -> None:
    t = _base(table_uri)
    _risky_history(t)
    t.write(rows([999], "y"))
    assert t.cleanup_log().files == []  # 30 days by default
    dry = t.cleanup_log(retention_hours=0)  # a dry run by default
    assert dry.dry_run and t.storage.exists(f"{LOG_DIR}/{0:020d}.json")
    # versions 0..9 go: each commit and the version checksum the engine wrote beside it
    assert dry.files == sorted(f"{v:020d}.{ext}" for v in range(10) for ext in ("crc", "json"))
    t.cleanup_log(retention_hours=0, dry_run=False)
    fresh = Table.open(table_uri)
    assert fresh.snapshot().checkpoint_version == 10
    assert 999 in _ids(fresh)
    assert min(int(f.name[:20]) for f in fresh.storage.list_log() if f.name.endswith(".json")) == 10


def test_log_cleanup_deletes_only_stale_temp_files(tmp_path: Path) -> None:
    """Torn temp files of crashed writers (older than an hour) go; a fresh one (a write in flight)
    stays; dry run only lists; the table is untouched."""
    t = _base(str(tmp_path / "t"))
    tmp_dir = tmp_path / "t" / LOG_DIR / ".tmp"
    stale, fresh = (
        tmp_dir / ".00000000000000000009.json.ab.tmp",
        tmp_dir / ".00000000000000000010.json.cd.tmp",
    )
    stale.write_bytes(b'{"add": torn')
    fresh.write_bytes(b'{"add": in flight')
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    before = t.latest_version()
    assert t.cleanup_log(dry_run=True).temp_files == [stale.name] and stale.exists()
    res = t.cleanup_log(dry_run=False)
    assert res.temp_files == [stale.name] and res.files == []
    assert not stale.exists() and fresh.exists()
    assert Table.open(str(tmp_path / "t")).latest_version() == before


def test_health_reports_what_maintenance_needs(table_uri: str) -> None:
    t = _base(table_uri)
    t.create_savepoint("sp")
    _risky_history(t)
    h = t.health()
    assert h.version == 11 and h.num_files == 6 and h.small_files == 6
    assert h.last_checkpoint_version == 10 and h.commits_since_checkpoint == 1
    assert h.tombstones == 4 and h.reclaimable_bytes == 0  # 3 overwritten + 1 deleted
    assert h.savepoints == ["sp"] and h.oldest_restorable_version == 0
    assert h.to_dict()["size_bytes"] == sum(f.size for f in t.snapshot().files())


def test_a_replan_reads_only_the_new_commits_and_checks_each_file_once(
    table_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two races lost to a writer: each re-plan reads the writer's new commit only (commits never
    change) and checks no file twice (the target's files are pinned); the third plan commits, and
    the writer's versions are recorded as discarded."""
    from airflow_txnlog.engine.maintenance import restore as restore_mod  # noqa: PLC0415

    t = _base(table_uri)
    _delete_partition(t, "b")  # v4: the restore re-adds part b's file
    other = Table.open(table_uri)
    real_commit, real_read, real_missing = (
        restore_mod._commit,
        restore_mod.read_commits,
        restore_mod.missing_files,
    )
    read: list[int] = []
    checked: list[str] = []
    races = iter([True, True])

    def commit(*args: object, **kwargs: object) -> int:
        if next(races, False):
            v = other.write(rows([50 + other.latest_version()], "c"))
            raise ConcurrentAppendError("a concurrent commit added a file", winning_version=v)
        return real_commit(*args, **kwargs)  # type: ignore[arg-type]

    def read_commits(storage: object, commits: list[tuple[int, str]], **kw: object) -> object:
        read.extend(v for v, _ in commits)
        return real_read(storage, commits, **kw)  # type: ignore[arg-type]

    def missing_files(storage: object, paths: list[str]) -> list[str]:
        checked.extend(paths)
        return real_missing(storage, paths)  # type: ignore[arg-type]

    monkeypatch.setattr(restore_mod, "_commit", commit)
    monkeypatch.setattr(restore_mod, "read_commits", read_commits)
    monkeypatch.setattr(restore_mod, "missing_files", missing_files)
    monkeypatch.setattr(restore_mod, "REPLAN_BACKOFF_S", (0.0, 0.0))
    res = t.restore(version=3, owner="me", on_foreign_commits="force")
    assert res.committed and res.version == 7 and res.foreign_versions == [4, 5, 6]
    assert sorted(read) == [4, 5, 6]  # v4 read once, not on each of the 3 plans
    assert len(checked) == len(set(checked)) == 1 and checked == res.files_to_add
    assert _ids(t) == [1, 2, 3, 4]


def test_restore_gives_up_on_a_table_that_keeps_changing(
    table_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every re-plan loses a race: after MAX_REPLANS a retry error (not a foreign-commits one) says what
    to do, and the table is unchanged."""
    from airflow_txnlog.engine.maintenance import restore as restore_mod  # noqa: PLC0415

    def always_beaten(*_: object, **__: object) -> int:
        raise ConcurrentAppendError("a concurrent commit added a file", winning_version=99)

    t = _base(table_uri)
    latest = t.latest_version()
    monkeypatch.setattr(restore_mod, "_commit", always_beaten)
    monkeypatch.setattr(restore_mod, "MAX_REPLANS", 3)
    monkeypatch.setattr(restore_mod, "REPLAN_BACKOFF_S", (0.0, 0.0))
    with pytest.raises(
        RestoreRetriesExceededError, match=r"3 restore attempts.*Help: pause the writers"
    ) as err:
        t.restore(version=1)
    assert isinstance(err.value, CommitRetriesExceededError) and isinstance(err.value, RestoreError)
    assert not isinstance(err.value, ForeignCommitsError)
    assert t.latest_version() == latest and t.savepoints() == []  # unchanged, the pin is gone
