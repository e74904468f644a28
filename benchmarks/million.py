# ruff: noqa: PLC0415, RUF001
"""The million-file table of issue 11 (rows S1..S5): building it once, measuring it, reporting it.

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

Rows are measured through :class:`benchmarks.runner.Runner` (fresh process per measurement, warm-up on
a tiny table, engines interleaved) and reported in their own section of docs/benchmarks.md between
``<!-- million-files:start -->`` and ``<!-- million-files:end -->``; the P report is left alone.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
import uuid
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
S_KEYS = ("S1", "S2", "S3", "S4", "S4L", "S5", "S1S", "S2S", "S3S", "S4S", "S4SL")
# the same rows, on the struct table
STRUCT_KEYS = {"S1S": "S1", "S2S": "S2", "S3S": "S3", "S4S": "S4", "S4SL": "S4L"}
START, END = "<!-- million-files:start -->", "<!-- million-files:end -->"
TARGETS = {"S1": 0.5, "S2": 0.5, "S3": 1.0, "S4": 0.05, "S4L": 0.05, "S5": 0.5}
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


def ensure_struct_table(cache: Path, files: int, source: Path) -> Path:
    table = cache / f"million-{files}-struct"
    marker = cache / f"million-{files}-struct.json"
    info: dict[str, Any] = json.loads(marker.read_text()) if marker.exists() else {}
    if info.get("recipe") != RECIPE or info.get("files") != files or not table.is_dir():
        marker.unlink(missing_ok=True)
        t0 = time.perf_counter()
        log(f"building the struct-stats variant in {table} ...")
        info = {"recipe": RECIPE, "files": files, **build_struct_variant(source, table)}
        gen.validate_with_deltalake(table, BIG_CHECKPOINT_VERSION + BIG_TAIL, files)
        info["build_seconds"] = round(time.perf_counter() - t0, 1)
        marker.write_text(json.dumps(info))
        log(f"  built and validated with delta-rs in {info['build_seconds']}s")
    return table


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


# ---------------------------------------------------------------------------------------- reporting
def _fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def _fmt_rss(kb: float | None) -> str:
    if kb is None:
        return "—"
    return f"{kb / 1024:.0f} MB" if kb < 1024 * 1024 else f"{kb / 1024 / 1024:.2f} GB"


# Why a row misses its target, as found by profiling our worker (`"profile"` in its spec) at 1M files;
# they describe the engine as of the measured commit and must be re-checked when it changes.
WHY = {
    "S1": "listing reads only `add.path` / `remove.path` / deletion vectors from the checkpoint; what "
    "is left is the parquet decode of 1M paths and the list of 1M Python `str`s.",
    "S2": "delta-rs's checkpoint here has no `stats_parsed`, so `add_actions()` reads the 1M stats JSON "
    "strings (~0.7 s) and parses them with `pyarrow.json` (~1.5 s on 2 cores, the floor we found: "
    "Polars' `str.json_decode` takes ~4.2 s on the same strings); delta-rs decodes them in Rust. On "
    "the same log checkpointed with `stats_parsed` (Delta's default) the target is met: row S2S.",
    "S3": "the JSON stats text (~200 MB, kept: without `stats_parsed` it is the only source of stats), "
    "the newline-delimited copy handed to the JSON reader (~200 MB, transient) and the parsed "
    "columns; with `stats_parsed` (S3S) the text is never read.",
    "S4": "the first filtered call parses the stats JSON of all 1M files (a narrow schema, only the "
    "predicate's column, but the JSON reader still tokenizes every string). Once the file state is "
    "loaded the same pruning meets the target (row S4L).",
    "S4S": "with `stats_parsed` the pruning reads only the predicate column's stats leaves (~30 ms); "
    "the rest is making the 2 matching `AddFile`s, which reads the other add columns of all 1M rows "
    "(the whole `stats_parsed` struct, to render their JSON stats, and `partitionValues`): delta-rs "
    "wrote the checkpoint as one row group, and parquet cannot read single rows of it. Once the "
    "file state is loaded the same pruning meets the target (row S4SL).",
    "S2S": "reading the add columns and `stats_parsed` of 1M rows (~0.9 s) plus the Arrow assembly.",
    "S5": "the directory walk is Python (`os.scandir`; referenced files are no longer stat-ed).",
}


def _row_specs(n: int, api: str) -> list[tuple[str, str, str, str, str, str]]:
    """(key, label, delta-rs measurement, our measurement, Measurement attribute, note) per S row."""
    return [
        ("S1", f"S1 open + list paths, {n:,} files", "S1", "S1", "samples",
         "delta-rs `DeltaTable(p).file_uris()` · ours `Table.open(p).snapshot().file_paths()`"),
        ("S2", f"S2 open + full add metadata, {n:,} files", "S2", "S2", "samples",
         f"delta-rs `get_add_actions(flatten=True)` · ours `snapshot().{api}` (measured API)"),
        ("S3", "S3 peak RSS of the S2 process", "S2", "S2", "rss_kb",
         "`ru_maxrss` of the fresh worker process at its end (imports + warm-up + S2)"),
        ("S4", f'S4 `files(filter="{S4_FILTER}")` on a loaded snapshot, vs delta-rs\'s S2', "S2", "S4",
         "samples", "ours: first call after `Table.open(p).snapshot()` (load untimed); ratio to delta-rs's "
         "S2 time, as the issue sets it (delta-rs's Python API has no stats-pruned file listing)"),
        ("S4L", "S4 on a snapshot whose file state is loaded (after `add_actions()`), vs delta-rs's S2",
         "S2", "S4L", "samples", f'ours: `files(filter="{S4_LOADED_FILTER}")` (another range) after '
         "`Table.open(p).snapshot().add_actions()` (untimed): the pruning compiler on parsed stats, as "
         "delta-rs holds them after its load"),
        ("S5", f"S5 open + vacuum dry-run plan, {n:,} files", "S5", "S5", "samples",
         "delta-rs `DeltaTable(p).vacuum(dry_run=True, full=True)` · ours "
         "`Table.open(p).vacuum(dry_run=True)`; default 7-day retention"),
        ("S1S", f"S1 on the struct-stats table, {n:,} files", "S1S", "S1S", "samples",
         "as S1, on the same log checkpointed by delta-rs with `writeStatsAsStruct=true` (Delta's default)"),
        ("S2S", f"S2 on the struct-stats table, {n:,} files", "S2S", "S2S", "samples",
         "as S2 on that table: the checkpoint's `stats_parsed` replaces the JSON parse"),
        ("S3S", "S3 peak RSS of the S2 process, struct-stats table", "S2S", "S2S", "rss_kb", "as S3"),
        ("S4S", "S4 on the struct-stats table, vs delta-rs's S2 there", "S2S", "S4S", "samples",
         "as S4: the first filtered call after `Table.open(p).snapshot()` (load untimed)"),
        ("S4SL", "S4L on the struct-stats table, vs delta-rs's S2 there", "S2S", "S4SL", "samples",
         "as S4L"),
    ]  # fmt: skip


def rows(runner: Runner) -> list[dict[str, Any]]:
    """One dict per S row: label, delta-rs and our figure (formatted), ratio, target, verdict."""
    res, only = runner.results, set(runner.args.only)

    def med(key: str, engine: str, attr: str) -> float | None:
        m = res.get((key, engine))
        vals = getattr(m, attr, None) if m is not None and m.ok else None
        return statistics.median(vals) if vals else None

    api = next(iter(getattr(res.get(("S2", "ours")) or res.get(("S2S", "ours")), "apis", []) or []), "?")
    out: list[dict[str, Any]] = []
    for key, label, d_key, o_key, attr, note in _row_specs(runner.args.big_files, api):
        if key not in only:
            continue
        d, o = med(d_key, "deltars", attr), med(o_key, "ours", attr)
        m = res.get((o_key, "ours"))
        err = m.error if m is not None and m.error else None
        ratio = o / d if d and o is not None else None
        t = TARGETS[key]
        verdict = "**failed**" if err else "—" if ratio is None else "met" if ratio <= t else "**missed**"
        fmt = _fmt_rss if attr == "rss_kb" else _fmt_s
        out.append(
            {"key": key, "label": label, "d": fmt(d), "o": fmt(o), "ratio": ratio, "target": t,
             "verdict": verdict, "note": note, "error": err}
        )  # fmt: skip
    return out


def _header(runner: Runner, load: str, command: str) -> list[str]:
    from benchmarks.runner import machine_info

    info, m = runner.big_info, machine_info()
    lines = [
        START,
        "## Million-file table (issue 11)",
        "",
        f"`{command}` — {m['date']}, git {m['git']}, deltalake {m['deltalake']}, pyarrow "
        f"{m['pyarrow']}; load average {load}. Median of {runner.args.s_reps} measured fresh processes "
        "per engine after one discarded warm-up process; each worker first runs the same operation on a "
        "tiny table (one-time process costs untimed). Lower is better; ratio = ours / delta-rs.",
        "",
        f"Table: {info.get('files', runner.args.big_files):,} live files — {BIG_CHECKPOINT_VERSION} JSON "
        f"commits, a checkpoint of version {BIG_CHECKPOINT_VERSION} written by delta-rs, then {BIG_TAIL} "
        f"JSON commits (version {info.get('version', '?')}); partitioned by `part` (100 values), JSON stats "
        "for `id`, `value`, `name`; file k holds ids [100k, 100k+149], so S4's predicate may match 2 files. "
        "Built by `benchmarks/million.py` and validated with delta-rs"
        + (
            f"; for S5, {info['data_files']:,} empty data files + {info['orphans']:,} orphans dated 30 "
            "days back."
            if "orphans" in info
            else "."
        ),
        "",
    ]
    if any(n.startswith("**The machine was busy") for n in runner.notes):
        lines += [
            "**The machine was busy (load average above the core count); timings are noisy.** The "
            "engines are measured interleaved, so both see similar load.",
            "",
        ]
    before, after = info.get("engine_before"), engine_fingerprint()
    if before and before != after:
        moved = ", ".join(info.get("moved", [])) or "none (the change came between rows)"
        lines += [
            f"**The engine's sources changed during this run** (fingerprint {before} → {after}; someone "
            f"was editing `airflow_txnlog/engine/`). Rows during whose measurement they changed: {moved}.",
            "",
        ]
    return lines


def _samples(runner: Runner) -> list[str]:
    lines = [
        "| key | engine | n | min | median | max | peak RSS (median) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (key, engine), m in sorted(runner.results.items()):
        if key in S_KEYS and m.ok:
            s = [x * 1000 for x in m.samples]
            rss = _fmt_rss(statistics.median(m.rss_kb)) if m.rss_kb else "—"
            lines.append(
                f"| {key} | {engine} | {len(s)} | {min(s):.1f} | {statistics.median(s):.1f} | "
                f"{max(s):.1f} | {rss} |"
            )
    for (key, engine), m in sorted(runner.results.items()):
        if key in S_KEYS and m.error:
            lines.append(f"\n- **{key} / {engine} failed**: `{m.error.splitlines()[0][:300]}`")
    return lines


def section(runner: Runner, load: str, command: str) -> str:
    """The markdown section (with its markers) for docs/benchmarks.md."""
    rs = rows(runner)
    lines = _header(runner, load, command)
    lines += ["| benchmark | delta-rs | ours | ratio | target | result |", "|---|---:|---:|---:|---:|---|"]
    for r in rs:
        ratio = f"{r['ratio']:.2f}×" if r["ratio"] is not None else "—"
        ours = r["o"] if not r["error"] else "failed"
        lines.append(f"| {r['label']} | {r['d']} | {ours} | {ratio} | ≤ {r['target']}× | {r['verdict']} |")
    lines += ["", "What each row calls:", ""] + [f"- **{r['key']}** — {r['note']}" for r in rs]
    missed = [r for r in rs if r["verdict"] == "**missed**"]
    if missed:
        lines += ["", "Why the missed targets are missed (today's engine):", ""]
        lines += [
            f"- **{r['key']}** ({r['ratio']:.2f}×, {r['ratio'] / r['target']:.1f}× its target): "
            + WHY.get(r["key"], "")
            for r in missed
        ]
    lines += ["", "Checks and extra figures:", "", *_checks(runner), "", *_samples(runner)]
    return "\n".join([*lines, END, ""])


def _checks(runner: Runner) -> list[str]:
    out, res = [], runner.results
    for key in ("S1", "S2", "S4", "S4L", "S5", "S1S", "S2S", "S4S", "S4SL"):
        counts = {
            e: res[(key, e)].counts[0]
            for e in ("deltars", "ours")
            if (key, e) in res and res[(key, e)].ok and res[(key, e)].counts
        }
        if counts:
            out.append(f"- {key}: files listed — " + ", ".join(f"{e} {c:,}" for e, c in counts.items()))
    for key in ("S4", "S4S"):
        m4 = res.get((key, "ours"))
        if m4 is None or not m4.ok:
            continue
        if m4.open_seconds:
            out.append(
                f"- {key}: open + load before the timed call (untimed) "
                + _fmt_s(statistics.median(m4.open_seconds))
            )
        if m4.again:
            out.append(
                f"- {key}: the same query a second time on the same snapshot "
                + _fmt_s(statistics.median(m4.again))
            )
    if "S5" in runner.args.only:
        out.append(
            "- S5: both plans should list exactly the orphans; the live (empty) files are referenced "
            "and the log is never a candidate."
        )
    return out


def write_section(path: Path, text: str) -> None:
    """Replace (or append) this section of `path`, leaving everything else as it is."""
    doc = path.read_text() if path.exists() else ""
    if START in doc and END in doc:
        head, rest = doc.split(START, 1)
        doc = head + text + rest.split(END, 1)[1].lstrip("\n")
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc)
