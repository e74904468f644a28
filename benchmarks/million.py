# ruff: noqa: PLC0415
"""The million-file table of issue 11 (rows S1..S7): building it once and measuring it.

The table is what the issue describes: ``BIG_CHECKPOINT_VERSION`` (200) JSON commits of generated
``add`` actions, a checkpoint of version 200 **written by delta-rs** (``DeltaTable.create_checkpoint``),
then ``BIG_TAIL`` (5) more JSON commits; ``--big-files`` live files in total (default 1,000,000).
Building it takes minutes at 1M files, so it is cached under ``--big-cache`` (default
``$TMPDIR/airflow_txnlog-bench-cache``) and reused while its recipe version and size match; a
``<table>.json`` marker next to the table is written last, so an interrupted build is rebuilt.

Stats are chosen so that S4's predicate is selective: file ``k`` (in commit order) holds ids
``[k*100, k*100 + 149]`` (ranges overlap by half), so ``id >= 150000 AND id < 150100`` may match only
files 1499 and 1500, two of a million. Everything else (partition ``part``, value and name stats,
sizes, paths) looks like :mod:`benchmarks.generate`'s tables.

For S5 (vacuum dry run) the data files must exist, or both engines have nothing to list: every live
file is created empty (cheap: about a minute at 1M), plus ``files // 100`` unreferenced "orphan"
files dated 30 days back, which both engines must plan to delete under the default 7-day retention.
delta-rs needs ``full=True`` for that: its default ("lite") mode only considers files named by
``remove`` tombstones and never lists the directory.

S6/S7 (issue 43) write the checkpoint of the latest version of the same table, each measurement on a
private copy of its log made of hard links (the cached table is never modified), and measure the
growth of the process's peak RSS during the checkpoint call.

Rows are measured through :class:`benchmarks.runner.Runner` (fresh process per measurement, warm-up on
a tiny table, engines interleaved) and reported by :mod:`benchmarks.million_report` in their own
section of docs/benchmarks.md; the P report is left alone.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from benchmarks import generate as gen

if TYPE_CHECKING:
    from benchmarks.runner import Runner

RECIPE = 1  # bump when the table layout changes, so cached tables are rebuilt
BIG_CHECKPOINT_VERSION = 200
BIG_TAIL = 5
IDS_PER_FILE = 100
ID_SPAN = 150  # > IDS_PER_FILE: neighbouring files' id ranges overlap
S4_FILTER = "id >= 150000 AND id < 150100"
S4_LOADED_FILTER = "id >= 55000000 AND id < 55000100"  # another range: no result is reused
ORPHAN_AGE_S = 30 * 86400
S_KEYS = (
    *("S1", "S2", "S3", "S4", "S4L", "S5", "S6", "S7", "S6F", "S7F", "S6V", "S7V", "S6VF", "S7VF"),
    *("S1S", "S2S", "S3S", "S4S", "S4SL", "S6S", "S7S"),
)
# the same rows, on the struct table
STRUCT_KEYS = {"S1S": "S1", "S2S": "S2", "S3S": "S3", "S4S": "S4", "S4SL": "S4L", "S6S": "S6", "S7S": "S7"}
START, END = "<!-- million-files:start -->", "<!-- million-files:end -->"
TARGETS = {"S1": 0.5, "S2": 0.5, "S3": 1.0, "S4": 0.05, "S4L": 0.05, "S5": 0.5, "S6": 0.5, "S7": 0.5}
TARGETS.update({"S6F": 0.5, "S7F": 0.5, "S6V": 0.5, "S7V": 0.5, "S6VF": 0.5, "S7VF": 0.5})
V2_PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["v2Checkpoint"],
    "writerFeatures": ["appendOnly", "invariants", "v2Checkpoint"],
}
TARGETS.update({k: TARGETS[v] for k, v in STRUCT_KEYS.items()})


def log(msg: str) -> None:
    print(msg, file=__import__("sys").stderr, flush=True)


# ----------------------------------------------------------------------------------------- building
def commit_sizes(files: int) -> list[int]:
    """Adds per commit, versions 1..205: the 5 tail commits hold ~0.5% of the files."""
    tail_each = max(1, files // 1000)
    head = files - BIG_TAIL * tail_each
    base, extra = divmod(head, BIG_CHECKPOINT_VERSION)
    return [base + (1 if i < extra else 0) for i in range(BIG_CHECKPOINT_VERSION)] + [tail_each] * BIG_TAIL


def _add(rng: random.Random, k: int, ts: int) -> dict[str, Any]:
    part = f"p{rng.randrange(gen.NUM_PARTITIONS):02d}"
    file_id = uuid.UUID(int=rng.getrandbits(128), version=4)
    stats = {
        "numRecords": ID_SPAN,
        "minValues": {"id": k * IDS_PER_FILE, "value": round(rng.uniform(-1e6, 0.0), 6), "name": "name_0"},
        "maxValues": {
            "id": k * IDS_PER_FILE + ID_SPAN - 1,
            "value": round(rng.uniform(0.0, 1e6), 6),
            "name": f"name_{rng.randrange(10**6, 10**7):07d}",
        },
        "nullCount": {"id": 0, "value": rng.randrange(0, 5), "name": rng.randrange(0, 5)},
    }
    return {
        "add": {
            "path": f"part={part}/part-{k:07d}-{file_id}-c000.snappy.parquet",
            "partitionValues": {"part": part},
            "size": 4_096 + rng.randrange(0, 1 << 20),
            "modificationTime": ts - rng.randrange(1_000, 30_000),
            "dataChange": True,
            "stats": orjson.dumps(stats).decode(),
        }
    }


def _commit(table: Path, version: int, first: int, count: int) -> None:
    rng = random.Random(version * 7_919 + RECIPE)
    ts = gen.commit_timestamp(version)
    info = gen.append_commit_info(version, ts)
    gen._write_commit(table, version, [info, *(_add(rng, first + i, ts) for i in range(count))])


def build(table: Path, files: int) -> dict[str, Any]:
    """Write the table (JSON log, delta-rs checkpoint at 200, 5 more commits); validate with delta-rs."""
    import shutil

    shutil.rmtree(table, ignore_errors=True)
    gen.create_table(table)
    sizes, k = commit_sizes(files), 0
    for version, count in enumerate(sizes[:BIG_CHECKPOINT_VERSION], start=1):
        _commit(table, version, k, count)
        k += count
    t0 = time.perf_counter()
    cp = gen.deltars_checkpoint(table)
    assert cp == BIG_CHECKPOINT_VERSION, cp
    log(f"  delta-rs wrote the checkpoint at version {cp} in {time.perf_counter() - t0:.1f}s")
    for version, count in enumerate(sizes[BIG_CHECKPOINT_VERSION:], start=BIG_CHECKPOINT_VERSION + 1):
        _commit(table, version, k, count)
        k += count
    latest = BIG_CHECKPOINT_VERSION + BIG_TAIL
    gen.validate_with_deltalake(table, latest, files)
    return {"recipe": RECIPE, "files": files, "version": latest, "checkpoint": cp}


def build_struct_variant(source: Path, table: Path) -> dict[str, Any]:
    """The same log with `delta.checkpoint.writeStatsAsStruct=true` (Delta's default, so what Spark
    writes) in its metaData, checkpointed by delta-rs at the same version: its checkpoint carries
    `add.stats_parsed` and `add.partitionValues_parsed` next to the JSON stats. No data files."""
    import shutil

    shutil.rmtree(table, ignore_errors=True)
    (table / "_delta_log").mkdir(parents=True)
    name = "{:020d}.json".format
    for version in range(BIG_CHECKPOINT_VERSION + BIG_TAIL + 1):
        src, dst = source / "_delta_log" / name(version), table / "_delta_log" / name(version)
        if version == 0:
            actions = [orjson.loads(line) for line in src.read_bytes().splitlines() if line.strip()]
            for action in actions:
                if "metaData" in action:
                    action["metaData"]["configuration"]["delta.checkpoint.writeStatsAsStruct"] = "true"
            dst.write_bytes(b"\n".join(orjson.dumps(a) for a in actions) + b"\n")
        elif version <= BIG_CHECKPOINT_VERSION:
            shutil.copy2(src, dst)
    cp = gen.deltars_checkpoint(table)
    assert cp == BIG_CHECKPOINT_VERSION, cp
    for version in range(BIG_CHECKPOINT_VERSION + 1, BIG_CHECKPOINT_VERSION + BIG_TAIL + 1):
        shutil.copy2(source / "_delta_log" / name(version), table / "_delta_log" / name(version))
    return {"struct_checkpoint": cp}


def _ensure_variant(
    cache: Path, files: int, suffix: str, what: str, build: Callable[[Path], dict[str, Any]], version: int
) -> Path:
    """The cached variant `million-<files>-<suffix>` of the big table, built by `build(table)` and
    validated with delta-rs at `version` when it is missing or stale (its marker file says which)."""
    table = cache / f"million-{files}-{suffix}"
    marker = cache / f"million-{files}-{suffix}.json"
    info: dict[str, Any] = json.loads(marker.read_text()) if marker.exists() else {}
    if info.get("recipe") != RECIPE or info.get("files") != files or not table.is_dir():
        marker.unlink(missing_ok=True)
        t0 = time.perf_counter()
        log(f"building the {what} variant in {table} ...")
        info = {"recipe": RECIPE, "files": files, **build(table)}
        gen.validate_with_deltalake(table, version, files)
        info["build_seconds"] = round(time.perf_counter() - t0, 1)
        marker.write_text(json.dumps(info))
        log(f"  built and validated with delta-rs in {info['build_seconds']}s")
    return table


def ensure_struct_table(cache: Path, files: int, source: Path) -> Path:
    build = partial(build_struct_variant, source)
    return _ensure_variant(cache, files, "struct", "struct-stats", build, BIG_CHECKPOINT_VERSION + BIG_TAIL)


def build_v2_variant(source: Path, table: Path) -> dict[str, Any]:
    """The same log plus one commit that adds the `v2Checkpoint` feature (protocol 3/7) and sets
    `delta.checkpointPolicy=v2`, as `ALTER TABLE ... SET TBLPROPERTIES` does on Spark: the next
    checkpoint of the table is a V2 one (ours: UUID-named, file actions in sidecars). No data files."""
    import shutil

    shutil.rmtree(table, ignore_errors=True)
    (table / "_delta_log").mkdir(parents=True)
    for f in (source / "_delta_log").iterdir():
        if f.is_file():
            shutil.copy2(f, table / "_delta_log" / f.name)
    first = (source / "_delta_log" / f"{0:020d}.json").read_bytes().splitlines()
    (metadata,) = [a["metaData"] for a in map(orjson.loads, first) if "metaData" in a]
    metadata["configuration"] = {**metadata.get("configuration", {}), "delta.checkpointPolicy": "v2"}
    version = BIG_CHECKPOINT_VERSION + BIG_TAIL + 1
    info = {"timestamp": int(time.time() * 1000), "operation": "SET TBLPROPERTIES", "isBlindAppend": False}
    actions = [{"commitInfo": info}, {"protocol": V2_PROTOCOL}, {"metaData": metadata}]
    (table / "_delta_log" / f"{version:020d}.json").write_bytes(
        b"\n".join(map(orjson.dumps, actions)) + b"\n"
    )
    return {"v2_version": version}


def ensure_v2_table(cache: Path, files: int, source: Path) -> Path:
    build = partial(build_v2_variant, source)
    return _ensure_variant(cache, files, "v2", "v2Checkpoint", build, BIG_CHECKPOINT_VERSION + BIG_TAIL + 1)


def add_data_files(table: Path, files: int) -> dict[str, Any]:
    """Create every live file empty, plus unreferenced old orphans (see the module docstring)."""
    from deltalake import DeltaTable

    paths = DeltaTable(str(table)).get_add_actions().column("path").to_pylist()
    for d in {p.rsplit("/", 1)[0] for p in paths}:
        (table / d).mkdir(parents=True, exist_ok=True)
    flags = os.O_CREAT | os.O_WRONLY
    for p in paths:
        os.close(os.open(table / p, flags, 0o644))
    old = time.time() - ORPHAN_AGE_S
    orphans = max(1, files // 100)
    for i in range(orphans):
        f = table / f"part=p{i % gen.NUM_PARTITIONS:02d}/orphan-{i:07d}.snappy.parquet"
        os.close(os.open(f, flags, 0o644))
        os.utime(f, (old, old))
    return {"data_files": len(paths), "orphans": orphans}


def ensure_table(cache: Path, files: int, data_files: bool) -> tuple[Path, dict[str, Any]]:
    """The cached table for `files` live files (built if missing or stale), with data files if asked."""
    table = cache / f"million-{files}"
    marker = cache / f"million-{files}.json"
    info: dict[str, Any] = json.loads(marker.read_text()) if marker.exists() else {}
    if info.get("recipe") != RECIPE or info.get("files") != files or not table.is_dir():
        marker.unlink(missing_ok=True)
        cache.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        log(f"building the {files:,}-file table in {table} ...")
        info = build(table, files)
        info["build_seconds"] = round(time.perf_counter() - t0, 1)
        marker.write_text(json.dumps(info))
        log(f"  built and validated with delta-rs in {info['build_seconds']}s")
    else:
        log(f"reusing the cached {files:,}-file table {table}")
    if data_files and "orphans" not in info:
        t0 = time.perf_counter()
        log(f"creating {files:,} empty data files + orphans in {table} (for S5) ...")
        info.update(add_data_files(table, files))
        info["data_files_seconds"] = round(time.perf_counter() - t0, 1)
        marker.write_text(json.dumps(info))
        log(f"  done in {info['data_files_seconds']}s")
    return table, info


# ---------------------------------------------------------------------------------------- measuring
def engine_fingerprint() -> str:
    """Hash of the engine's sources: the report says whether they changed during the run."""
    import hashlib

    h = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent / "airflow_txnlog" / "engine"
    for f in sorted(root.rglob("*.py")):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def run(runner: Runner) -> None:
    """Measure the selected S rows (S3 comes with S2: the same processes report their peak RSS)."""
    a, only = runner.args, set(runner.args.only)
    if not only & set(S_KEYS):
        return
    table, info = ensure_table(a.big_cache, a.big_files, data_files="S5" in only)
    runner.big_info = {**info, "engine_before": engine_fingerprint(), "moved": []}
    warm = runner.workdir / "million-warm"
    if not warm.exists():
        gen.generate_checkpointed_table(warm, gen.TableSpec(3, 5), 2)
    base = {"task": "big", "path": str(table), "warm_path": str(warm)}

    def measure(key: str, spec: dict[str, Any], engines: tuple[str, ...] = ("deltars", "ours")) -> None:
        before = engine_fingerprint()
        runner.measure(key, {**base, **spec}, a.s_reps, engines=engines)
        if engine_fingerprint() != before:  # someone edited the engine while this row was measured
            runner.big_info["moved"].append(key)

    if "S1" in only:
        log(f"S1: open + list paths, {a.big_files:,} files")
        measure("S1", {"variant": "paths"})
    if only & {"S2", "S3", "S4", "S4L"}:
        log(f"S2/S3: open + full add metadata (and peak RSS), {a.big_files:,} files")
        measure("S2", {"variant": "meta"})
    if "S4" in only:
        log(f"S4: files(filter={S4_FILTER!r}) on a loaded snapshot (ours)")
        measure("S4", {"variant": "prune", "filter": S4_FILTER}, engines=("ours",))
    if "S4L" in only:
        log(f"S4L: files(filter={S4_LOADED_FILTER!r}) on a snapshot after add_actions() (ours)")
        measure("S4L", {"variant": "prune", "filter": S4_LOADED_FILTER, "preload": True}, engines=("ours",))
    if "S5" in only:
        log(f"S5: vacuum dry-run plan, {a.big_files:,} files + {info['orphans']:,} orphans")
        measure("S5", {"variant": "vacuum"})
    checkpoint = {"task": "checkpoint", "scratch": str(runner.workdir)}  # (a hard-linked copy each)
    if only & {"S6", "S7"}:
        log(f"S6/S7: checkpoint write (and its peak RSS growth), {a.big_files:,} files")
        measure("S6", checkpoint)
    if only & {"S6F", "S7F"}:
        log("S6F/S7F: checkpoint write after a full load (ours: add_actions(); delta-rs's load is full)")
        measure("S6F", {**checkpoint, "full": True})
    if only & {"S6V", "S7V", "S6VF", "S7VF"}:
        v2 = {**checkpoint, "path": str(ensure_v2_table(a.big_cache, a.big_files, table))}
        if only & {"S6V", "S7V"}:
            log("S6V/S7V: checkpoint write of the table with checkpointPolicy=v2 (ours: sidecars)")
            measure("S6V", v2)
        if only & {"S6VF", "S7VF"}:
            log("S6VF/S7VF: as S6V, after a full load (as S6F)")
            measure("S6VF", {**v2, "full": True})
    if not only & set(STRUCT_KEYS):
        return
    base["path"] = str(ensure_struct_table(a.big_cache, a.big_files, table))
    if "S1S" in only:
        log("S1S: open + list paths, checkpoint with stats_parsed")
        measure("S1S", {"variant": "paths"})
    if only & {"S2S", "S3S", "S4S", "S4SL"}:
        log("S2S/S3S: open + full add metadata, checkpoint with stats_parsed")
        measure("S2S", {"variant": "meta"})
    if "S4S" in only:
        log("S4S: pruning on a loaded snapshot, checkpoint with stats_parsed (ours)")
        measure("S4S", {"variant": "prune", "filter": S4_FILTER}, engines=("ours",))
    if "S4SL" in only:
        log("S4SL: pruning on a snapshot after add_actions(), checkpoint with stats_parsed (ours)")
        measure("S4SL", {"variant": "prune", "filter": S4_LOADED_FILTER, "preload": True}, engines=("ours",))
    if only & {"S6S", "S7S"}:
        log("S6S/S7S: checkpoint write of the table with writeStatsAsStruct=true (both write stats_parsed)")
        measure("S6S", checkpoint)
