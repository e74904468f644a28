# ruff: noqa: PLC0415
"""One measurement in a fresh interpreter: ``python -m benchmarks.workers '<json spec>'``.

:class:`benchmarks.runner.Runner` starts one process per measurement so that no cache of either engine (object
store handles, parsed logs, memoised snapshots) can survive from one measurement to the next, and so that
a crash or a hang of one engine cannot take the harness down. Imports happen before the clock starts;
only the operation itself is timed, with :func:`time.perf_counter`.

The worker prints one JSON object on its last stdout line: ``{"ok": true, ...}`` with the timings, or
``{"ok": false, "error": ..., "traceback": ...}``.

Spec keys: ``task`` (``list`` | ``commit`` | ``checkpoint``), ``engine`` (``deltars`` | ``ours``), ``path``,
``variant`` and task-specific counts; ``profile`` (optional path) wraps the timed region in cProfile
and dumps the stats there.
"""

from __future__ import annotations

import cProfile
import json
import shutil
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

SMALL_STATS = (
    '{"numRecords":2,"minValues":{"id":1,"value":1.5,"name":"a"},'
    '"maxValues":{"id":2,"value":2.5,"name":"b"},"nullCount":{"id":0,"value":0,"name":0}}'
)


def small_table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "value": pa.array([1.5, 2.5], pa.float64()),
            "name": pa.array(["a", "b"], pa.string()),
            "part": pa.array(["p01", "p01"], pa.string()),
        }
    )


def new_file_path() -> str:
    return f"part=p01/part-00000-{uuid.uuid4()}-c000.snappy.parquet"


class _Profiler:
    def __init__(self, out: str | None) -> None:
        self.out = out
        self.prof = cProfile.Profile() if out else None

    @contextmanager
    def region(self):  # type: ignore[no-untyped-def]
        if self.prof is not None:
            self.prof.enable()
        try:
            yield
        finally:
            if self.prof is not None:
                self.prof.disable()

    def dump(self) -> None:
        if self.prof is not None and self.out:
            self.prof.dump_stats(self.out)


def _timed(prof: _Profiler, fn: Callable[[], Any]) -> tuple[float, Any]:
    with prof.region():
        t0 = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - t0
    return elapsed, result


# --------------------------------------------------------------------------------------------- P1 / P2
def _lister(engine: str, variant: str) -> Callable[[str], int]:
    if engine == "deltars":
        from deltalake import DeltaTable

        if variant == "paths":
            return lambda p: len(DeltaTable(p).file_uris())
        return lambda p: DeltaTable(p).get_add_actions(flatten=True).num_rows
    from airflow_txnlog.engine import Table

    if variant == "paths":
        return lambda p: len(Table.open(p).snapshot().file_paths())
    return lambda p: Table.open(p).snapshot().add_actions().num_rows


def task_list(spec: dict[str, Any], prof: _Profiler) -> dict[str, Any]:
    """Open the table and list its live files (``paths``: path strings; ``full``: full add metadata).

    With ``warm_path`` (a different, tiny table), the same operation first runs once on that table so
    that one-time costs of a fresh process (lazy imports, runtime start-up) stay out of the measurement.
    """
    path, variant = spec["path"], spec.get("variant", "paths")
    fn = _lister(spec["engine"], variant)
    if spec.get("warm_path"):
        fn(spec["warm_path"])
    seconds, count = _timed(prof, lambda: fn(path))
    return {"seconds": [seconds], "count": count}


# ------------------------------------------------------------------------------------------------- P3
def task_commit(spec: dict[str, Any], prof: _Profiler) -> dict[str, Any]:
    """Open the table (untimed), then ``warmup`` + ``commits`` single-file append commits, each timed.

    ``meta``: a metadata-only commit of one add action (the data file need not exist);
    ``write``: write a 2-row pyarrow table (one parquet file) and commit it.
    """
    path, variant = spec["path"], spec["variant"]
    warmup, commits = spec.get("warmup", 2), spec["commits"]
    samples: list[float] = []
    refresh: list[float] = []
    data = small_table()
    if spec["engine"] == "deltars":
        from deltalake import DeltaTable, write_deltalake
        from deltalake.transaction import AddAction

        dt = DeltaTable(path)
        schema = dt.schema()

        def one() -> None:
            if variant == "meta":
                add = AddAction(
                    path=new_file_path(),
                    size=1234,
                    partition_values={"part": "p01"},
                    modification_time=int(time.time() * 1000),
                    data_change=True,
                    stats=SMALL_STATS,
                )
                dt.create_write_transaction([add], mode="append", schema=schema, partition_by=["part"])
            else:
                write_deltalake(dt, data, mode="append")

        def after() -> float:
            # create_write_transaction does not advance the DeltaTable's own snapshot; without this the
            # next commit would start from a stale version and pay conflict checks against every commit
            # made since. Untimed in the commit sample; reported separately.
            if variant != "meta":
                return 0.0
            t0 = time.perf_counter()
            dt.update_incremental()
            return time.perf_counter() - t0

        version = dt.version
    else:
        from airflow_txnlog.engine import AddFile, Table

        t = Table.open(path)
        t.snapshot()  # load the state before the clock starts, as DeltaTable(path) does

        def one() -> None:
            if variant == "meta":
                add = AddFile(
                    path=new_file_path(),
                    partition_values={"part": "p01"},
                    size=1234,
                    modification_time=int(time.time() * 1000),
                    data_change=True,
                    stats=SMALL_STATS,
                )
                with t.transaction(operation="WRITE", parameters={"mode": "Append"}) as txn:
                    txn.add(add)
                    txn.commit()
            else:
                t.write(data, mode="append")

        def after() -> float:
            return 0.0

        version = t.latest_version

    start_version = version()
    for _ in range(warmup):
        one()
        after()
    for _ in range(commits):
        seconds, _ = _timed(prof, one)
        samples.append(seconds)
        if (r := after()) > 0:
            refresh.append(r)
    end_version = version()
    expected = start_version + warmup + commits
    if end_version != expected:
        raise RuntimeError(f"table went from version {start_version} to {end_version}, expected {expected}")
    result: dict[str, Any] = {"seconds": samples, "count": commits}
    if refresh:
        result["refresh_seconds"] = refresh
    return result


# ------------------------------------------------------------------------------------------- P4, S6
def _status_kb(field: str) -> int | None:
    """A `/proc/self/status` figure in KiB (VmRSS, VmHWM), None where there is none (not Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0: clear_refs 5)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _linked_copy(table: str, scratch: str) -> str:
    """A private copy of a table's log made of hard links (instant, no bytes copied): the engines
    write their checkpoint and `_last_checkpoint` as new files, so the cached table is untouched."""
    root = Path(tempfile.mkdtemp(prefix="cp-", dir=scratch))
    (root / "_delta_log").mkdir()
    for f in (Path(table) / "_delta_log").iterdir():
        if f.is_file():
            (root / "_delta_log" / f.name).hardlink_to(f)
    return str(root)


def _deltars_reads_checkpoint(path: str, version: int) -> dict[str, Any]:
    """Open `path` with delta-rs from the checkpoint of `version` alone (the commits up to it and
    older checkpoints removed first): its version and live file count."""
    from deltalake import DeltaTable

    log = Path(path) / "_delta_log"
    for f in log.iterdir():
        head = f.name.split(".", 1)[0]
        if (head.isdigit() and int(head) < version) or f.name == f"{version:020d}.json":
            f.unlink()
    dt = DeltaTable(path)
    return {"version": dt.version(), "files": len(dt.file_uris())}


def _checkpoint_files(log: Path, version: int) -> tuple[list[str], int]:
    """The files of the checkpoint of `version` just written (a V2 checkpoint's sidecars too, as
    `_last_checkpoint` names them) and their total size in bytes."""
    checkpoints = sorted(p.name for p in log.glob(f"{version:020d}.checkpoint*.parquet"))
    if not checkpoints or not (log / "_last_checkpoint").exists():
        raise RuntimeError(f"no checkpoint / _last_checkpoint for version {version} in {log}")
    v2 = json.loads((log / "_last_checkpoint").read_text()).get("v2Checkpoint")
    if v2 and v2.get("path") in checkpoints:
        checkpoints = [v2["path"], *(f"_sidecars/{s['path']}" for s in v2.get("sidecarFiles", []))]
    return checkpoints, sum((log / c).stat().st_size for c in checkpoints)


def _checkpoint_ops(
    engine: str, full: bool = False
) -> tuple[Callable[[str], Any], Callable[[Any], Callable[[], None]], Callable[[Any], int]]:
    """(open + load the state, the checkpoint call of a loaded table, its version) for an engine.
    With `full`, our load also builds the full file metadata (`add_actions()`: every file's stats
    parsed), as delta-rs's `DeltaTable(p)` always does (its `get_add_actions` after it takes ~0.15 s
    of the ~2.5 s at 1M files)."""
    if engine == "deltars":
        from deltalake import DeltaTable

        return DeltaTable, lambda t: t.create_checkpoint, lambda t: t.version()
    from airflow_txnlog.engine import Table

    def load(p: str) -> Any:
        t = Table.open(p)
        snap = t.snapshot()
        if full:
            snap.add_actions()
        return t

    return load, lambda t: t.checkpoint, lambda t: t.latest_version()


def task_checkpoint(spec: dict[str, Any], prof: _Profiler) -> dict[str, Any]:
    """Open the table and load its state (timed separately), then write a checkpoint (timed), and
    the peak RSS growth during that call: the process's peak RSS is reset just before it
    (`_reset_peak_rss`) and read after it, less the RSS just before it.

    With ``warm_path``, first open + checkpoint a private copy of that tiny table (see task_list).
    With ``scratch`` (S6), the table is a hard-linked private copy of ``path`` made there (removed
    after), and our engine's checkpoint is then opened with delta-rs from that checkpoint alone.
    """
    load, checkpoint, version_of = _checkpoint_ops(spec["engine"], bool(spec.get("full")))
    if spec.get("warm_path"):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "warm"
            shutil.copytree(spec["warm_path"], copy)
            checkpoint(load(str(copy)))()
    path = _linked_copy(spec["path"], spec["scratch"]) if spec.get("scratch") else spec["path"]
    try:
        open_s, t = _timed(_Profiler(None), lambda: load(path))
        peak_before = _status_kb("VmHWM")
        reset = _reset_peak_rss()
        rss_before = _status_kb("VmRSS")
        seconds, _ = _timed(prof, checkpoint(t))
        peak = _status_kb("VmHWM")
        version = version_of(t)
        checkpoints, size = _checkpoint_files(Path(path) / "_delta_log", version)
        result: dict[str, Any] = {
            "seconds": [seconds],
            "open_seconds": open_s,
            "files": checkpoints,
            "bytes": size,
        }
        if reset and peak is not None and rss_before is not None:
            result["rss_growth_kb"] = peak - rss_before
            result["max_rss_kb"] = max(peak, peak_before or 0)
        if spec.get("scratch") and spec["engine"] == "ours":
            result["deltars_reads"] = _deltars_reads_checkpoint(path, version)
        return result
    finally:
        if spec.get("scratch"):
            shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------------- S1..S5 (issue 11)
def _max_rss_kb() -> int:
    """This process's peak RSS in KiB: `VmHWM` where there is one (Linux), else `ru_maxrss`, which
    after a fork + exec also counts the parent's memory at the fork (the harness's, when it is big)."""
    import resource

    return _status_kb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _big_ops(engine: str, spec: dict[str, Any]) -> tuple[Callable[[str], Any], str]:
    """(operation on a table path returning a count, the API it calls) for one S variant."""
    variant = spec["variant"]
    if engine == "deltars":
        from deltalake import DeltaTable

        ops: dict[str, tuple[Callable[[str], Any], str]] = {
            "paths": (lambda p: len(DeltaTable(p).file_uris()), "file_uris()"),
            "meta": (lambda p: DeltaTable(p).get_add_actions(flatten=True).num_rows, "get_add_actions"),
            "vacuum": (lambda p: len(DeltaTable(p).vacuum(dry_run=True, full=True)), "vacuum(full=True)"),
        }
        return ops[variant]
    from airflow_txnlog.engine import Table

    def meta(p: str) -> int:
        snap = Table.open(p).snapshot()
        if hasattr(snap, "add_actions"):  # issue 11's columnar API, when the engine has it
            return snap.add_actions().num_rows  # type: ignore[no-any-return]
        return len(snap.files())

    from airflow_txnlog.engine.state.snapshot import Snapshot

    api = "add_actions()" if hasattr(Snapshot, "add_actions") else "files()"
    ops = {
        "paths": (lambda p: len(Table.open(p).snapshot().file_paths()), "file_paths()"),
        "meta": (meta, api),
        "vacuum": (lambda p: len(Table.open(p).vacuum(dry_run=True).files), "vacuum(dry_run=True)"),
    }
    return ops[variant]


def task_big(spec: dict[str, Any], prof: _Profiler) -> dict[str, Any]:
    """S1/S2/S5: the operation on the big table, timed; S4 (``prune``): our engine's stats-pruned
    ``files(filter)`` on a snapshot loaded untimed, timed on the first call and again on a second.
    Every variant reports the peak RSS of this process (``ru_maxrss``, imports and warm-up included).
    """
    path, engine = spec["path"], spec["engine"]
    if spec["variant"] == "prune":
        from airflow_txnlog.engine import Table

        if spec.get("warm_path"):
            Table.open(spec["warm_path"]).snapshot().files(filter=spec["filter"])
        open_s, snap = _timed(_Profiler(None), lambda: Table.open(path).snapshot())
        if spec.get("preload"):  # S4L: the whole file state loaded first (untimed)
            snap.add_actions()
        seconds, found = _timed(prof, lambda: snap.files(filter=spec["filter"]))
        again, _ = _timed(_Profiler(None), lambda: snap.files(filter=spec["filter"]))
        return {
            "seconds": [seconds],
            "open_seconds": open_s,
            "again_seconds": again,
            "count": len(found),
            "api": "files(filter)",
            "max_rss_kb": _max_rss_kb(),
        }
    fn, api = _big_ops(engine, spec)
    if spec.get("warm_path"):
        fn(spec["warm_path"])
    seconds, count = _timed(prof, lambda: fn(path))
    return {"seconds": [seconds], "count": count, "api": api, "max_rss_kb": _max_rss_kb()}


TASKS = {"list": task_list, "commit": task_commit, "checkpoint": task_checkpoint, "big": task_big}


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    prof = _Profiler(spec.get("profile"))
    try:
        result = {"ok": True, **TASKS[spec["task"]](spec, prof)}
    except BaseException as exc:  # report every failure, including a KeyboardInterrupt or SystemExit
        tb = traceback.extract_tb(exc.__traceback__)
        result = {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}"[:2000],
            "where": [f"{f.filename}:{f.lineno} in {f.name}" for f in tb[-6:]],
            "traceback": traceback.format_exc()[-8000:],
        }
    prof.dump()
    sys.stdout.flush()
    print("\n" + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
