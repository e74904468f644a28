"""Savepoints and restore next to delta-rs: it reads our tables, and what its maintenance can break."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import RestoreFilesMissingError, Table
from tests.conftest import SCHEMA, rows

pytestmark = pytest.mark.compat


def _scenario(path: Path, **props: str) -> tuple[Table, list[int]]:
    t = Table.create(str(path), schema=SCHEMA, partition_by=["part"], properties=props or None)
    t.write(rows([1, 2], "a"))
    t.write(rows([3], "b"))
    t.write(rows([4], "a"))
    v3 = sorted(t.snapshot().to_arrow().column("id").to_pylist())
    t.create_savepoint("before")
    t.write(rows([100], "x"), mode="overwrite")
    with t.transaction("DELETE") as txn:
        for f in txn.read_files("part = 'x'"):
            txn.remove(f)
        txn.commit()
    for i in range(6):
        t.write(rows([200 + i], "y"))
    return t, v3


def _ids(dt: DeltaTable) -> list[int]:
    return sorted(dt.to_pyarrow_table().column("id").to_pylist())


def test_restore_after_our_maintenance_read_by_deltars(tmp_path: Path) -> None:
    t, v3 = _scenario(tmp_path / "t")
    t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    t.cleanup_log(retention_hours=0, dry_run=False)
    result = t.restore(savepoint="before")
    dt = DeltaTable(str(tmp_path / "t"))
    assert dt.version() == result.version
    assert _ids(dt) == v3
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == v3
    assert t.restore(savepoint="before").committed is False


def test_deltars_reads_tables_with_savepoints_and_its_vacuum_spares_them(tmp_path: Path) -> None:
    t, _ = _scenario(tmp_path / "t")
    names_before = sorted(p.name for p in (tmp_path / "t" / "_savepoints").iterdir())
    dt = DeltaTable(str(tmp_path / "t"))
    assert _ids(dt) == sorted(t.snapshot().to_arrow().column("id").to_pylist())
    dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert sorted(p.name for p in (tmp_path / "t" / "_savepoints").iterdir()) == names_before
    assert len(names_before) == 2  # record + manifest


def test_deltars_maintenance_behind_our_back(tmp_path: Path) -> None:
    """delta-rs knows nothing of savepoints: its vacuum deletes the savepoint's tombstoned files.

    Our restore must then fail before committing, naming exactly those files; its log cleanup alone is
    harmless because the savepoint's manifest holds the whole file list.
    """
    path = tmp_path / "t"
    t, _ = _scenario(path, **{"delta.logRetentionDuration": "interval 0 days"})
    t.checkpoint()
    DeltaTable(str(path)).cleanup_metadata()
    assert not (path / "_delta_log" / f"{3:020d}.json").exists()
    plan = t.restore(savepoint="before", dry_run=True)
    assert plan.missing_files == []  # log cleanup alone broke nothing
    DeltaTable(str(path)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    version = t.latest_version()
    overwritten = {f.path for f in Table.open(str(path)).snapshot().tombstones()}
    with pytest.raises(RestoreFilesMissingError) as err:
        t.restore(savepoint="before")
    assert set(err.value.missing) == {p for p in overwritten if p.startswith(("part=a", "part=b"))}
    assert err.value.missing and t.latest_version() == version
