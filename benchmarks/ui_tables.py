# ruff: noqa: PLC0415
"""How fast the Tables view answers on a big table: 10,000 commits and 1,000,000 files (issue 17).

The table: the million-file table of `benchmarks.million` (205 commits, 1,000,000 live files, a
delta-rs checkpoint at 200), copied, then extended to 10,000 commits (one new file each: 1,009,795
files) and checkpointed at its last version by our engine, as a table with `checkpointInterval`
would be. Each view route's work is then timed in a fresh process (no cache from another route):

- `list row`: what `/api/tables` does per table (listing, the last commit, the health of the latest
  snapshot), cold; and again warm (the health is cached per version in the api-server process);
- `detail`: `/api/tables/{id}` (schema, protocol, health, savepoints), cold;
- `history first page` / `history deep page`: `/api/tables/{id}/history` with 50 entries, from the
  latest version and from version 1,000 (only those 50 commit files are read), cold;
- `detail_warm`: the same after the list was shown (the snapshot facts cached); history pages load
  no snapshot, so they have no warm variant;
- `chart`: `/api/tables/{id}/chart.svg`, cold.

Run: `python -m benchmarks.ui_tables [--cache DIR]`. It prints one line per route (median of 3
runs, seconds, and the peak RSS of the process) and the markdown rows docs/ui.md shows. There is no
delta-rs counterpart (delta-rs has no such view): the figures are absolute load times.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import generate as gen
from benchmarks import million

COMMITS = 10_000
RUNS = 3
ROUTES = (
    "list_cold",
    "list_warm",
    "detail",
    "detail_warm",
    "history_first",
    "history_deep",
    "chart",
)


def build(cache: Path) -> Path:
    """The 10,000-commit table (cached next to the million-file table)."""
    table = cache / "ui-10k-commits"
    marker = cache / "ui-10k-commits.json"
    if marker.exists() and table.is_dir():
        return table
    source, info = million.ensure_table(cache, 1_000_000, data_files=False)
    shutil.rmtree(table, ignore_errors=True)
    shutil.copytree(source, table)
    first = int(info["version"]) + 1
    for version in range(first, COMMITS):
        gen._write_commit(table, version, gen.append_actions(version, 1, seed=17))
    from airflow_txnlog.engine import Table

    t0 = time.perf_counter()
    Table.open(str(table)).checkpoint()
    print(f"checkpoint of version {COMMITS - 1}: {time.perf_counter() - t0:.1f} s", flush=True)
    marker.write_text(json.dumps({"commits": COMMITS}))
    return table


def measure(table: str, route: str) -> dict[str, float]:
    """One route's work in this process: seconds (and the warm second call for `list_warm`)."""
    from airflow_txnlog.plugins import tables_report
    from airflow_txnlog.plugins.tables_catalog import KnownTable, table_id_of
    from airflow_txnlog.plugins.tables_chart import chart_svg

    known = KnownTable(table, table_id_of(table), (), ("bench",), "txnlog_default")
    calls: dict[str, Any] = {
        "list_cold": lambda: tables_report.summary(known),
        "list_warm": lambda: tables_report.summary(known),
        "detail": lambda: tables_report.detail(known),
        "detail_warm": lambda: tables_report.detail(known),
        "history_first": lambda: tables_report.history(known, before=None, limit=50),
        "history_deep": lambda: tables_report.history(known, before=1_000, limit=50),
        "chart": lambda: chart_svg(*tables_report.chart_data(known, limit=50)),
    }
    if route.endswith("_warm"):
        calls["list_cold"]()  # as after the list was shown: the snapshot facts are cached
    t0 = time.perf_counter()
    calls[route]()
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "airflow_txnlog-bench-cache"
    )
    parser.add_argument("--child", nargs=2, metavar=("TABLE", "ROUTE"), help=argparse.SUPPRESS)
    parser.add_argument("--routes", nargs="*", default=list(ROUTES), choices=ROUTES)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child)))
        return
    table = build(args.cache)
    rows = []
    for route in args.routes:
        samples = []
        for _ in range(RUNS):
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.ui_tables", "--child", str(table), route],
                check=True,
                capture_output=True,
                text=True,
            )
            samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
        seconds = statistics.median(s["seconds"] for s in samples)
        rss = max(s["rss_mb"] for s in samples)
        rows.append(f"| {route} | {seconds:.2f} s | {rss:,.0f} MB |")
        runs = [round(s["seconds"], 3) for s in samples]
        print(f"{route}: {seconds:.3f} s (runs: {runs}), peak RSS {rss:.0f} MB", flush=True)
    print("\n| route | median of 3 | peak RSS |\n|---|---|---|\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
