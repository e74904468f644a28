"""The example DAGs end to end with dag.test() on local Spark and SQLite (the README's main job)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import Table

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("demo")
    env = {**os.environ, "TXNLOG_DEMO_DIR": str(out), "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_dags.py")],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out / "orders", proc.stdout


def test_every_dag_ran_and_the_table_history_shows_it(demo: tuple[Path, str]) -> None:
    table, output = demo
    ops = [h["operation"] for h in reversed(Table.open(str(table)).history())]
    assert ops[:4] == ["CREATE TABLE", "WRITE", "WRITE", "WRITE"]  # the day-1 re-run added nothing
    assert ops[4:7] == ["MERGE", "MERGE", "RESTORE"]  # good merge, bad merge, restore
    assert "VACUUM START" in ops and "VACUUM END" in ops
    for dag_id in ("txnlog_ingest", "txnlog_guarded_merge", "txnlog_maintenance", "txnlog_downstream"):
        assert f"{dag_id} " in output
    assert "table equal to its pre-run rows: True" in output


def test_the_failed_run_left_the_table_as_before_it(demo: tuple[Path, str]) -> None:
    table, _ = demo
    t = Table.open(str(table))
    restore = next(h for h in t.history() if h["operation"] == "RESTORE")
    before = t.snapshot(version=restore["readVersion"] - 1).to_arrow().sort_by("order_id")
    # the restored version (run_dags.py's manual runs commit after it)
    now = t.snapshot(version=restore["version"]).to_arrow().sort_by("order_id")
    assert now.equals(before)
    theirs = DeltaTable(str(table), version=restore["version"]).to_pyarrow_table().sort_by("order_id")
    assert theirs.select(now.column_names).to_pylist() == now.to_pylist()
    assert t.snapshot().to_arrow(filter="amount < 0").num_rows == 0


def _asset_events(output: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(dag_id, task_id, extra) of each asset event run_dags.py printed from Airflow's DB."""
    section = output.split("Asset events of the table")[1].split("==> ", maxsplit=1)[0]
    events = []
    for line in section.splitlines():
        who, sep, extra = line.strip().partition(": ")
        if sep:
            dag_id, task_id = who.split(".", 1)
            events.append((dag_id, task_id, ast.literal_eval(extra)))
    return events


def test_asset_events_only_for_data_changes_with_every_field(demo: tuple[Path, str]) -> None:
    table, output = demo
    events = _asset_events(output)
    writers = [f"{d}.{t}" for d, t, _ in events]
    assert writers.count("txnlog_ingest.append_orders") == 4  # 3 days + the manual run; no re-run event
    assert "txnlog_ingest.drop_old_partitions" not in writers  # nothing older than 30 days
    assert "txnlog_guarded_merge.restore" not in writers  # the callback had restored already
    history = {h["version"]: h for h in Table.open(str(table)).history()}
    for dag_id, task_id, extra in events:
        entry = history[extra["version"]]
        assert (extra["operation"], extra["previous_version"]) == (entry["operation"], entry["readVersion"])
        assert (extra["dag_id"], extra["task_id"]) == (dag_id, task_id)
        assert extra["run_id"] == entry["job"]["jobRunId"]  # the commit's provenance names the same run
        assert {"num_added_files", "num_removed_files"} <= set(extra)
    first = events[0][2]
    assert (first["version"], first["operation"], first["num_added_rows"], first["num_removed_rows"]) == (
        1,
        "WRITE",
        50,
        0,
    )
    merge = next(x for d, t, x in events if t == "merge_corrections")
    assert (merge["version"], merge["num_added_rows"], merge["num_updated_rows"]) == (4, 1, 5)


def test_the_examples_run_without_a_logical_date(demo: tuple[Path, str]) -> None:
    _, output = demo
    for dag_id in ("txnlog_ingest", "txnlog_guarded_merge"):
        assert f"{dag_id} manual (no logical date): run success" in output
