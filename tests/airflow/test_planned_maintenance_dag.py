"""The example planned-maintenance DAG (dags_examples/txnlog_maintenance.py) run with dag.test():
a dry run changes nothing, a real run compacts what the plan names and records it, a second plan
finds nothing to do, and a savepoint's and the published version's files survive its vacuum."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import Table
from tests.airflow.dag_subprocess import run_dag_script

pytestmark = [pytest.mark.airflow, pytest.mark.slow]
EXAMPLE = Path(__file__).resolve().parents[2] / "dags_examples" / "txnlog_maintenance.py"

RUNNER = """
from airflow.utils.db import initdb
initdb()
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={dags!r})
assert not bag.import_errors, bag.import_errors
run = bag.dags["txnlog_maintenance"].test()
states = {{f"{{ti.task_id}}[{{ti.map_index}}]": str(ti.state).rsplit(".", 1)[-1]
          for ti in run.get_task_instances()}}
from tests.airflow.dag_subprocess import emit_result
emit_result({{"run": str(run.state).rsplit(".", 1)[-1], "tasks": states}})
"""


def _tables(base: Path) -> tuple[Table, Table]:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    # deleted files may go at once (the guarantees under test are the savepoint's and publication's)
    props = {"delta.deletedFileRetentionDuration": "interval 0 hours"}
    busy = Table.create(str(base / "busy"), schema=schema, partition_by=["p"], properties=props)
    for i in range(8):
        busy.write(pa.table({"id": list(range(i * 10, i * 10 + 10)), "p": ["x"] * 10}))
    busy.publish()
    busy.create_savepoint("before_maintenance")
    calm = Table.create(str(base / "calm"), schema=schema)
    calm.write(pa.table({"id": [1, 2], "p": ["y", "y"]}))
    return busy, calm


def _run(tmp_path: Path, tables: list[Table], name: str, **env: str) -> dict[str, Any]:
    dags = tmp_path / "dags"
    if not dags.exists():
        dags.mkdir()
        (dags / EXAMPLE.name).symlink_to(EXAMPLE)
    environment = {
        "TXNLOG_MAINTENANCE_TABLES": ",".join(t.uri for t in tables),
        "TXNLOG_MAINTENANCE_SETTINGS": '{"quiet_minutes": 0, "full_vacuum_days": 1000}',
        "AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI": str(tmp_path / "history"),
        **env,
    }
    result, _ = run_dag_script(tmp_path / name, dags, RUNNER.format(dags=str(dags)), environment)
    return dict(result)


def _history(tmp_path: Path) -> list[dict[str, Any]]:
    return DeltaTable(str(tmp_path / "history")).to_pyarrow_table().to_pylist()  # (delta-rs reads it)


def _all_files_present(t: Table, version: int) -> bool:
    return all(os.path.exists(os.path.join(t.uri, f.path)) for f in t.snapshot(version=version).files())


def test_dry_run_then_act_then_nothing_left_to_do(tmp_path: Path) -> None:
    busy, calm = _tables(tmp_path / "lake")
    before = {t.uri: t.latest_version() for t in (busy, calm)}
    saved = busy.get_savepoint("before_maintenance").version

    dry = _run(tmp_path, [busy, calm], "home_dry")  # the example's default: a dry run
    assert dry["run"] == "success", dry
    assert {t.uri: Table.open(t.uri).latest_version() for t in (busy, calm)} == before
    rows = _history(tmp_path)
    assert {r["table_uri"] for r in rows} == {f"file://{busy.uri}", f"file://{calm.uri}"}
    acted = [r for r in rows if r["decision"] == "action"]
    assert acted and {r["status"] for r in acted} == {"dry_run"} and all(r["dry_run"] for r in rows)
    assert all(r["rule"] and r["threshold"] is not None for r in rows)
    assert [r["kind"] for r in rows if r["decision"] == "action" and r["table_uri"].endswith("calm")] == []
    # only the table with actions got a mapped group: one map index per stage
    assert {k for k in dry["tasks"] if k.startswith("maintain.")} == {
        f"maintain.{s}[0]" for s in ("checkpoint", "optimize", "vacuum", "cleanup_log")
    }

    done = _run(tmp_path, [busy, calm], "home_act", TXNLOG_MAINTENANCE_DRY_RUN="false")
    assert done["run"] == "success", done
    latest = Table.open(busy.uri)
    ops = [h["operation"] for h in latest.history()]
    assert "OPTIMIZE" in ops
    assert latest.snapshot().num_files == 1  # 8 small files -> one
    assert Table.open(calm.uri).latest_version() == before[calm.uri]  # healthy: untouched
    rows = _history(tmp_path)
    compact = [r for r in rows if r["kind"] == "compact" and r["status"] == "done"]
    assert (
        len(compact) == 1 and compact[0]["actual_files_removed"] == 7 == compact[0]["predicted_files_removed"]
    )
    assert compact[0]["committed_version"] is not None and compact[0]["seconds"] >= 0
    # the compaction's paths came from the run's plan file, which the history task then deleted
    assert not (tmp_path / "history" / "_plans").exists()
    # the savepoint's and the published version's files outlive the compaction (and any vacuum)
    assert _all_files_present(latest, saved) and _all_files_present(latest, latest.publication().version)

    # a third run's vacuum sees the compacted-away files (retention 0): the savepoint keeps them
    third = _run(tmp_path, [busy, calm], "home_third", TXNLOG_MAINTENANCE_DRY_RUN="false")
    assert third["run"] == "success", third
    vacuums = [r for r in _history(tmp_path) if r["kind"] == "vacuum" and r["status"] == "done"]
    swept = [r for r in vacuums if r["predicted_files_removed"] == 8]
    assert len(swept) == 1 and swept[0]["actual_files_removed"] == 0  # all 8 are the savepoint's
    assert _all_files_present(latest, saved) and _all_files_present(latest, latest.publication().version)

    again = latest.plan_maintenance(quiet_minutes=0, full_vacuum_days=1000).to_dict()
    assert [a["kind"] for a in again["actions"] if a["kind"] in ("compact", "purge_deletion_vectors")] == []
    theirs = DeltaTable(busy.uri).to_pyarrow_table().sort_by("id")
    assert theirs.column("id").to_pylist() == list(range(80))


def test_a_table_that_cannot_be_planned_fails_the_run_after_the_history(tmp_path: Path) -> None:
    busy, _ = _tables(tmp_path / "lake")
    missing = tmp_path / "lake" / "missing"
    result = _run(tmp_path, [busy], "home_bad", TXNLOG_MAINTENANCE_TABLES=f"{busy.uri},{missing}")
    assert result["run"] == "failed" and result["tasks"]["history[-1]"] == "failed"
    rows = _history(tmp_path)
    error = [r for r in rows if r["decision"] == "error"]
    assert len(error) == 1 and error[0]["table_uri"] == f"file://{missing}"
    assert "TableNotFoundError" in error[0]["error"]
    assert any(r["table_uri"] == f"file://{busy.uri}" for r in rows)  # the others were recorded
