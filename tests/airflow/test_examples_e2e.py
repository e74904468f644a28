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
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
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
    log = out / "airflow.log"
    logs = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:] + logs
    return proc


@pytest.fixture(scope="module")
def demo(demo_run: subprocess.CompletedProcess[str]) -> tuple[Path, str]:
    """(the table, what the demo printed on the terminal)."""
    out = Path(demo_run.stdout.split("Airflow's and Spark's logs go to ", 1)[1].splitlines()[0]).parent
    return out / "orders", demo_run.stdout


def test_every_dag_ran_and_the_table_history_shows_it(demo: tuple[Path, str]) -> None:
    table, output = demo
    ops = [h["operation"] for h in reversed(Table.open(str(table)).history())]
    # the first write created the table (version 0, as Delta's first write to a new path); the
    # day-1 re-run added nothing
    assert ops[:3] == ["WRITE", "WRITE", "WRITE"]
    assert ops[3:6] == ["MERGE", "MERGE", "RESTORE"]  # good merge, bad merge, restore
    assert "VACUUM START" in ops and "VACUUM END" in ops
    for dag_id in ("txnlog_ingest", "txnlog_guarded_merge", "txnlog_maintenance", "txnlog_downstream"):
        assert f"{dag_id} " in output
    assert "table equal to its pre-run rows: True" in output


def test_planned_maintenance_compacted_what_its_plan_named_and_recorded_it(demo: tuple[Path, str]) -> None:
    table, output = demo
    rows = DeltaTable(str(table.parent / "maintenance_history")).to_pyarrow_table().to_pylist()
    done = [r for r in rows if r["decision"] == "action" and r["status"] == "done"]
    compacted = [r for r in done if r["kind"] == "compact" and r["table_uri"] == f"file://{table}"]
    assert compacted and all(r["actual_files_removed"] == r["predicted_files_removed"] for r in compacted)
    optimized = {h["version"] for h in Table.open(str(table)).history() if h["operation"] == "OPTIMIZE"}
    assert {r["committed_version"] for r in compacted} <= optimized
    assert all(r["reason"] for r in rows if r["decision"] == "skip")
    assert "txnlog_maintenance 2024-06-03: run success" in output
    # the demo routes every planned rewrite to Spark (spark_min_bytes=0): each one ran there
    ran = [line.strip() for line in output.splitlines() if line.strip().startswith("optimize ")]
    assert ran and all(line.endswith(": done on spark") for line in ran), ran


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
    """Writes emit their own event; the guarded merge (write-audit-publish) emits only `publish`'s."""
    table, output = demo
    events = _asset_events(output)
    writers = [f"{d}.{t}" for d, t, _ in events]
    assert writers.count("txnlog_ingest.append_orders") == 4  # 3 days + the manual run; no re-run event
    assert "txnlog_ingest.drop_old_partitions" not in writers  # nothing older than 30 days
    assert "txnlog_guarded_merge.restore" not in writers  # the callback had restored already
    assert "txnlog_guarded_merge.merge_corrections" not in writers  # unaudited: no event
    history = {h["version"]: h for h in Table.open(str(table)).history()}
    published: int | None = None
    for dag_id, task_id, extra in events:
        entry = history[extra["version"]]
        if extra["operation"] == "PUBLISH":  # names the audited MERGE and the channel's version before
            assert (entry["operation"], extra["previous_version"]) == ("MERGE", published)
            published = extra["version"]
        else:
            assert extra["operation"] == entry["operation"]
            assert extra["previous_version"] == (extra["version"] - 1 if extra["version"] else None)
            assert extra["read_version"] == entry.get("readVersion")  # (version 0 read nothing)
        assert (extra["dag_id"], extra["task_id"]) == (dag_id, task_id)
        assert extra["run_id"] == entry["job"]["jobRunId"]  # the commit's provenance names the same run
        assert {"num_added_files", "num_removed_files"} <= set(extra)
    first = events[0][2]
    assert (first["version"], first["operation"], first["num_added_rows"], first["num_removed_rows"]) == (
        0,
        "WRITE",
        50,
        0,
    )
    publishes = [x["version"] for d, t, x in events if t == "publish"]
    assert publishes[0] == 3  # the good merge; the bad one (4) was restored, never published
    assert len(publishes) == 2  # the good merge and the manual run's


def test_the_ingest_quarantines_bad_orders_once_per_run(demo: tuple[Path, str]) -> None:
    """Two bad orders a day: quarantined in 3 dated runs and the manual one; day 1's re-run adds none."""
    table, output = demo
    quarantine = Table.open(f"{table}_quarantine").snapshot().to_arrow().to_pylist()
    assert len(quarantine) == 8 and len({r["order_id"] for r in quarantine}) == 8
    assert all(r["_broken_rules"] == ["positive_amount"] and r["amount"] < 0 for r in quarantine)
    assert Table.open(str(table)).snapshot().to_arrow(filter="amount < 0").num_rows == 0
    ingest = [x for d, t, x in _asset_events(output) if t == "append_orders"]
    assert all(
        x["expectations"]["rules"]["positive_amount"] == {"action": "quarantine", "rows": 2} for x in ingest
    )


def test_the_release_example_released_one_cut_and_rolled_the_bad_run_back(demo: tuple[Path, str]) -> None:
    from airflow_txnlog.engine import Releases  # noqa: PLC0415

    table, output = demo
    assert "txnlog_release 2024-06-03: run success" in output
    assert "txnlog_release 2024-06-04 {'inject_bad_rows': True}: run failed" in output
    log = Releases.open(str(table.parent / "release" / "_releases" / "nightly"))
    history = log.history()
    assert [(r.sequence, r.kind) for r in history] == [(1, "rollback"), (0, "publish")]
    for uri in history[1].versions:  # each table back to release 0's rows
        assert history[0].snapshot(uri).to_arrow() == history[1].snapshot(uri).to_arrow()
        assert Table.open(uri).latest_version() == history[0].versions[uri]  # nothing unreleased left


def test_the_examples_run_without_a_logical_date(demo: tuple[Path, str]) -> None:
    _, output = demo
    for dag_id in ("txnlog_ingest", "txnlog_guarded_merge"):
        assert f"{dag_id} manual (no logical date): run success" in output


def _report(output: str) -> list[str]:
    return output.split("==> Report", 1)[1].splitlines()


def test_the_demo_ends_with_a_report_of_what_happened(demo: tuple[Path, str]) -> None:
    table, output = demo
    told_runs = [line.split()[0] for line in output.splitlines() if ": run " in line and "; tasks " in line]
    report = _report(output)
    start = report.index("    runs (DAG, kind, state, table version before -> after):") + 1
    run_lines = report[start : start + len(told_runs)]
    assert [line.split()[0] for line in run_lines] == told_runs  # every run, in order
    assert run_lines[0].split()[-3:] == ["table", "->", "0"]  # the first ingest created the table
    t = Table.open(str(table))
    history = t.history()
    restore = next(h for h in history if h["operation"] == "RESTORE")
    target = restore["operationParameters"]["version"]
    assert any(
        line.startswith(f"    restore: version {restore['version']} restored the table to version {target}")
        for line in report
    )
    events = _asset_events(output)
    assert f"    asset events: {len(events)}" in report
    for _, _, extra in events:
        assert any(
            line.strip().startswith(f"version {extra['version']} {extra['operation']} by ") for line in report
        )
    health = next(line for line in report if line.startswith("    health: "))
    assert health.startswith(f"    health: version {t.latest_version()}, ")
    assert f"before the runs, {t.latest_version()} after them" in "\n".join(report)


def test_airflow_and_spark_logs_go_to_the_file_not_the_terminal(
    demo: tuple[Path, str], demo_run: subprocess.CompletedProcess[str]
) -> None:
    table, output = demo
    log = table.parent / "airflow.log"
    assert f"logs: {log}" in output  # the report names the file
    logs = log.read_text(errors="replace")
    assert "[info" in logs and "DagRun Finished" in logs  # Airflow's task logs
    assert "log4j" in logs  # the Spark driver JVM's
    assert "[info" not in output and "log4j" not in output
    assert demo_run.stderr.strip() == ""
