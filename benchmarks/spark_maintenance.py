# ruff: noqa: PLC0415
"""A planned compaction of a table of more than 2 GB, three ways, on the same data in the same run
(issue 41): what the calling process (an Airflow task's) holds while the rewrite runs.

    data    `--files` files (default 68) of `--rows-per-file` rows (default 1M) of four random float64
            columns (incompressible: ~32 MiB a file, ~2.2 GB in all), appended one file a commit;
            three identical copies
    plan    `Table.plan_maintenance(quiet_minutes=0, target_file_size=--bin-bytes)` on the first copy:
            one compact action whose bins hold ~1 GiB each; every run takes that same action
    runs    each in a fresh process; the measured call alone, after the process has opened the table
            (and, for Spark, started its session):
              engine     Table(uri).run_maintenance(action, dry_run=False)           (pyarrow, in process)
              spark      SparkTable(spark, uri).run_maintenance(action, dry_run=False) on a standalone
                         cluster this benchmark starts (master + one worker, `--worker-cores`,
                         `--worker-memory`); the driver is a JVM child of the process, measured apart
              delta-rs   DeltaTable(uri).optimize.compact(target_size=--bin-bytes)    (Rust, in process)
            RSS is sampled every 20 ms (psutil) during the call: growth = the highest sample less the
            RSS just before the call; `VmHWM` (the process's lifetime peak) is reported too
    check   the engine's and Spark's results agree: rows, per-column sums (float, to 1e-9), files,
            the result dicts but for bytes written and seconds, and the OPTIMIZE commits' metrics
            (numRemovedFiles, numAddedFiles, numRemovedBytes)

    .venv/bin/python -m benchmarks.spark_maintenance --write     # the docs/benchmarks.md section
    .venv/bin/python -m benchmarks.spark_maintenance --quick     # 12 files of 250k rows, prints only

Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from benchmarks.doc_sections import replace_section

START, END = "<!-- spark-maintenance:start -->", "<!-- spark-maintenance:end -->"
DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
COLUMNS = ("w", "x", "y", "z")
SCHEMA = pa.schema([(c, pa.float64()) for c in COLUMNS])

CHILD = r"""
import json, os, sys, threading, time
import psutil
mode, uri, action_path, master, bin_bytes = sys.argv[1:6]
action = json.load(open(action_path))
proc = psutil.Process()
if mode == "spark":
    from pyspark.sql import SparkSession
    from airflow_txnlog.spark import SparkTable
    spark = (SparkSession.builder.master(master).appName("bench-spark-maintenance")
             .config("spark.driver.host", "127.0.0.1").config("spark.ui.enabled", "false")
             .config("spark.executor.memory", os.environ["BENCH_EXECUTOR_MEMORY"])
             .config("spark.pyspark.python", sys.executable).getOrCreate())
    spark.range(1).count()  # (executors up before the measured call)
    target = SparkTable(spark, uri)
    run = lambda: target.run_maintenance(action, dry_run=False)
elif mode == "engine":
    from airflow_txnlog.engine import Table
    table = Table.open(uri)
    table.snapshot()
    run = lambda: table.run_maintenance(action, dry_run=False)
else:
    from deltalake import DeltaTable
    dt = DeltaTable(uri)
    run = lambda: dt.optimize.compact(target_size=int(bin_bytes))
def rss_of_children():
    return sum(c.memory_info().rss for c in proc.children(recursive=True) if c.is_running())
before, child_before = proc.memory_info().rss, rss_of_children()
peak, child_peak, done = [before], [child_before], threading.Event()
def sample():
    while not done.is_set():
        peak[0] = max(peak[0], proc.memory_info().rss)
        try:
            child_peak[0] = max(child_peak[0], rss_of_children())
        except psutil.Error:
            pass
        done.wait(0.02)
sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
start = time.monotonic()
result = run()
seconds = time.monotonic() - start
done.set(); sampler.join()
hwm = int([l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]) * 1024
print("RESULT " + json.dumps({
    "seconds": round(seconds, 2), "rss_before": before, "rss_peak": peak[0], "growth": peak[0] - before,
    "hwm": hwm, "children_before": child_before, "children_peak": child_peak[0],
    "result": result if isinstance(result, dict) else {k: v for k, v in dict(result).items()
                                                        if isinstance(v, (int, float, str))},
}, default=str))
"""


def build(root: Path, files: int, rows: int) -> Path:
    from airflow_txnlog.engine import Table

    path = root / "engine"
    t = Table.create(str(path), schema=SCHEMA)
    rng = np.random.default_rng(41)
    for _ in range(files):
        t.write(pa.table({c: rng.random(rows) for c in COLUMNS}, schema=SCHEMA))
    for name in ("spark", "deltars"):
        shutil.copytree(path, root / name)
    return path


def plan(path: Path, bin_bytes: int) -> dict[str, Any]:
    from airflow_txnlog.engine import Table

    actions = Table.open(str(path)).plan_maintenance(quiet_minutes=0, target_file_size=bin_bytes).to_dict()
    (action,) = [a for a in actions["actions"] if a["kind"] == "compact"]
    return dict(action)


def child(mode: str, uri: Path, action_file: Path, master: str, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "BENCH_EXECUTOR_MEMORY": args.worker_memory}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(uri), str(action_file), master, str(args.bin_bytes)],
        capture_output=True, text=True, timeout=args.timeout, env=env, check=False,
    )  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"{mode} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    out: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return out


def _content(uri: Path) -> dict[str, Any]:
    """Rows, per-column sums and live files of the table's latest version (streamed by batches)."""
    import pyarrow.parquet as pq

    from airflow_txnlog.engine import Table

    snap = Table.open(str(uri)).snapshot()
    sums, rows = dict.fromkeys(COLUMNS, 0.0), 0
    for f in snap.files():
        for batch in pq.ParquetFile(uri / f.path).iter_batches(batch_size=262_144, columns=list(COLUMNS)):
            rows += batch.num_rows
            for c in COLUMNS:
                sums[c] += float(np.sum(batch.column(c).to_numpy()))
    return {"rows": rows, "sums": sums, "files": len(snap.files()), "version": snap.version}


def _metrics(uri: Path, version: int) -> dict[str, Any]:
    log = uri / "_delta_log" / f"{version:020d}.json"
    info = next(json.loads(x)["commitInfo"] for x in log.read_text().splitlines() if "commitInfo" in x)
    return dict(info["operationMetrics"])


def agree(root: Path, engine: dict[str, Any], spark: dict[str, Any]) -> list[str]:
    """What differs between the engine's and Spark's results (empty: they agree)."""
    differ: list[str] = []
    a, b = _content(root / "engine"), _content(root / "spark")
    if (a["rows"], a["files"]) != (b["rows"], b["files"]):
        differ.append(f"rows/files: engine {a['rows']}/{a['files']}, spark {b['rows']}/{b['files']}")
    for c in COLUMNS:
        if not np.isclose(a["sums"][c], b["sums"][c], rtol=1e-9, atol=0):
            differ.append(f"sum({c}): engine {a['sums'][c]!r}, spark {b['sums'][c]!r}")

    def plain(r: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in r.items() if k not in ("seconds", "actual", "version")}
        return {**out, "actual": {k: v for k, v in r["actual"].items() if k != "bytes_after"}}

    if plain(engine["result"]) != plain(spark["result"]):
        differ.append(f"results: engine {plain(engine['result'])}, spark {plain(spark['result'])}")
    ours = _metrics(root / "spark", spark["result"]["version"])
    theirs = _metrics(root / "engine", engine["result"]["version"])
    keys = ("numRemovedFiles", "numAddedFiles", "numRemovedBytes")
    if {k: ours[k] for k in keys} != {k: theirs[k] for k in keys} or set(ours) != set(theirs):
        differ.append(f"commit metrics: engine {theirs}, spark {ours}")
    return differ


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def report(args: argparse.Namespace, data_bytes: int, bins: int, runs: dict[str, dict[str, Any]],
           differ: list[str]) -> str:  # fmt: skip
    lines = [
        START,
        f"### Planned compaction on Spark: the calling process's memory (issue 41; {dt.date.today()})",
        "",
        f"`benchmarks/spark_maintenance.py`: {args.files} files of {args.rows_per_file:,} rows of four "
        f"random float64 columns ({data_bytes / 1e9:.2f} GB), one planned compact action of {bins} "
        f"bins of at most {args.bin_bytes / 2**30:.2f} GiB; each run in a fresh process on the same data; "
        f"Spark on a standalone cluster (master + one worker, {args.worker_cores} cores, "
        f"{args.worker_memory}) started by the benchmark. Growth: the process's highest RSS sample "
        "(every 20 ms) during the call less its RSS just before it.",
        "",
        "| run | seconds | RSS before | peak RSS growth | VmHWM | driver JVM (child) peak |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in runs.items():
        jvm = _mb(r["children_peak"]) if name == "spark" else "—"
        lines.append(
            f"| {name} | {r['seconds']} | {_mb(r['rss_before'])} | **{_mb(r['growth'])}** | "
            f"{_mb(r['hwm'])} | {jvm} |"
        )
    verdict = "agree" if not differ else "DIFFER: " + "; ".join(differ)
    lines += [
        "",
        f"Engine and Spark results {verdict} (rows, per-column sums, files, result dicts but bytes "
        "written and seconds, the commits' numRemovedFiles / numAddedFiles / numRemovedBytes).",
        END,
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=68)
    p.add_argument("--rows-per-file", type=int, default=1_000_000)
    p.add_argument("--bin-bytes", type=int, default=2**30)
    p.add_argument("--worker-cores", type=int, default=2)
    p.add_argument("--worker-memory", default="4g")
    p.add_argument("--timeout", type=int, default=3600)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--write", action="store_true", help="write the docs/benchmarks.md section")
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args(argv)
    if args.quick:
        args.files, args.rows_per_file, args.bin_bytes = 12, 250_000, 48 * 2**20
    from scripts.deploy.stack import SparkCluster

    root = args.workdir or Path(tempfile.mkdtemp(prefix="bench-spark-maint-"))
    try:
        path = build(root, args.files, args.rows_per_file)
        data_bytes = sum(f.stat().st_size for f in path.glob("*.parquet"))
        action = plan(path, args.bin_bytes)
        action_file = root / "action.json"
        action_file.write_text(json.dumps(action))
        runs: dict[str, dict[str, Any]] = {}
        runs["engine"] = child("engine", root / "engine", action_file, "", args)
        (root / "cluster").mkdir(exist_ok=True)
        cluster = SparkCluster(root / "cluster", cores=args.worker_cores, memory=args.worker_memory)
        try:
            cluster.start()
            runs["spark"] = child("spark", root / "spark", action_file, cluster.url, args)
        finally:
            cluster.stop()
        runs["delta-rs"] = child("deltars", root / "deltars", action_file, "", args)
        differ = agree(root, runs["engine"], runs["spark"])
        section = report(args, data_bytes, len(action["bins"]), runs, differ)
        print(section)
        if args.write and not args.quick:
            replace_section(DOC, START, END, section)
    finally:
        if args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
