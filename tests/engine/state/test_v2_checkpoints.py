"""V2 checkpoints (engine.log.checkpoint_v2): the Spark-written reference tables (a JSON and a parquet
UUID-named checkpoint, each with two sidecars), a JSON checkpoint holding its file actions inline,
a missing sidecar, and writing to such a table (our checkpoints of it are UUID-named V2 checkpoints
with sidecars, never multi-part, which the feature forbids; a big one streams its file actions into
several sidecars, and one that fails leaves nothing behind).

Expected rows: the tables hold range(10) (commit 2: numOutputRows 10, ids 0..9), as
tests/compat/test_golden.py checks; here the same rows must come back through each path."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import LogCorruptedError, Table
from airflow_txnlog.engine.state import checkpoint, checkpoint_parts

GOLDEN = Path(__file__).parents[2] / "compat" / "golden"


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
    """Our checkpoint of a v2 table is a UUID-named V2 checkpoint: non-file actions, one
    checkpointMetadata and a sidecar action in the main file, the file actions in the sidecar, and
    `_last_checkpoint` pointing at it. Read back with every commit deleted, so only it can answer."""
    root = _copy(tmp_path, "v2-checkpoint-parquet")
    t = Table.open(str(root))
    t.checkpoint_part_size = 2  # would be multi-part on another table
    t.write(pa.table({"id": [10, 11]}))
    t.checkpoint()
    log = root / "_delta_log"
    assert not (log / f"{3:020d}.checkpoint.parquet").exists()
    assert not list(log.glob(f"{3:020d}.checkpoint.0000000001.*.parquet"))  # no multi-part set
    hint = json.loads((log / "_last_checkpoint").read_text())
    main = hint["v2Checkpoint"]["path"]
    assert (
        main.startswith(f"{3:020d}.checkpoint.") and main.endswith(".parquet") and len(main.split(".")) == 4
    )
    rows = pq.read_table(log / main).to_pylist()
    assert [r["checkpointMetadata"] for r in rows if r["checkpointMetadata"]] == [
        {"version": 3, "tags": None}
    ]
    (sidecar,) = [r["sidecar"] for r in rows if r["sidecar"]]
    assert hint["v2Checkpoint"]["sidecarFiles"] == [
        {k: sidecar[k] for k in ("path", "sizeInBytes", "modificationTime")}
    ]
    assert (log / "_sidecars" / sidecar["path"]).stat().st_size == sidecar["sizeInBytes"]
    assert not any(r.get("add") or r.get("remove") for r in rows)  # file actions only in the sidecar
    side = pq.read_table(log / "_sidecars" / sidecar["path"])
    assert side.column_names == ["add", "remove"]
    assert (
        sum(1 for a in side.column("add").to_pylist() if a)
        == hint["numOfAddFiles"]
        == len(t.snapshot().files())
    )
    assert {"protocol", "metaData"} <= {k for r in rows for k, v in r.items() if v}
    for commit in log.glob("*.json"):
        commit.unlink()
    fresh = Table.open(str(root))
    assert fresh.snapshot().checkpoint_version == 3
    assert _ids(fresh) == list(range(12))


def test_a_sidecar_without_its_main_file_is_no_checkpoint(tmp_path: Path) -> None:
    """A crash between the sidecar and the main file: readers never see the sidecar (no main file
    names it), and log cleanup reclaims it past the retention."""
    root = _copy(tmp_path, "v2-checkpoint-parquet")
    t = Table.open(str(root))
    t.write(pa.table({"id": [10]}))
    t.checkpoint()
    log = root / "_delta_log"
    (main,) = log.glob(f"{3:020d}.checkpoint.*.parquet")
    main.unlink()  # as if the writer died before writing it
    (log / "_last_checkpoint").unlink()
    assert _ids(Table.open(str(root))) == [*range(10), 10]
    assert Table.open(str(root)).snapshot().checkpoint_version == 2
    t.checkpoint()  # a second try writes a new pair; the orphan is not named by it
    (orphan,) = {p.name for p in (log / "_sidecars").glob("*.parquet")} - _named_sidecars(log)
    # (only the orphan is asserted on: Spark's sidecars, unnamed once its checkpoint at 2 is planned
    # away, are listed too when this checkout's files are more than a day old)

    def listed(retention_hours: float, age_hours: float) -> bool:
        then = time.time() - age_hours * 3600
        os.utime(log / "_sidecars" / orphan, (then, then))
        return orphan in t.cleanup_log(retention_hours=retention_hours, dry_run=True).sidecar_files

    # younger than a day: it might be a checkpoint's under way, so even a 0-hour retention keeps it
    assert not listed(0, 0) and not listed(0, 23) and listed(0, 25)
    assert not listed(48, 36) and listed(48, 60)  # (older than the retention and than a day)


def _named_sidecars(log: Path) -> set[str]:
    """The sidecars the main files of the V2 checkpoints in `log` name."""
    return {
        r["sidecar"]["path"]
        for main in log.glob("*.checkpoint.*.parquet")
        for r in pq.read_table(main).to_pylist()
        if r.get("sidecar")
    }


def test_log_cleanup_keeps_named_sidecars_and_reclaims_the_rest(tmp_path: Path) -> None:
    root = _copy(tmp_path, "v2-checkpoint-parquet")  # commits dated 2024: all past the retention
    sidecars = {p.name for p in (root / "_delta_log" / "_sidecars").glob("*.parquet")}
    old = time.time() - 2 * 86_400  # (and Spark's sidecars written two days ago: past the day's grace)
    for name in sidecars:
        os.utime(root / "_delta_log" / "_sidecars" / name, (old, old))
    t = Table.open(str(root))
    kept = t.cleanup_log(retention_hours=0, dry_run=False)  # the v2 checkpoint at 2 stays: its sidecars too
    assert kept.checkpoint_version == 2 and kept.sidecar_files == []
    assert {p.name for p in (root / "_delta_log" / "_sidecars").glob("*.parquet")} == sidecars
    t.write(pa.table({"id": [10]}))
    t.checkpoint()  # ours, at 3: the v2 checkpoint at 2 can go, and its sidecars with it
    ours = {p.name for p in (root / "_delta_log" / "_sidecars").glob("*.parquet")} - sidecars
    plan = t.cleanup_log(retention_hours=0, dry_run=True)
    assert set(plan.sidecar_files) == sidecars and (root / "_delta_log" / "_sidecars").exists()
    done = t.cleanup_log(retention_hours=0, dry_run=False)
    assert set(done.sidecar_files) == sidecars and len(ours) == 1
    assert {p.name for p in (root / "_delta_log" / "_sidecars").glob("*.parquet")} == ours
    assert _ids(Table.open(str(root))) == [*range(10), 10]


def test_a_table_we_create_with_the_v2_policy_checkpoints_itself_in_v2(tmp_path: Path) -> None:
    props = {
        "delta.checkpointPolicy": "v2",
        "delta.checkpointInterval": "2",
        "delta.columnMapping.mode": "id",
    }
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("id", pa.int64())]), properties=props)
    assert "v2Checkpoint" in (t.snapshot().protocol.reader_features or ())
    for i in range(4):
        t.write(pa.table({"id": [i]}))
    log = tmp_path / "t" / "_delta_log"
    mains = sorted(p.name for p in log.glob("*.checkpoint.*.parquet"))
    assert [int(n.split(".")[0]) for n in mains] == [2, 4]  # every 2 commits, UUID-named
    assert not list(log.glob("*.checkpoint.parquet"))
    assert len(list((log / "_sidecars").glob("*.parquet"))) == 2
    assert Table.open(str(tmp_path / "t")).snapshot().checkpoint_version == 4
    assert _ids(Table.open(str(tmp_path / "t"))) == [0, 1, 2, 3]


def _streamed_v2_table(root: Path) -> Table:
    """A v2-policy table: 10 files checkpointed, 3 of them (ids 7-9) removed (tombstones), 4 more
    added; 11 live files, ids 0-6 and 10-13."""
    props = {"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "1000"}
    t = Table.create(str(root), schema=pa.schema([("id", pa.int64())]), properties=props)
    for i in range(10):
        t.write(pa.table({"id": [i]}))
    t.checkpoint()  # the next checkpoint reads its base rows from this one's sidecars
    with t.transaction(operation="DELETE") as txn:
        for f in t.snapshot().files(filter="id >= 7"):
            txn.remove(f)
        txn.commit()
    for i in range(10, 14):
        t.write(pa.table({"id": [i]}))
    return Table.open(str(root))  # (its live files: the first checkpoint's rows, then the tail's)


LIVE_IDS = [*range(7), *range(10, 14)]


def _small_sidecars(monkeypatch: pytest.MonkeyPatch) -> None:
    """Base rows read 3 at a time, dealt 3 at a time to one sidecar per 4 live files, row groups of
    4 rows (the first of 2): a small table takes every path of a big one."""
    monkeypatch.setattr(checkpoint, "BATCH_ROWS", 3)
    monkeypatch.setattr(checkpoint_parts, "SIDECAR_ROWS", 4)
    monkeypatch.setattr(checkpoint_parts, "DEAL_ROWS", 3)
    monkeypatch.setattr(checkpoint_parts, "ROW_GROUP_ROWS", 4)


def test_a_big_v2_checkpoint_is_streamed_into_several_sidecars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """11 live files and 3 tombstones dealt to ceil(11 / 4) = 3 sidecars: each holds rows, and
    together they hold every live file once, as it is, and every tombstone with its timestamp."""
    _small_sidecars(monkeypatch)
    root = tmp_path / "t"
    t = _streamed_v2_table(root)
    log = root / "_delta_log"
    delete = [json.loads(x) for x in (log / f"{11:020d}.json").read_text().splitlines()]
    removed = {a["remove"]["path"]: a["remove"]["deletionTimestamp"] for a in delete if "remove" in a}
    t.checkpoint()
    hint = json.loads((log / "_last_checkpoint").read_text())
    entries = hint["v2Checkpoint"]["sidecarFiles"]
    assert len(entries) == 3 and hint["numOfAddFiles"] == 11
    adds, removes = [], []
    for entry in entries:
        side = pq.read_table(log / "_sidecars" / entry["path"])
        assert side.column_names == ["add", "remove"] and side.num_rows > 0
        assert (log / "_sidecars" / entry["path"]).stat().st_size == entry["sizeInBytes"]
        adds += [(a["path"], a["size"], json.loads(a["stats"])) for a in side.column("add").to_pylist() if a]
        removes += [(r["path"], r["deletionTimestamp"]) for r in side.column("remove").to_pylist() if r]
    live = [(f.path, f.size, json.loads(f.stats or "null")) for f in t.snapshot().files()]
    assert sorted(adds, key=repr) == sorted(live, key=repr) and len(live) == 11
    assert sorted(removes) == sorted(removed.items()) and len(removed) == 3
    main = pq.read_table(log / hint["v2Checkpoint"]["path"]).to_pylist()
    named = [
        {k: r["sidecar"][k] for k in ("path", "sizeInBytes", "modificationTime")}
        for r in main
        if r["sidecar"]
    ]
    assert named == entries and not any(r.get("add") or r.get("remove") for r in main)
    assert hint["size"] == len(main) + 14  # main rows (small actions, metadata, sidecars) + file rows
    for commit in log.glob("*.json"):
        commit.unlink()
    fresh = Table.open(str(root))
    assert fresh.snapshot().checkpoint_version == t.latest_version()
    assert _ids(fresh) == LIVE_IDS


def _fail_converting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The third batch of live base rows fails to convert (the two before it were dealt to two
    sidecars: results are consumed in order, so theirs were dealt before this error is raised)."""
    real, calls = checkpoint._base_add_rows, []

    def failing(plan: Any, raw: pa.StructArray, loaded: Any) -> pa.StructArray:
        if len(raw):  # (a batch whose rows are all removed deals nothing)
            calls.append(1)
            if len(calls) == 3:
                raise OSError("disk full")
        return real(plan, raw, loaded)

    monkeypatch.setattr(checkpoint, "_base_add_rows", failing)
    return calls


def _fail_writing(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The second row group a sidecar's writer thread writes fails (the first reached its file)."""
    real, calls, lock = pq.ParquetWriter.write_table, [], threading.Lock()

    def failing(self: pq.ParquetWriter, *args: Any, **kwargs: Any) -> None:
        with lock:
            calls.append(1)
            n = len(calls)
        if n == 2:
            raise OSError("disk full")
        real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)
    return calls


def test_the_sidecars_end_their_last_row_groups_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every sidecar is told the rows ended before any is waited for: their writers close at the
    same time (each waits at a barrier for the other two; told one after another, the first would
    wait in vain)."""
    _small_sidecars(monkeypatch)
    t = _streamed_v2_table(tmp_path / "t")
    together = threading.Barrier(3, timeout=10)
    real = pq.ParquetWriter.close

    def closing(self: pq.ParquetWriter) -> None:
        if isinstance(self.where, str) and "/_delta_log/.tmp/" in self.where:
            together.wait()  # (a sidecar's writer: it streams into a temporary file of the log)
        real(self)

    monkeypatch.setattr(pq.ParquetWriter, "close", closing)
    t.checkpoint()
    hint = json.loads((tmp_path / "t" / "_delta_log" / "_last_checkpoint").read_text())
    assert len(hint["v2Checkpoint"]["sidecarFiles"]) == 3 and together.n_waiting == 0


@pytest.mark.parametrize("fail", [_fail_converting, _fail_writing], ids=["converting", "writing"])
def test_a_v2_checkpoint_that_fails_midway_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: Callable[[pytest.MonkeyPatch], list[int]]
) -> None:
    """A failure after two sidecars got rows, in a converter or in a sidecar's writer thread: no
    main file, no sidecar, no temporary file, the previous `_last_checkpoint` kept; the table reads
    as before."""
    _small_sidecars(monkeypatch)
    root = tmp_path / "t"
    t = _streamed_v2_table(root)
    log = root / "_delta_log"
    before = {p.relative_to(log) for p in log.rglob("*") if p.is_file()}
    hint = (log / "_last_checkpoint").read_text()
    dealt: list[int] = []
    real_add = checkpoint_parts.SidecarWriters.add

    def counting(self: checkpoint_parts.SidecarWriters, table: pa.Table) -> None:
        real_add(self, table)
        dealt[:] = [n for n in self._rows if n]  # (the sidecars holding rows so far)

    monkeypatch.setattr(checkpoint_parts.SidecarWriters, "add", counting)
    calls = fail(monkeypatch)
    with pytest.raises(OSError, match="disk full"):
        t.checkpoint()
    assert len(calls) >= 2 and len(dealt) >= 2
    assert {p.relative_to(log) for p in log.rglob("*") if p.is_file()} == before
    assert (log / "_last_checkpoint").read_text() == hint
    assert _ids(Table.open(str(root))) == LIVE_IDS


def test_a_v2_checkpoint_of_a_table_without_files_has_no_sidecar(tmp_path: Path) -> None:
    props = {"delta.checkpointPolicy": "v2"}
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("id", pa.int64())]), properties=props)
    t.checkpoint()
    log = tmp_path / "t" / "_delta_log"
    hint = json.loads((log / "_last_checkpoint").read_text())
    assert hint["v2Checkpoint"]["sidecarFiles"] == [] and hint["numOfAddFiles"] == 0
    assert not list(log.rglob("_sidecars/*")) and not list(log.rglob(".tmp/*"))
    assert Table.open(str(tmp_path / "t")).snapshot().checkpoint_version == 0


def test_an_object_store_gets_the_sidecars_side_by_side_then_the_main_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On an object store each sidecar is one put, the three issued together (each put waits at a
    barrier for the other two: one after another, the first would time out), then the main file,
    then `_last_checkpoint`; a put that fails leaves no main file and no hint."""
    _small_sidecars(monkeypatch)
    t = _streamed_v2_table(Path("memory://v2-puts"))  # type: ignore[arg-type]
    puts: list[str] = []
    together = threading.Barrier(3, timeout=10)
    real = t.storage.write

    def recording(key: str, data: bytes) -> None:
        if "/_sidecars/" in key:
            together.wait()
        puts.append(key.rsplit("/", 1)[1])
        real(key, data)

    monkeypatch.setattr(t.storage, "write", recording)
    t.checkpoint()
    assert len(puts) == 5 and all(p.endswith(".parquet") and ".checkpoint." not in p for p in puts[:3])
    assert ".checkpoint." in puts[3] and puts[4] == "_last_checkpoint"
    assert _ids(Table.open("memory://v2-puts")) == LIVE_IDS

    failing = threading.Barrier(3, timeout=10)

    def one_fails(key: str, data: bytes) -> None:
        if "/_sidecars/" in key and failing.wait() == 0:
            raise OSError("put refused")
        puts.append(key.rsplit("/", 1)[1])
        real(key, data)

    monkeypatch.setattr(t.storage, "write", one_fails)
    t.write(pa.table({"id": [14]}))
    puts.clear()
    with pytest.raises(OSError, match="put refused"):
        t.checkpoint()
    assert len(puts) == 2 and not any(".checkpoint." in p or p == "_last_checkpoint" for p in puts)
    fresh = Table.open("memory://v2-puts").snapshot()
    assert (fresh.version, fresh.checkpoint_version, fresh.num_files) == (16, 15, 12)
