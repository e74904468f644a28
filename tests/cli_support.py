"""What both CLI test modules use: the events table they run `txnlog` on, and the runner helpers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from typer.testing import CliRunner, Result

from airflow_txnlog.cli import app
from airflow_txnlog.engine import Table

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("value", pa.float64())])
DAY_A, DAY_B = "2024-01-01", "2024-01-02"
WIDE = {"COLUMNS": "250"}  # rich folds cells at 80 columns; a wide console keeps them on one line


def event_rows(ids: list[int], day: str) -> pa.Table:
    return pa.table({"id": ids, "day": [day] * len(ids), "value": [i / 2 for i in ids]}, schema=SCHEMA)


def events_table(path: Path, **create: Any) -> Path:
    """A table partitioned by day: v0 create, v1 2 rows day A, v2 3 rows day B, v3 1 row day A."""
    t = Table.create(str(path), schema=SCHEMA, partition_by=["day"], name="events", **create)
    assert t.write(event_rows([1, 2], DAY_A)) == 1
    assert t.write(event_rows([10, 11, 12], DAY_B)) == 2
    assert t.write(event_rows([3], DAY_A)) == 3
    return path


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def run_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return json.loads(result.stdout)
