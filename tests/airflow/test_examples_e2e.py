"""The example DAGs end to end with dag.test() on local Spark and SQLite (the README's main job)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    now = t.snapshot().to_arrow().sort_by("order_id")
    assert now.equals(before)
    theirs = DeltaTable(str(table)).to_pyarrow_table().sort_by("order_id")
    assert theirs.select(now.column_names).to_pylist() == now.to_pylist()
    assert t.snapshot().to_arrow(filter="amount < 0").num_rows == 0


def test_asset_events_carry_versions(demo: tuple[Path, str]) -> None:
    _, output = demo
    assert "txnlog_ingest.append_orders: {'version': 1, 'operation': 'WRITE'}" in output
    assert "txnlog_guarded_merge.merge_corrections: {'version': 4, 'operation': 'MERGE'}" in output
