"""Helpers shared by the Spark tests: reading a table's rows through each engine, comparably."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.sql.predicates import parse_predicate
from airflow_txnlog.engine.state.scan import read_files
from tests.spark.conftest import SCHEMA, make_rows


def merge_source(ids: range | list[int]) -> pa.Table:
    """Rows of the test tables' shape whose `value` differs from the target's (-(id % 3) * 1.5)."""
    rows = make_rows(ids)
    return rows.set_column(1, "value", pa.array([-(i % 3) * 1.5 for i in ids], pa.float64()))


def _sorted(t: pa.Table) -> list[dict[str, Any]]:
    t = t.select(SCHEMA.names).cast(SCHEMA)
    return sorted(t.to_pylist(), key=lambda r: (r["id"], repr(r)))


def engine_rows(path: Path | str, version: int | None = None) -> list[dict[str, Any]]:
    return _sorted(Table.open(str(path)).snapshot(version).to_arrow())


def deltalake_rows(path: Path | str) -> list[dict[str, Any]]:
    return _sorted(DeltaTable(str(path)).to_pyarrow_table())


def deltalake_scan_rows(path: Path | str) -> list[dict[str, Any]]:
    """Rows as delta-rs's own scan reads them: it applies deletion vectors (`to_pyarrow_table`
    refuses a table that has them)."""
    return _sorted(pa.table(DeltaTable(str(path)).scan().read_all()))


def spark_rows(df: Any) -> list[dict[str, Any]]:
    return _sorted(df.toArrow())


def assert_same_as_deltalake(ours: Path, theirs: Path) -> None:
    """Our result equals deltalake's result on its copy, and deltalake reads ours the same."""
    mine, oracle = engine_rows(ours), deltalake_rows(theirs)
    diff = [(a, b) for a, b in zip(mine, oracle, strict=False) if a != b][:3]
    assert mine == oracle, f"{len(mine)} vs {len(oracle)} rows; first differences: {diff}"
    assert mine == deltalake_rows(ours)


def commit_actions(path: Path | str, version: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def removed_paths(path: Path | str, version: int) -> set[str]:
    return {a["remove"]["path"] for a in commit_actions(path, version) if "remove" in a}


def files_with_matches(path: Path | str, predicate: str) -> set[str]:
    """Live files holding a row where `predicate` is TRUE, computed by the engine (pyarrow)."""
    snap = Table.open(str(path)).snapshot()
    pred = parse_predicate(predicate, snap.schema)
    out = set()
    for f in snap.files():
        rows = read_files(snap.storage, [f], snap.schema, snap.partition_columns)
        if pred.filter(rows).num_rows:
            out.add(f.path)
    return out
