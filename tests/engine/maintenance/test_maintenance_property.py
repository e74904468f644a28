"""Property test of table maintenance (issue 3), as a hypothesis state machine.

Random sequences of appends, overwrites, partition deletes, checkpoints, savepoint create (latest or
an older version) / delete, vacuum (any retention, enforce_retention=False, executed, plus dry runs),
log cleanup (retention 0 included), back-dating data files, orphan files (as a crashed writer leaves)
and restores (to savepoints and to versions), starting from a seeded table with a savepoint "base".

A model keeps the rows the table must hold, the rows of every savepoint and of every version.
After every step:
- the table holds exactly the model's rows, and the savepoint list equals the model's;
- every file of the current version and of every savepoint exists.
After every vacuum: it deleted exactly what it reports, nothing under `_delta_log/` or `_savepoints/`,
no file of an unexpired tombstone and no unreferenced file younger than the retention; the engine's
restore plan of each savepoint misses no file; and each savepoint, restored on a copy of the table
directory, gives back exactly its rows (also after every log cleanup and at the end).
A real restore to a savepoint gives its rows and a second one commits nothing; a restore to a version
gives that version's rows, or refuses (table unchanged) listing exactly the files vacuum took.

Partition values need escaping in folder names and in log paths (' ', '%', '=', non-ASCII, null),
so vacuum's matching of disk listing, log paths and savepoint manifests is exercised too.
Deterministic (derandomize) for CI; TXNLOG_PROPERTY_EXAMPLES / _STEPS / _RANDOM explore further.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from airflow_txnlog.engine import (
    RestoreFilesMissingError,
    SavepointExistsError,
    SavepointFilesMissingError,
    SavepointNotFoundError,
    Table,
    VersionNotFoundError,
)
from airflow_txnlog.engine.maintenance.savepoints import read_manifest

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])
# None -> __HIVE_DEFAULT_PARTITION__; the others need escaping on disk and/or in the log
PARTS: list[str | None] = ["a", "b c", "x%y", "k=v", "é", None]
NAMES = ["base", "sp1", "before-run", "sp.4"]  # "base" is created by the seed step
RETENTIONS = [0.0, 0.0, 1e-6, 1.0, 168.0]

Rows = list[tuple[int, str | None]]


def table_rows(t: Table, version: int | None = None) -> Rows:
    data = t.snapshot(version).to_arrow().to_pydict()
    return sorted(zip(data["id"], data["part"], strict=True), key=lambda r: r[0])


def _batch(ids: list[int], part: str | None) -> pa.Table:
    return pa.table({"id": ids, "part": [part] * len(ids)}, schema=SCHEMA)


class MaintenanceMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="txnlog-maint-prop-"))
        self.path = self.tmp / "t"
        self.t = Table.create(str(self.path), schema=SCHEMA, partition_by=["part"])
        self.rows: Rows = []
        self.saved: dict[str, Rows] = {}  # savepoint name -> rows of its version
        self.next_id = 0
        self.copies = 0
        self.steps = 0
        self.orphans: set[str] = set()  # files no commit references (as a failed writer leaves)
        self.manifest_files: dict[str, list[str]] = {}  # savepoint manifest -> the files it lists
        self.version_rows: dict[int, Rows] = {0: []}  # rows at (at least) each version the model saw

    def teardown(self) -> None:
        event(f"steps: {self.steps // 10 * 10}+")
        try:
            self.check_savepoints_restore_on_copy()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ helpers
    def _ids(self, n: int) -> list[int]:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return ids

    def _missing(self, paths: list[str]) -> list[str]:
        return [p for p in paths if not (self.path / p).is_file()]

    def _data_files(self) -> list[Path]:
        hidden = {"_delta_log", "_savepoints"}
        return [p for p in self.path.rglob("*") if p.is_file() and not hidden & set(p.parts)]

    def check_savepoints_restore_on_copy(self) -> None:
        """Every savepoint, restored on a copy of the table directory, gives back exactly its rows."""
        for name, want in self.saved.items():
            self.copies += 1
            copy = self.tmp / f"copy-{self.copies}"
            shutil.copytree(self.path, copy)
            try:
                t = Table.open(str(copy))
                res = t.restore(savepoint=name)
                assert res.missing_files == []
                assert table_rows(t) == want, f"savepoint {name} restored to other rows"
            finally:
                shutil.rmtree(copy, ignore_errors=True)

    @initialize()
    def seed(self) -> None:
        """Rows in three partitions and a savepoint, so short sequences have something to maintain."""
        for part in ("a", "b c", None):
            self.append(part, 2)
        self.t.create_savepoint("base", reason="seed")
        self.saved["base"] = list(self.rows)

    # ------------------------------------------------------------------ data changes
    @rule(part=st.sampled_from(PARTS), n=st.integers(1, 3))
    def append(self, part: str | None, n: int) -> None:
        ids = self._ids(n)
        version = self.t.write(_batch(ids, part))
        self.rows = sorted([*self.rows, *((i, part) for i in ids)])
        self.version_rows[version] = list(self.rows)

    @rule(part=st.sampled_from(PARTS), n=st.integers(1, 3))
    def overwrite(self, part: str | None, n: int) -> None:
        ids = self._ids(n)
        version = self.t.write(_batch(ids, part), mode="overwrite")
        self.rows = [(i, part) for i in ids]
        self.version_rows[version] = list(self.rows)

    @rule(part=st.sampled_from(PARTS))
    def delete_partition(self, part: str | None) -> None:
        txn = self.t.transaction("DELETE", {"predicate": f"part = {part!r}"})
        doomed = [f for f in txn.read_files() if f.partition_values.get("part") == part]
        if not doomed:
            return
        for f in doomed:
            txn.remove(f)
        version = txn.commit(metrics={"numRemovedFiles": len(doomed)})
        self.rows = [r for r in self.rows if r[1] != part]
        self.version_rows[version] = list(self.rows)

    @rule()
    def checkpoint(self) -> None:
        self.t.checkpoint()

    @rule(hours=st.sampled_from([2, 30, 400]))
    def age_data_files(self, hours: int) -> None:
        """Back-date every data file: retentions of hours (not only 0) then have something to take."""
        for p in self._data_files():
            stat = p.stat()
            os.utime(p, (stat.st_atime - hours * 3600, stat.st_mtime - hours * 3600))

    @rule(part=st.sampled_from(PARTS))
    def orphan_file(self, part: str | None) -> None:
        """A data file no commit references, as a writer that crashed before committing leaves."""
        folder = self.path / ("part=__HIVE_DEFAULT_PARTITION__" if part is None else f"part={part}")
        folder.mkdir(parents=True, exist_ok=True)
        self.next_id += 1
        name = f"part-00000-orphan{self.next_id}-c000.snappy.parquet"
        (folder / name).write_bytes(b"PAR1 not really PAR1")
        self.orphans.add(str((folder / name).relative_to(self.path)))

    # ------------------------------------------------------------------ savepoints
    @rule(name=st.sampled_from(NAMES))
    def create_savepoint(self, name: str) -> None:
        if name in self.saved:
            with pytest.raises(SavepointExistsError):
                self.t.create_savepoint(name)
            return
        sp = self.t.create_savepoint(name, reason="property test", created_by="hypothesis")
        assert sp.version == self.t.latest_version()
        assert sp.num_files == self.t.snapshot().num_files
        self.saved[name] = list(self.rows)

    @rule(name=st.sampled_from(NAMES), back=st.integers(1, 6))
    def create_savepoint_of_older_version(self, name: str, back: int) -> None:
        version = self.t.latest_version() - back
        if name in self.saved or version < 0:
            return
        try:
            snap = self.t.snapshot(version)
        except VersionNotFoundError:
            return  # log cleaned below it
        gone = self._missing(snap.file_paths())
        if gone:  # vacuum took some of its files: it cannot be savepointed
            event("create_savepoint_of_older_version: refused, files vacuumed")
            with pytest.raises(SavepointFilesMissingError) as info:
                self.t.create_savepoint(name, version=version)
            assert sorted(info.value.missing) == sorted(gone)
            assert name not in {s.name for s in self.t.savepoints()}
            return
        sp = self.t.create_savepoint(name, version=version)
        assert sp.version == version
        self.saved[name] = table_rows(self.t, version)

    @rule(name=st.sampled_from(NAMES))
    def delete_savepoint(self, name: str) -> None:
        if name not in self.saved:
            with pytest.raises(SavepointNotFoundError):
                self.t.delete_savepoint(name)
            return
        assert self.t.delete_savepoint(name).name == name
        del self.saved[name]

    # ------------------------------------------------------------------ maintenance
    @rule(retention=st.sampled_from(RETENTIONS))
    def vacuum(self, retention: float) -> None:
        tombstones = self.t.snapshot().tombstones()
        before = {p for p in self.path.rglob("*") if p.is_file()}
        mtimes = {str(p.relative_to(self.path)): p.stat().st_mtime for p in before}
        res = self.t.vacuum(retention_hours=retention, enforce_retention=False, dry_run=False)
        cutoff_s = time.time() - retention * 3600  # at or after vacuum's own cutoff
        after = {p for p in self.path.rglob("*") if p.is_file()}
        deleted = {str(p.relative_to(self.path)) for p in before - after}
        assert deleted == set(res.files), "vacuum deleted other files than it reports"
        assert res.deleted == len(res.files)
        assert not any(f.startswith(("_delta_log/", "_savepoints/")) for f in res.files)
        # tombstones younger than the retention keep their files (time travel within the retention)
        young = {t.path for t in tombstones if (t.deletion_timestamp or 0) / 1000 > cutoff_s}
        assert not young & deleted, f"vacuum took files of unexpired tombstones: {young & deleted}"
        # files the log does not know are only taken once older than the retention (in-flight writers)
        fresh = {o for o in self.orphans if mtimes.get(o, 0) > cutoff_s}
        assert not fresh & deleted, f"vacuum took fresh unreferenced files: {fresh & deleted}"
        self.orphans -= deleted
        event(f"vacuum deleted files: {bool(deleted)}")
        self.check_live_and_savepoint_files_exist()
        self.check_savepoint_plans()
        self.check_savepoints_restore_on_copy()

    @rule(retention=st.sampled_from(RETENTIONS))
    def vacuum_dry_run(self, retention: float) -> None:
        before = sorted(p for p in self.path.rglob("*") if p.is_file())
        res = self.t.vacuum(retention_hours=retention, enforce_retention=False)
        assert res.dry_run
        assert sorted(p for p in self.path.rglob("*") if p.is_file()) == before

    @rule(retention=st.sampled_from([0.0, 0.0, 1.0, None]))
    def cleanup_log(self, retention: float | None) -> None:
        res = self.t.cleanup_log(retention_hours=retention, dry_run=False)
        log = self.path / "_delta_log"
        for name in res.files:
            assert not (log / name).exists()
        # the table still opens from the log that is left and holds the same rows
        assert table_rows(Table.open(str(self.path))) == self.rows
        self.check_savepoints_restore_on_copy()

    @rule(name=st.sampled_from(NAMES))
    def restore_savepoint(self, name: str) -> None:
        if name not in self.saved:
            with pytest.raises(SavepointNotFoundError):
                self.t.restore(savepoint=name)
            return
        first = self.t.restore(savepoint=name)
        event(f"restore_savepoint committed: {first.committed}")
        assert first.missing_files == []
        assert first.version is not None
        assert table_rows(self.t) == self.saved[name]
        self.rows = list(self.saved[name])
        second = self.t.restore(savepoint=name)
        assert (second.committed, second.version) == (False, first.version)
        assert second.files_to_add == second.files_to_remove == []

    @rule(back=st.integers(1, 8))
    def restore_version(self, back: int) -> None:
        """Time travel restore: exact rows, or a clean refusal when vacuum took files it needs."""
        latest = self.t.latest_version()
        version = latest - back
        if version < 0:
            return
        try:
            target = self.t.snapshot(version)
        except VersionNotFoundError:
            event("restore_version: log cleaned below the version")
            with pytest.raises(VersionNotFoundError):
                self.t.restore(version=version)
            return
        live = set(self.t.snapshot().file_paths())
        gone = self._missing([p for p in target.file_paths() if p not in live])
        if gone:
            event("restore_version: refused, files vacuumed")
            with pytest.raises(RestoreFilesMissingError) as info:
                self.t.restore(version=version)
            assert sorted(info.value.missing) == sorted(gone)
            assert self.t.latest_version() == latest  # the table is unchanged
            return
        event("restore_version: restorable")
        want = self.version_rows[max(v for v in self.version_rows if v <= version)]
        res = self.t.restore(version=version)
        assert res.target_version == version
        assert table_rows(self.t) == want
        self.rows = list(want)

    # ------------------------------------------------------------------ invariants
    @invariant()
    def rows_match_model(self) -> None:
        self.steps += 1
        assert table_rows(self.t) == self.rows
        # every data change records its version; the commits of vacuum (START / END) change no rows
        self.version_rows[self.t.latest_version()] = list(self.rows)

    @invariant()
    def check_live_and_savepoint_files_exist(self) -> None:
        assert self._missing(self.t.snapshot().file_paths()) == []
        for sp in self.t.savepoints():
            manifest = self.path / "_savepoints" / sp.manifest
            assert manifest.is_file(), f"manifest of savepoint {sp.name} is gone"
            if sp.manifest not in self.manifest_files:  # manifests are immutable: read each once
                state = read_manifest(self.t.storage, sp)
                self.manifest_files[sp.manifest] = state.live_base_add_keys() + state.tail_add_keys()
                assert len(self.manifest_files[sp.manifest]) == sp.num_files
            gone = self._missing(self.manifest_files[sp.manifest])
            assert gone == [], f"savepoint {sp.name} lost files: {gone}"

    def check_savepoint_plans(self) -> None:
        """The engine's own restore plan of every savepoint finds no missing file (dry run)."""
        for sp in self.t.savepoints():
            plan = self.t.restore(savepoint=sp.name, dry_run=True)
            assert plan.missing_files == [], f"savepoint {sp.name} lost files: {plan.missing_files}"

    @invariant()
    def savepoints_match_model(self) -> None:
        assert sorted(s.name for s in self.t.savepoints()) == sorted(self.saved)


# TXNLOG_PROPERTY_EXAMPLES=500 (and TXNLOG_PROPERTY_STEPS) explore further, e.g. in a nightly job
MaintenanceMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("TXNLOG_PROPERTY_EXAMPLES", "40")),
    stateful_step_count=int(os.environ.get("TXNLOG_PROPERTY_STEPS", "30")),
    deadline=None,
    derandomize=os.environ.get("TXNLOG_PROPERTY_RANDOM") is None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestMaintenance = MaintenanceMachine.TestCase
