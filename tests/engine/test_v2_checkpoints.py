"""V2 checkpoints (engine.checkpoint_v2): the Spark-written reference tables (a JSON and a parquet
UUID-named checkpoint, each with two sidecars), a JSON checkpoint holding its file actions inline,
a missing sidecar, and writing to such a table (our checkpoints stay classic single files, which the
protocol allows on v2 tables and forbids as multi-part).

Expected rows: the tables hold range(10) (commit 2: numOutputRows 10, ids 0..9), as
tests/compat/test_golden.py checks; here the same rows must come back through each path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import LogCorruptedError, Table

GOLDEN = Path(__file__).parents[1] / "compat" / "golden"


def _copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(GOLDEN / name, root, ignore=shutil.ignore_patterns("*.crc"))
    return root


def _ids(t: Table) -> list[int]:
    return sorted(t.snapshot().to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("kind", ["json", "parquet"])
def test_read_from_the_v2_checkpoint_alone(tmp_path: Path, kind: str) -> None:
    root = _copy(tmp_path, f"v2-checkpoint-{kind}")
    for v in (0, 1, 2):  # only the checkpoint can rebuild version 2 now
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    snap = Table.open(str(root)).snapshot()
    assert (snap.version, snap.checkpoint_version, snap.num_files) == (2, 2, 4)
    assert _ids(Table.open(str(root))) == list(range(10))
    assert snap.metadata.configuration["delta.checkpointPolicy"] == "v2"


def test_json_checkpoint_with_inline_file_actions(tmp_path: Path) -> None:
    """Rewrite the JSON checkpoint with its sidecars' rows inline (what a writer may do for a small table)."""
    root = _copy(tmp_path, "v2-checkpoint-json")
    log = root / "_delta_log"
    (main,) = log.glob("*.checkpoint.*.json")
    lines = [json.loads(x) for x in main.read_text().splitlines()]
    inline = []
    for sidecar in (log / "_sidecars").glob("*.parquet"):
        for row in pq.read_table(sidecar).to_pylist():
            inline += [{k: v} for k, v in row.items() if v is not None and k in ("add", "remove")]
        sidecar.unlink()
    kept = [x for x in lines if "sidecar" not in x]
    main.write_text("\n".join(json.dumps(x, default=str) for x in [*kept, *inline]) + "\n")
    for v in (0, 1, 2):
        (log / f"{v:020d}.json").unlink()
    assert _ids(Table.open(str(root))) == list(range(10))


def test_a_missing_sidecar_is_a_clear_error(tmp_path: Path) -> None:
    root = _copy(tmp_path, "v2-checkpoint-parquet")
    log = root / "_delta_log"
    next((log / "_sidecars").glob("*.parquet")).unlink()
    assert _ids(Table.open(str(root))) == list(range(10))  # the commits are still there: replayed
    for v in (0, 1, 2):
        (log / f"{v:020d}.json").unlink()
    with pytest.raises(LogCorruptedError, match="_sidecars"):
        Table.open(str(root)).snapshot()


def test_write_and_checkpoint_a_v2_table(tmp_path: Path) -> None:
    root = _copy(tmp_path, "v2-checkpoint-parquet")
    t = Table.open(str(root))
    t.checkpoint_part_size = 2  # would be multi-part on another table
    t.write(pa.table({"id": [10, 11]}))
    t.checkpoint()
    log = root / "_delta_log"
    assert (log / f"{3:020d}.checkpoint.parquet").exists()
    assert not list(log.glob(f"{3:020d}.checkpoint.0*.parquet"))
    fresh = Table.open(str(root))
    assert fresh.snapshot().checkpoint_version == 3
    assert _ids(fresh) == list(range(12))


def test_log_cleanup_keeps_named_sidecars_and_reclaims_the_rest(tmp_path: Path) -> None:
    root = _copy(tmp_path, "v2-checkpoint-parquet")  # files dated 2024: all past the retention
    sidecars = {p.name for p in (root / "_delta_log" / "_sidecars").glob("*.parquet")}
    t = Table.open(str(root))
    kept = t.cleanup_log(retention_hours=0)  # the v2 checkpoint at 2 stays: its sidecars too
    assert kept.checkpoint_version == 2 and kept.sidecar_files == []
    assert {p.name for p in (root / "_delta_log" / "_sidecars").glob("*.parquet")} == sidecars
    t.write(pa.table({"id": [10]}))
    t.checkpoint()  # classic, at 3: the v2 checkpoint can go, and its sidecars with it
    plan = t.cleanup_log(retention_hours=0, dry_run=True)
    assert set(plan.sidecar_files) == sidecars and (root / "_delta_log" / "_sidecars").exists()
    done = t.cleanup_log(retention_hours=0)
    assert set(done.sidecar_files) == sidecars
    assert not list((root / "_delta_log" / "_sidecars").glob("*.parquet"))
    assert _ids(Table.open(str(root))) == [*range(10), 10]
