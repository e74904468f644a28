"""End-to-end demo of the airflow_txnlog engine and the `txnlog` CLI.

Creates a partitioned table in ./demo_output/table (wiped first), writes a dozen commits (appends,
an overwrite, an idempotent write repeated), shows the automatic checkpoint at version 10, time
travels by version and by timestamp, prints `txnlog history` / `txnlog describe`, and finally reads
the table with delta-rs (`deltalake`) when it is installed, to show that other engines can read it.

Run from the repository root:  .venv/bin/python scripts/demo.py
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
from pathlib import Path

import pyarrow as pa

from airflow_txnlog.cli import app as txnlog_app
from airflow_txnlog.engine import Table

TABLE_DIR = Path("demo_output") / "table"
SCHEMA = pa.schema(
    [
        ("order_id", pa.int64()),
        ("day", pa.string()),
        ("customer", pa.string()),
        ("amount", pa.float64()),
    ]
)
DAYS = [f"2024-03-{d:02d}" for d in range(1, 8)]
CUSTOMERS = ["ada", "grace", "linus", "guido", "barbara"]


def step(msg: str) -> None:
    print(f"\n==> {msg}", flush=True)


def info(msg: str) -> None:
    print(f"    {msg}", flush=True)


def orders(day: str, first_id: int, n: int) -> pa.Table:
    ids = list(range(first_id, first_id + n))
    return pa.table(
        {
            "order_id": ids,
            "day": [day] * n,
            "customer": [CUSTOMERS[i % len(CUSTOMERS)] for i in ids],
            "amount": [round(10 + (i * 7.3) % 90, 2) for i in ids],
        },
        schema=SCHEMA,
    )


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")


def checkpoints(table_dir: Path) -> list[str]:
    return sorted(p.name for p in (table_dir / "_delta_log").glob("*.checkpoint*.parquet"))


def create_table(uri: str) -> Table:
    step(f"Creating a table partitioned by 'day' at {uri} (old contents wiped)")
    shutil.rmtree(TABLE_DIR, ignore_errors=True)
    table = Table.create(
        uri,
        schema=SCHEMA,
        partition_by=["day"],
        name="orders",
        description="demo orders, one partition per day",
    )
    info(f"version {table.latest_version()}: CREATE TABLE")
    return table


def write_commits(table: Table) -> dict[int, int]:
    """Appends, an overwrite and an idempotent write; returns the row count expected per version."""
    expected: dict[int, int] = {0: 0}
    step("Appending one batch of orders per day (versions 1-5)")
    next_id, rows = 1, 0
    for day in DAYS[:5]:
        batch = orders(day, next_id, 20)
        v = table.write(batch)
        next_id, rows = next_id + 20, rows + batch.num_rows
        expected[v] = rows
        info(f"version {v}: appended {batch.num_rows} rows for {day} (table now {rows} rows)")

    step("Overwriting the table with a corrected extract (version 6)")
    corrected = pa.concat_tables([orders(day, 1000 + 10 * i, 10) for i, day in enumerate(DAYS[:3])])
    v = table.write(corrected, mode="overwrite")
    rows = expected[v] = corrected.num_rows
    info(f"version {v}: overwrite -> the table now holds {rows} rows in {table.snapshot().num_files} files")

    step("Idempotent write with txn=('nightly-loader', 1), submitted twice (a retried task)")
    batch = orders(DAYS[3], 2000, 15)
    first = table.write(batch, txn=("nightly-loader", 1))
    rows = expected[first] = rows + batch.num_rows
    info(f"first attempt committed version {first}")
    again = table.write(batch, txn=("nightly-loader", 1))
    latest = table.latest_version()
    info(f"second attempt returned version {again}; latest version is still {latest}")
    assert again == first == latest, "the repeated idempotent write must not commit again"
    info(f"-> committed once: {table.snapshot().to_arrow().num_rows} rows (not {rows + batch.num_rows})")
    return expected | _append_until_checkpoint(table, rows)


def _append_until_checkpoint(table: Table, rows: int) -> dict[int, int]:
    step("Appending until version 11 (a checkpoint is written automatically at version 10)")
    expected: dict[int, int] = {}
    next_id = 3000
    while table.latest_version() < 11:
        batch = orders(DAYS[(next_id // 10) % len(DAYS)], next_id, 12)
        v = table.write(batch)
        next_id, rows = next_id + 12, rows + batch.num_rows
        expected[v] = rows
        info(f"version {v}: appended {batch.num_rows} rows (table now {rows} rows)")
        if f"{v:020d}.checkpoint.parquet" in checkpoints(TABLE_DIR):
            info(f"    -> checkpoint {v:020d}.checkpoint.parquet written automatically")
    return expected


def show_checkpoint(uri: str) -> None:
    step("Checkpoint files in _delta_log")
    found = checkpoints(TABLE_DIR)
    for name in found:
        info(name)
    assert f"{10:020d}.checkpoint.parquet" in found, "expected a checkpoint at version 10"
    snap = Table.open(uri).snapshot()
    info(
        f"a fresh reader loads version {snap.version} from checkpoint {snap.checkpoint_version}"
        " plus the JSON commits after it"
    )


def time_travel(uri: str, expected: dict[int, int]) -> None:
    table = Table.open(uri)
    step("Time travel by version")
    for v in (1, 5, 6, 7, table.latest_version()):
        n = table.snapshot(v).to_arrow().num_rows
        info(f"version {v:>2}: {n:>3} rows (expected {expected[v]})")
        assert n == expected[v]
    step("Time travel by timestamp (commit timestamps from the log)")
    for v in (3, 6, 10):
        ts = table.snapshot(v).timestamp
        snap = table.snapshot(timestamp=iso(ts))
        n = snap.to_arrow().num_rows
        info(f"as of {iso(ts)} -> version {snap.version:>2}: {n:>3} rows")
        assert snap.version == v and n == expected[v]
    day = DAYS[0]
    n = table.snapshot().to_arrow(filter=f"day = '{day}'").num_rows
    info(f"latest version, filter day = '{day}': {n} rows")


def run_cli(*args: str) -> None:
    print(f"\n$ txnlog {' '.join(args)}", flush=True)
    txnlog_app(args=list(args), prog_name="txnlog", standalone_mode=False)


def read_with_deltalake(uri: str, expected: dict[int, int]) -> None:
    step("Interoperability: reading the table with delta-rs (deltalake)")
    try:
        from deltalake import DeltaTable  # noqa: PLC0415 - optional dev dependency
    except ImportError:
        info("deltalake is not installed; skipping (pip install deltalake)")
        return
    dt_latest = DeltaTable(uri)
    n = dt_latest.to_pyarrow_table().num_rows
    latest = max(expected)
    info(f"deltalake sees version {dt_latest.version()} with {n} rows (engine: {expected[latest]})")
    assert (dt_latest.version(), n) == (latest, expected[latest])
    old = DeltaTable(uri, version=5)
    info(f"deltalake time travel to version 5: {old.to_pyarrow_table().num_rows} rows")
    ops = [h.get("operation") for h in dt_latest.history(3)]
    info(f"deltalake history (newest 3): {ops}")


def main() -> int:
    if not sys.stdout.isatty():
        os.environ.setdefault("COLUMNS", "150")  # rich would fold the CLI tables at 80 columns
    uri = str(TABLE_DIR.resolve())
    table = create_table(uri)
    expected = write_commits(table)
    show_checkpoint(uri)
    time_travel(uri, expected)
    step("The txnlog CLI, invoked in-process")
    run_cli("history", uri, "--limit", "5")
    run_cli("describe", uri)
    read_with_deltalake(uri, expected)
    step(f"Done: the table is in {TABLE_DIR}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
