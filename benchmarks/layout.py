# ruff: noqa: PLC0415
"""Z-order and Hilbert clustering (issue 28) against delta-rs `optimize.z_order`, same data, same run.

    data   `--rows` rows (default 20M) in `--files` appended files (default 200): a, b uniform
           integers in [0, 1,000,000), c a float payload; four identical copies
    run    each OPTIMIZE in a fresh process (wall seconds; peak RSS from /proc VmHWM):
             ours Z-order       Table.optimize(zorder_by=["a", "b"])          (engine, pyarrow)
             ours Hilbert       the same rows in a table created cluster_by=["a", "b"]; Table.optimize()
             delta-rs Z-order   DeltaTable.optimize.z_order(["a", "b"])
             (--spark) ours on Spark: SparkTable.optimize(zorder_by=...), local[2]
           every one with the same target size: the input bytes / `--files`, so each writes about as
           many files as it read
    query  `a BETWEEN 100000 AND 199999 AND b BETWEEN 300000 AND 399999` (1 % of the rows): the
           files whose min/max stats may hold a match, counted the same way for every table from
           delta-rs's `get_add_actions(flatten=True)` (and checked against our own pruning)

    .venv/bin/python -m benchmarks.layout --quick            # 2M rows, prints only
    .venv/bin/python -m benchmarks.layout --spark --write    # 20M rows, docs/benchmarks.md section

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

START, END = "<!-- layout:start -->", "<!-- layout:end -->"
DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
LO_A, HI_A, LO_B, HI_B = 100_000, 199_999, 300_000, 399_999
QUERY = f"a >= {LO_A} AND a <= {HI_A} AND b >= {LO_B} AND b <= {HI_B}"
SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("c", pa.float64())])


def build(work: Path, rows: int, files: int) -> dict[str, Path]:
    from airflow_txnlog.engine import Table

    paths = {k: work / k for k in ("zorder", "hilbert", "deltars", "spark")}
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True)
    plain = Table.create(str(paths["zorder"]), schema=SCHEMA)
    clustered = Table.create(str(paths["hilbert"]), schema=SCHEMA, cluster_by=["a", "b"])
    rng = np.random.default_rng(28)
    per = rows // files
    for _ in range(files):
        batch = pa.table(
            {
                "a": rng.integers(0, 1_000_000, per),
                "b": rng.integers(0, 1_000_000, per),
                "c": rng.random(per),
            },
            schema=SCHEMA,
        )
        plain.write(batch)
        clustered.write(batch)
    shutil.copytree(paths["zorder"], paths["deltars"])
    shutil.copytree(paths["zorder"], paths["spark"])
    return paths


_CHILD = """
import json, sys, time
kind, path, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
if kind == "deltars":
    from deltalake import DeltaTable
    DeltaTable(path).optimize.z_order(["a", "b"], target_size=target)
elif kind == "spark":
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "8g").getOrCreate())
    t0 = time.perf_counter()  # (the session's start is not the OPTIMIZE's)
    from airflow_txnlog.spark import SparkTable
    SparkTable(spark, path).optimize(zorder_by=["a", "b"], target_file_size=target)
else:
    from airflow_txnlog.engine import Table
    keys = {"zorder_by": ["a", "b"]} if kind == "zorder" else {}
    Table.open(path).optimize(target_file_size=target, **keys)
seconds = time.perf_counter() - t0
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
print(json.dumps({"seconds": seconds, "rss_mb": int(hwm) / 1024}))
"""


def _optimize(kind: str, path: Path, target: int) -> dict[str, Any]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}  # (Spark's workers: this interpreter)
    argv = [sys.executable, "-c", _CHILD, kind, str(path), str(target)]
    out = subprocess.run(argv, check=False, capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"{kind} OPTIMIZE failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def files_read(path: Path) -> tuple[int, int]:
    """(files whose stats may match QUERY, live files), from delta-rs's view of the log."""
    from deltalake import DeltaTable

    adds = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pydict()
    hit = sum(
        1
        for lo_a, hi_a, lo_b, hi_b in zip(
            adds["min.a"], adds["max.a"], adds["min.b"], adds["max.b"], strict=True
        )
        if lo_a <= HI_A and hi_a >= LO_A and lo_b <= HI_B and hi_b >= LO_B
    )
    return hit, len(adds["path"])


def run(work: Path, rows: int, files: int, spark: bool) -> dict[str, Any]:
    from airflow_txnlog.engine import Table

    paths = build(work, rows, files)
    total = sum(f.size for f in Table.open(str(paths["zorder"])).snapshot().files())
    target = total // files
    before = files_read(paths["zorder"])
    kinds = ["deltars", "zorder", "hilbert", *(["spark"] if spark else [])]
    out: dict[str, Any] = {"rows": rows, "files": files, "bytes": total, "target": target, "before": before}
    for kind in kinds:
        measured = _optimize(kind, paths[kind], target)
        hit, live = files_read(paths[kind])
        if kind != "deltars":  # our pruning agrees with the stats count
            assert len(Table.open(str(paths[kind])).snapshot().files(QUERY)) == hit, kind
        out[kind] = {**measured, "files_read": hit, "files_after": live, "share": round(hit / live, 4)}
    theirs = out["deltars"]
    for kind in kinds[1:]:
        out[kind]["time_ratio"] = round(out[kind]["seconds"] / theirs["seconds"], 2)
        out[kind]["rss_ratio"] = round(out[kind]["rss_mb"] / theirs["rss_mb"], 2)
    return out


def report(doc: dict[str, Any], command: str) -> str:
    names = {"zorder": "ours Z-order (engine)", "hilbert": "ours Hilbert clustering (engine)",
             "spark": "ours Z-order on Spark local[2]", "deltars": "delta-rs `optimize.z_order`"}  # fmt: skip
    lines = [
        f"Layout benchmark (issue 28), one run on {dt.date.today().isoformat()} ({os.cpu_count()} cores): "
        f"`{command}`. {doc['rows']:,} rows in {doc['files']} files ({doc['bytes']:,} bytes), target "
        f"{doc['target']:,} bytes per file; query `{QUERY}` (1 % of the rows). Before any OPTIMIZE it "
        f"may match {doc['before'][0]} of {doc['before'][1]} files.",
        "",
        "| OPTIMIZE | files read | of files | share | wall s | to delta-rs | peak RSS MB | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind in ("deltars", "zorder", "hilbert", "spark"):
        if kind not in doc:
            continue
        r = doc[kind]
        lines.append(
            f"| {names[kind]} | {r['files_read']} | {r['files_after']} | {r['share']:.1%} "
            f"| {r['seconds']:.1f} | {r.get('time_ratio', 1.0)} "
            f"| {r['rss_mb']:.0f} | {r.get('rss_ratio', 1.0)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2M rows, 40 files")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--files", type=int, default=None)
    ap.add_argument("--spark", action="store_true", help="also time SparkTable.optimize on local Spark")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--write", action="store_true", help="replace the layout section of docs/benchmarks.md")
    args = ap.parse_args(argv)
    rows = args.rows or (2_000_000 if args.quick else 20_000_000)
    files = args.files or (40 if args.quick else 200)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="txnlog-layout-"))
    doc = run(work, rows, files, args.spark)
    command = "python -m benchmarks.layout " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(doc, command.strip())
    print(text)
    print(json.dumps(doc, indent=1))
    if args.write:
        block = f"{START}\n{text}\n{END}"
        replace_section(DOC, START, END, block, heading="## Z-order and clustering (issue 28)")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
