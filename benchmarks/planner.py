# ruff: noqa: PLC0415
"""The maintenance planner (issue 27) against delta-rs, on the same data in the same run.

    M1  convergence: a partitioned table of small files (random data, so sizes add up), two identical
        copies. Ours: `plan_maintenance` then `run_maintenance` of its compact actions; delta-rs:
        `optimize.compact(target_size=...)`. Reported: the share of rewritten bytes that landed in
        files between 0.75 and 1.25 x target, files after, predicted vs actual bytes (ours), wall time,
        and a second run on each (ours plans no action; delta-rs #2576 rewrites its own output).
    M2  planning one big table (log only, no data files: `benchmarks.generate`): our plan vs delta-rs's
        `get_add_actions(flatten=True)` (the issue's yardstick), fresh process each, wall time and
        peak RSS, median of `--reps`.
    M3  planning many tables of mixed sizes (`--tables`: log-uniform from 50 to `--max-files` files,
        and M2's table as the last): total seconds with `plan_tables` (one worker process per core,
        as the Airflow plan operator plans them), and in one process: total, median and slowest
        seconds per table. M2's generated table has every file below the target
        (all are compaction candidates): the planner's worst case, a million files in its bins.

    .venv/bin/python -m benchmarks.planner --quick            # small sizes, prints only
    .venv/bin/python -m benchmarks.planner --files 1000000 --write   # docs/benchmarks.md section

Nothing here asserts a timing; tests/engine/maintenance/test_planner.py holds the rules.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from benchmarks import generate as gen

START, END = "<!-- planner:start -->", "<!-- planner:end -->"
DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


# ------------------------------------------------------------------------------------------ M1
def _small_table(path: Path, partitions: int, files: int, rows: int) -> None:
    from airflow_txnlog.engine import Table

    schema = pa.schema([("p", pa.string()), ("x", pa.int64()), ("y", pa.float64())])
    t = Table.create(str(path), schema=schema, partition_by=["p"])
    rng = np.random.default_rng(11)
    for _ in range(files):
        for p in range(partitions):
            n = int(rows * rng.uniform(0.5, 1.5))
            t.write(
                pa.table(
                    {"p": [f"p{p}"] * n, "x": rng.integers(0, 2**62, n), "y": rng.random(n)}, schema=schema
                )
            )


def _in_band(sizes: list[int], target: int) -> float:
    total = sum(sizes)
    return round(sum(s for s in sizes if 0.75 * target <= s <= 1.25 * target) / total, 3) if total else 1.0


def m1(work: Path, partitions: int, files: int, rows: int) -> dict[str, Any]:
    from deltalake import DeltaTable

    from airflow_txnlog.engine import Table

    ours, theirs = work / "m1-ours", work / "m1-deltars"
    for old in (ours, theirs):  # (M1 rewrites its tables: never reused from an earlier run)
        shutil.rmtree(old, ignore_errors=True)
    _small_table(ours, partitions, files, rows)
    shutil.copytree(ours, theirs)
    t = Table.open(str(ours))
    before = {f.path for f in t.snapshot().files()}
    target = int(sum(f.size for f in t.snapshot().files()) / len(before) * 6.3)  # ~6 inputs per output
    t0 = time.perf_counter()
    plan = t.plan_maintenance(quiet_minutes=0, target_file_size=target).to_dict()
    runs = [t.run_maintenance(a, dry_run=False) for a in plan["actions"] if a["kind"] == "compact"]
    ours_s = time.perf_counter() - t0
    outputs = [f.size for f in t.snapshot().files() if f.path not in before]
    again = t.plan_maintenance(quiet_minutes=0, target_file_size=target).to_dict()
    dt = DeltaTable(str(theirs))
    t0 = time.perf_counter()
    first = dt.optimize.compact(target_size=target)
    theirs_s = time.perf_counter() - t0
    theirs_before = set(before)
    dt = DeltaTable(str(theirs))
    adds = pa.table(dt.get_add_actions(flatten=True))  # (delta-rs gives an arro3 table)
    sizes = dict(zip(adds.column("path").to_pylist(), adds.column("size_bytes").to_pylist(), strict=True))
    their_out = [size for path, size in sizes.items() if path not in theirs_before]
    second = DeltaTable(str(theirs)).optimize.compact(target_size=target)
    return {
        "files_before": len(before),
        "target_bytes": target,
        "ours": {
            "seconds": round(ours_s, 2),
            "files_after_rewrite": len(outputs),
            "in_band_share": _in_band(outputs, target),
            "predicted_bytes": sum(r["predicted"]["bytes_after"] for r in runs),
            "actual_bytes": sum(r["actual"]["bytes_after"] for r in runs),
            "second_run_actions": len([a for a in again["actions"] if a["kind"] == "compact"]),
        },
        "deltars": {
            "seconds": round(theirs_s, 2),
            "files_after_rewrite": len(their_out),
            "in_band_share": _in_band(their_out, target),
            "second_run_files_removed": int(second.get("numFilesRemoved", 0)),
            "first_run_files_removed": int(first.get("numFilesRemoved", 0)),
        },
    }


# ------------------------------------------------------------------------------------------ M2
_PROBE = """
import json, sys, time
t0 = time.perf_counter()
if sys.argv[1] == "ours":
    from airflow_txnlog.engine import Table
    plan = Table.open(sys.argv[2]).plan_maintenance(quiet_minutes=0)
    extra = {"actions": len(plan.actions), "skipped": len(plan.skipped)}
elif sys.argv[1] == "inputs":  # what the planner reads of the snapshot, alone
    from airflow_txnlog.engine import Table
    extra = {"files": Table.open(sys.argv[2]).snapshot().file_summary().num_rows}
else:
    from deltalake import DeltaTable
    extra = {"files": DeltaTable(sys.argv[2]).get_add_actions(flatten=True).num_rows}
seconds = time.perf_counter() - t0
# VmHWM (this process image's peak RSS): ru_maxrss would keep a forking parent's peak across exec
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
print(json.dumps({"seconds": seconds, "rss_mb": int(hwm) / 1024, **extra}))
"""


def _probe(engine: str, path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, engine, str(path)], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def m2(work: Path, files: int, reps: int) -> dict[str, Any]:
    path = work / f"m2-{files}"
    if not path.exists():
        commits = max(1, files // 500)
        gen.generate_checkpointed_table(path, gen.TableSpec(commits, 500), 5)
    rows: dict[str, list[dict[str, Any]]] = {"ours": [], "inputs": [], "deltars": []}
    for _ in range(reps):
        for engine in ("deltars", "inputs", "ours"):
            rows[engine].append(_probe(engine, path))
    med = {
        e: {k: round(statistics.median(r[k] for r in rs), 3) for k in ("seconds", "rss_mb")}
        for e, rs in rows.items()
    }
    return {
        "files": files,
        "reps": reps,
        **med,
        "time_ratio": round(med["ours"]["seconds"] / med["deltars"]["seconds"], 2),
        "rss_ratio": round(med["ours"]["rss_mb"] / med["deltars"]["rss_mb"], 2),
        "inputs_time_ratio": round(med["inputs"]["seconds"] / med["deltars"]["seconds"], 2),
        "inputs_rss_ratio": round(med["inputs"]["rss_mb"] / med["deltars"]["rss_mb"], 2),
        "ours_plan": {k: v for k, v in rows["ours"][0].items() if k in ("actions", "skipped")},
    }


# ------------------------------------------------------------------------------------------ M3
def m3(
    work: Path, tables: int, max_files: int, big: Path | None = None, big_files: int = 0
) -> dict[str, Any]:
    """`tables` tables: log-uniform sizes from 50 to `max_files`, the last one `big` (M2's table)
    when given, so the mix reaches M2's size."""
    from airflow_txnlog.engine import PlanTarget, Table, plan_tables

    rng = np.random.default_rng(3)
    sizes = np.exp(rng.uniform(np.log(50), np.log(max_files), tables - (1 if big else 0))).astype(int)
    paths = []
    for i, n in enumerate(sizes):
        p = work / f"m3-{i:04d}"
        if not p.exists():
            gen.generate_table(p, gen.TableSpec(max(1, int(n) // 50), 50, seed=i))
        paths.append(p)
    if big is not None:
        paths.append(big)
        sizes = np.append(sizes, big_files)
    per: list[float] = []
    t0 = time.perf_counter()
    for p in paths:
        s0 = time.perf_counter()
        Table.open(str(p)).plan_maintenance(quiet_minutes=0)
        per.append(time.perf_counter() - s0)
    one_process = time.perf_counter() - t0
    workers = len(os.sched_getaffinity(0))
    t0 = time.perf_counter()
    outcomes = plan_tables(
        [PlanTarget(str(p)) for p in paths], settings={"quiet_minutes": 0}, workers=workers
    )
    pooled = time.perf_counter() - t0
    assert all(o.plan is not None for o in outcomes), [o.error for o in outcomes if o.error][:3]
    return {
        "tables": tables,
        "files_total": int(sum(sizes)),
        "max_files": int(max(sizes)),
        "seconds_total": round(pooled, 2),
        "workers": workers,
        "seconds_one_process": round(one_process, 2),
        "median_seconds_per_table": round(statistics.median(per), 4),
        "max_seconds_per_table": round(max(per), 2),
    }


# ------------------------------------------------------------------------------------------ report
def report(doc: dict[str, Any]) -> str:
    m1r, m2r, m3r = doc["M1"], doc["M2"], doc["M3"]
    o, d = m1r["ours"], m1r["deltars"]
    lines = [
        START,
        f"Planner benchmark (issue 27), one run on {doc['when']} ({doc['cores']} cores): "
        "`python -m benchmarks.planner " + doc["args"] + "`.",
        "",
        "| | ours | delta-rs |",
        "|---|---|---|",
        f"| M1 compaction of {m1r['files_before']} small files, target {m1r['target_bytes']:,} B: "
        f"rewritten bytes in 0.75-1.25 x target | {o['in_band_share']:.1%} | {d['in_band_share']:.1%} |",
        f"| M1 output files | {o['files_after_rewrite']} | {d['files_after_rewrite']} |",
        f"| M1 wall seconds (ours: plan + run) | {o['seconds']} | {d['seconds']} |",
        f"| M1 second run: ours plans actions / delta-rs rewrites files | {o['second_run_actions']} | "
        f"{d['second_run_files_removed']} |",
        f"| M1 predicted vs actual output bytes (ours) | {o['predicted_bytes']:,} vs "
        f"{o['actual_bytes']:,} | |",
        f"| M2 plan of a {m2r['files']:,}-file table vs `get_add_actions`: seconds | "
        f"{m2r['ours']['seconds']} | {m2r['deltars']['seconds']} (ratio {m2r['time_ratio']}) |",
        f"| M2 peak RSS MB | {m2r['ours']['rss_mb']} | "
        f"{m2r['deltars']['rss_mb']} (ratio {m2r['rss_ratio']}) |",
        f"| M2 the planner's inputs alone (`Snapshot.file_summary`): seconds, peak RSS MB | "
        f"{m2r['inputs']['seconds']}, {m2r['inputs']['rss_mb']} | ratios {m2r['inputs_time_ratio']}, "
        f"{m2r['inputs_rss_ratio']} |",
        f"| M3 {m3r['tables']} tables, {m3r['files_total']:,} files (max {m3r['max_files']:,}): total s "
        f"(`plan_tables`, {m3r['workers']} workers, as the plan operator plans them) | "
        f"{m3r['seconds_total']} | - |",
        f"| M3 the same in one process: total s, median s per table, slowest | {m3r['seconds_one_process']}, "
        f"{m3r['median_seconds_per_table']}, {m3r['max_seconds_per_table']} | - |",
        END,
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--files", type=int, default=None, help="M2 table size (default 100,000; quick 20,000)")
    ap.add_argument("--tables", type=int, default=None, help="M3 tables (default 1000; quick 50)")
    ap.add_argument(
        "--max-files", type=int, default=None, help="M3 largest table (default 100,000; quick 5,000)"
    )
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--write", action="store_true", help="replace the planner section of docs/benchmarks.md")
    a = ap.parse_args(argv)
    files = a.files or (20_000 if a.quick else 100_000)
    tables = a.tables or (50 if a.quick else 1000)
    max_files = a.max_files or (5_000 if a.quick else 100_000)
    work = a.workdir or Path(tempfile.mkdtemp(prefix="planner-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    doc = {
        "when": time.strftime("%Y-%m-%d"),
        "cores": len(os.sched_getaffinity(0)),
        "args": " ".join(argv if argv is not None else sys.argv[1:]),
        "M1": m1(work, partitions=3, files=30 if a.quick else 60, rows=10_000),
        "M2": m2(work, files, 1 if a.quick else a.reps),
        "M3": m3(work, tables, max_files, work / f"m2-{files}", files),
    }
    print(json.dumps(doc, indent=2))
    text = report(doc)
    print(text)
    if a.write:
        current = DOC.read_text()
        if START in current:
            current = current[: current.index(START)] + text + current[current.index(END) + len(END) :]
        else:
            current = current.rstrip() + "\n\n## Maintenance planner (issue 27)\n\n" + text + "\n"
        DOC.write_text(current)


if __name__ == "__main__":
    main()
