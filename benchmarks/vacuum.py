"""Vacuum benchmark: a table with 20k data files of which 10k are removed, ours vs delta-rs.

The table is generated directly (commit files + tiny real data files, all old), then copied once
per engine and measurement: 400 commits x 50 adds, then 200 commits removing 50 files each with an
old deletion timestamp. Both engines vacuum with retention 0 (check disabled): the plan (dry run)
and the execution (deleting 10k files), each on its own identical copy. Writes its section of
docs/benchmarks.md between `<!-- vacuum:start -->` and `<!-- vacuum:end -->`.

    .venv/bin/python -m benchmarks.vacuum [--files 20000] [--reps 3] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from benchmarks.generate import commit_path, create_table

START, END = "<!-- vacuum:start -->", "<!-- vacuum:end -->"
DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
OLD = time.time() - 30 * 86400
PER_COMMIT = 50


def build(root: Path, files: int) -> None:
    """`files` live-then-half-removed data files, all 30 days old."""
    create_table(root)
    paths = [f"part=p{i % 10}/f-{i:06d}.parquet" for i in range(files)]
    version = 0
    for start in range(0, files, PER_COMMIT):
        version += 1
        adds = [
            {
                "add": {
                    "path": p,
                    "partitionValues": {"part": p[7:9]},
                    "size": 8,
                    "modificationTime": int(OLD * 1000),
                    "dataChange": True,
                }
            }
            for p in paths[start : start + PER_COMMIT]
        ]
        _commit(root, version, [{"commitInfo": {"operation": "WRITE", "timestamp": int(OLD * 1000)}}, *adds])
    removed = paths[: files // 2]
    for start in range(0, len(removed), PER_COMMIT):
        version += 1
        rms = [
            {"remove": {"path": p, "deletionTimestamp": int(OLD * 1000), "dataChange": True}}
            for p in removed[start : start + PER_COMMIT]
        ]
        _commit(root, version, [{"commitInfo": {"operation": "DELETE", "timestamp": int(OLD * 1000)}}, *rms])
    for p in paths:
        f = root / p
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"PAR1PAR1")
        os.utime(f, (OLD, OLD))


def _commit(root: Path, version: int, actions: list[dict]) -> None:
    path = commit_path(root, version)
    path.write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in actions))
    os.utime(path, (OLD + version, OLD + version))


_WORKER = r"""
import sys, time
engine, path, dry = sys.argv[1], sys.argv[2], sys.argv[3] == "dry"
if engine == "ours":
    from airflow_txnlog.engine import Table
    t0 = time.perf_counter()
    r = Table.open(path).vacuum(retention_hours=0, enforce_retention=False, dry_run=dry)
    n = len(r.files)
else:
    from deltalake import DeltaTable
    t0 = time.perf_counter()
    n = len(DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=dry))
print(time.perf_counter() - t0, n)
"""


def measure(engine: str, template: Path, work: Path, dry: bool) -> tuple[float, int]:
    """One timed vacuum in a fresh process on a fresh copy (imports done before the clock)."""
    copy = work / f"{engine}-{'dry' if dry else 'run'}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(template, copy)
    out = subprocess.run(
        [sys.executable, "-c", _WORKER, engine, str(copy), "dry" if dry else "run"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    seconds, count = out.stdout.split()
    return float(seconds), int(count)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="txnlog-vacuum-") as tmp:
        template = Path(tmp) / "template"
        build(template, args.files)
        rows = []
        for label, dry in (("plan (dry run)", True), ("execute", False)):
            res = {
                e: [measure(e, template, Path(tmp), dry) for _ in range(args.reps)]
                for e in ("deltars", "ours")
            }
            med = {e: statistics.median(t for t, _ in runs) for e, runs in res.items()}
            counts = {e: runs[0][1] for e, runs in res.items()}
            ratio = med["ours"] / med["deltars"]
            rows.append(
                f"| vacuum {label}, {args.files:,} files ({args.files // 2:,} removed) | "
                f"{med['deltars'] * 1000:.0f} ms | {med['ours'] * 1000:.0f} ms | {ratio:.2f}x | ≤ 1.0x | "
                f"{'met' if ratio <= 1.0 else '**missed**'} | {counts['deltars']:,} / {counts['ours']:,} |"
            )
            print(rows[-1], flush=True)
    section = "\n".join(
        [
            START,
            "## Vacuum (issue 3)",
            "",
            f"`python -m benchmarks.vacuum` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"median of {args.reps}, each measurement in a fresh process on a fresh copy; "
            "retention 0 with the check off.",
            "",
            "| benchmark | delta-rs | ours | ratio | target | result | files (delta-rs / ours) |",
            "|---|---:|---:|---:|---:|---|---:|",
            *rows,
            END,
            "",
        ]
    )
    if not args.no_write:
        text = DOC.read_text()
        if START in text:
            head, rest = text.split(START, 1)
            text = head + section + rest.split(END, 1)[1].lstrip("\n")
        else:
            text += "\n" + section
        DOC.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
