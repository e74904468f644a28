"""Maintenance on a table with deletion vectors (the Spark-written reference table
dv-partitioned-with-checkpoint: 50 rows, then 15 DELETEs of col1 = 2n, each giving a file a new DV).

Each DELETE re-adds the same data file with a new DV and removes its old (path, DV) key, so the
tombstones name live paths and the replaced DV files are referenced only by tombstones. Expected
rows are Delta Kernel's (see tests/compat/test_golden.py): col1 in 0..49 minus the even ones below
2 * (number of DELETEs so far)."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.features.deletion_vectors import DeletionVector

GOLDEN = Path(__file__).parents[2] / "compat" / "golden" / "dv-partitioned-with-checkpoint"
OLD = time.time() - 30 * 86400


def _expected(deletes: int) -> list[int]:
    return [x for x in range(50) if not (x % 2 == 0 and x < 2 * deletes)]


def _col1(t: Table, version: int | None = None) -> list[int]:
    return sorted(t.snapshot(version=version).to_arrow(columns=["col1"]).column("col1").to_pylist())


def _dv_files(t: Table, version: int | None = None) -> set[str]:
    out = set()
    for f in t.snapshot(version=version).files():
        if f.deletion_vector:
            path = DeletionVector.from_wire(f.deletion_vector).relative_path()
            assert path is not None
            out.add(path)
    return out


@pytest.fixture
def dv_table(tmp_path: Path) -> Table:
    """A copy of the reference table whose files are all 30 days old, plus an orphan DV file."""
    root = tmp_path / "t"
    shutil.copytree(GOLDEN, root, ignore=shutil.ignore_patterns("*.crc"))
    (root / f"deletion_vector_{uuid.uuid4()}.bin").write_bytes(b"\x01orphan of a failed DELETE")
    for dirpath, _, names in os.walk(root):
        for n in names:
            os.utime(Path(dirpath) / n, (OLD, OLD))
    return Table.open(str(root))


def test_vacuum_keeps_every_dv_file_a_live_file_needs(dv_table: Table) -> None:
    plan = dv_table.vacuum(dry_run=True)
    live_dvs = _dv_files(dv_table)
    assert len(live_dvs) == 2  # the log: 2 of the 15 live files have a DV, each in its own file
    assert not live_dvs & set(plan.files)
    assert not {f.path for f in dv_table.snapshot().files()} & set(plan.files)
    on_disk = {n for n in os.listdir(dv_table.uri) if n.startswith("deletion_vector_")}
    # the other DV files are named only by tombstones past the retention (DELETEs of 2023), as Delta
    assert {f for f in plan.files if f.startswith("deletion_vector_")} == on_disk - live_dvs


def test_vacuum_keeps_the_dvs_of_tombstones_in_retention(dv_table: Table) -> None:
    live_dvs = _dv_files(dv_table)
    dv_table.restore(version=3)  # the files with DVs now are tombstones of today
    assert live_dvs and live_dvs.isdisjoint(_dv_files(dv_table))
    plan = dv_table.vacuum(dry_run=True)
    assert not (live_dvs | _dv_files(dv_table)) & set(plan.files)


def test_vacuum_reclaims_replaced_dvs_and_rows_stay(dv_table: Table) -> None:
    before = set(os.listdir(dv_table.uri))
    result = dv_table.vacuum(dry_run=False)
    assert result.deleted == len(result.files) > 1
    # replaced DVs, the orphan, and the data files whole-file DELETEs removed (expired tombstones)
    dropped = {Path(f).name for f in result.files}
    assert {n for n in before if n.startswith("deletion_vector_")} - dropped == _dv_files(dv_table)
    assert not dropped & {Path(f.path).name for f in dv_table.snapshot().files()}
    after = set(os.listdir(dv_table.uri))
    assert _dv_files(dv_table) <= after and before - after == {f for f in result.files if "/" not in f}
    assert _col1(dv_table) == _expected(15)
    assert _col1(Table.open(dv_table.uri)) == _expected(15)


def test_savepoint_keeps_its_dv_files_through_vacuum_and_restore(dv_table: Table) -> None:
    dv_table.create_savepoint("before-cleanup", version=5)
    dv_table.checkpoint()
    dv_table.vacuum(dry_run=False)
    assert _dv_files(dv_table, 5) <= set(os.listdir(dv_table.uri))
    result = dv_table.restore(savepoint="before-cleanup")
    assert result.version == dv_table.latest_version() == 18  # after VACUUM START / END
    assert _col1(dv_table) == _expected(5)


def test_restore_brings_back_the_older_dvs(dv_table: Table) -> None:
    dv_table.restore(version=3)
    assert _col1(dv_table) == _expected(3)
    assert _dv_files(dv_table) == _dv_files(dv_table, 3)


def test_checkpoint_carries_dvs(dv_table: Table, tmp_path: Path) -> None:
    for part_size in (1_000_000, 3):  # one file, then multi-part
        dv_table.checkpoint_part_size = part_size
        dv_table.checkpoint()
        fresh = Table.open(dv_table.uri)
        snap = fresh.snapshot()
        assert snap.checkpoint_version == 15
        assert sum(1 for f in snap.files() if f.deletion_vector) == 2
        assert _col1(fresh) == _expected(15)


def test_append_to_a_dv_table(dv_table: Table) -> None:
    schema = dv_table.snapshot().schema
    dv_table.write(pa.table({"part": [3], "col1": [100], "col2": ["new"]}, schema=schema))
    assert _col1(dv_table) == sorted([*_expected(15), 100])


def test_health_reports_dvs_and_never_counts_live_files_as_reclaimable(dv_table: Table) -> None:
    h = dv_table.health()
    assert (h.files_with_deletion_vectors, h.deleted_rows) == (2, 2)  # 26 and 28 (see the Spark test)
    assert h.deleted_row_share == round(2 / 37, 6)  # 35 rows left of the live files' 37
    live = {f.path for f in dv_table.snapshot().files()}
    expired_not_live = [r for r in dv_table.snapshot().tombstones() if r.path not in live]
    assert h.reclaimable_bytes == sum(r.size or 0 for r in expired_not_live)
