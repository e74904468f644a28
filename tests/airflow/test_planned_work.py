"""Planned maintenance's bookkeeping: work items from real plans, the byte budget, stages, history rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from airflow.sdk import DAG, TaskGroup
from deltalake import DeltaTable

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.hooks.catalog import TxnLogCatalogHook
from airflow_txnlog.operators import _maintenance_history as history
from airflow_txnlog.operators._maintenance_work import STAGES, data_cost, runnable, stage_actions, work_items
from airflow_txnlog.operators.planned_maintenance import TxnLogMaintenancePlanOperator, planned_maintenance

NOW = dt.datetime(2026, 11, 27, 12, tzinfo=dt.UTC)
QUIET = {"quiet_minutes": 0}


def _fragmented(path: Path, commits: int, parts: tuple[str, ...] = ("x",)) -> Table:
    t = Table.create(
        str(path), schema=pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_by=["p"]
    )
    for i in range(commits):
        for p in parts:
            t.write(pa.table({"id": list(range(i * 10, i * 10 + 10)), "p": [p] * 10}))
    return t


def _plan(t: Table, **settings: Any) -> dict[str, Any]:
    return {**t.plan_maintenance(**{**QUIET, **settings}).to_dict(), "conn_id": None}


def test_tables_are_ordered_by_benefit_and_healthy_ones_are_not_run(tmp_path: Path) -> None:
    small = _fragmented(tmp_path / "small", 6)
    big = _fragmented(tmp_path / "big", 12)
    healthy = _fragmented(tmp_path / "healthy", 2)
    items = work_items([_plan(t) for t in (small, healthy, big)])
    assert [i["table"] for i in items] == [big.uri, small.uri, healthy.uri]  # most files removed first
    compact = next(a for a in items[0]["actions"] if a["kind"] == "compact")
    assert compact["benefit"]["files_removed"] == 11 and compact["id"].startswith("a")
    assert "files" not in compact and compact["file_count"] == 12  # the bins carry the paths
    assert [i["table"] for i in runnable(items)] == [big.uri, small.uri]
    assert items[2]["skipped"] and all(s["reason"] for s in items[2]["skipped"])


def test_the_byte_budget_gives_each_table_a_share_then_the_best_and_says_why_the_rest_wait(
    tmp_path: Path,
) -> None:
    tables = [_fragmented(tmp_path / f"t{n}", n) for n in (6, 9, 12)]
    plans = [_plan(t) for t in tables]
    unlimited = work_items(plans)
    costs = {i["table"]: data_cost(a) for i in unlimited for a in i["actions"] if a["kind"] == "compact"}
    smallest, second, best = (t.uri for t in tables)
    budget = costs[best] + costs[second] - 1  # greedy by benefit: the best, then nothing else fits
    share = budget // 3
    assert costs[smallest] <= share < costs[second]  # (the setup: only the smallest fits its share)
    items = {i["table"]: i for i in work_items(plans, byte_budget=budget)}
    # the smallest table's share took its compaction; what the shares left went to the best
    assert any(a["kind"] == "compact" for a in items[smallest]["actions"])
    assert any(a["kind"] == "compact" for a in items[best]["actions"])
    assert not any(a["kind"] == "compact" for a in items[second]["actions"])
    waiting = items[second]["over_budget"]
    assert len(waiting) == 1 and waiting[0]["reason"] == (
        f"over the run's byte budget: {costs[smallest] + costs[best]} bytes taken + {costs[second]} > "
        f"{budget} (tables that waited went first, then each of 3 table(s) with rewrites had a share "
        f"of {share} bytes, then the rest went by benefit)"
    )
    assert [a["kind"] for a in items[second]["actions"]] == [  # the rest of its plan is unaffected
        a["kind"]
        for a in next(i for i in unlimited if i["table"] == second)["actions"]
        if a["kind"] != "compact"
    ]
    assert work_items(plans, byte_budget=0)[0]["over_budget"]  # nothing fits a zero budget


def _cost(name: str, files_removed: int, cost: int) -> dict[str, Any]:
    return {
        "table": name, "asset_uri": f"file://{name}", "conn_id": None,
        "actions": [{"kind": "compact", "cost": {"bytes_read": cost, "bytes_written": 0},
                     "benefit": {"files_removed": files_removed}}],
    }  # fmt: skip


def _compacting(items: list[dict[str, Any]]) -> set[str]:
    return {i["table"] for i in items if any(a["kind"] == "compact" for a in i["actions"])}


def test_one_big_table_takes_no_budget_from_the_small_ones_and_waits_one_run_at_most() -> None:
    """Greedy by benefit, a big table that always ranks first would take the budget every run; with
    shares the small ones get theirs, and the big one, having waited, goes first the next run."""
    plans = [_cost("/big", 3000, 300), *(_cost(f"/small{k}", 40, 50) for k in range(3))]
    first = work_items(plans, byte_budget=320)
    assert _compacting(first) == {"/small0", "/small1", "/small2"}  # 3 x 50 in their shares of 106
    (big,) = [i for i in first if i["table"] == "/big"]
    assert big["over_budget"] and big["over_budget"][0]["reason"].startswith(
        "over the run's byte budget: 150 bytes taken + 300 > 320"
    )
    second = work_items(plans, byte_budget=320, waited={"file:///big": 1})
    assert _compacting(second) == {"/big"}  # its turn: first; the smalls' shares of the 20 left: none
    third = work_items(plans, byte_budget=320, waited={f"file:///small{k}": 1 for k in range(3)})
    assert _compacting(third) == {"/small0", "/small1", "/small2"}


def test_waits_are_counted_from_the_history_runs_in_a_row(tmp_path: Path) -> None:
    base = {"dag_id": "maint", "table_version": 1, "planned_at": None, "kind": "compact", "status": "x"}
    now = dt.datetime.now(dt.UTC)

    def row(run: int, table: str, decision: str, dag: str = "maint") -> dict[str, Any]:
        at = now - dt.timedelta(hours=10 - run)
        return {**base, "dag_id": dag, "run_id": f"r{run}", "recorded_at": at, "table_uri": table,
                "decision": decision}  # fmt: skip

    rows = [
        row(1, "a", "over_budget"), row(2, "a", "action"), row(3, "a", "over_budget"),
        row(4, "a", "over_budget"), row(4, "b", "over_budget"), row(3, "c", "over_budget"),
        row(4, "c", "skip"), row(5, "d", "over_budget", dag="other"),
    ]  # fmt: skip
    history.append_history(str(tmp_path / "h"), rows)
    waited = history.waited_runs(str(tmp_path / "h"), dag_id="maint", now=now)
    assert waited == {"a": 2, "b": 1}  # (c got its turn in run 4; d is another DAG's)
    assert history.waited_runs(str(tmp_path / "none"), dag_id="maint", now=now) == {}


def test_a_full_vacuum_supersedes_the_lite_one_and_each_stage_gets_its_kinds() -> None:
    actions = [
        {"id": "a0", "kind": "compact"},
        {"id": "a1", "kind": "vacuum", "estimate": {"mode": "lite"}},
        {"id": "a2", "kind": "vacuum", "estimate": {"mode": "full"}},
        {"id": "a3", "kind": "checkpoint"},
        {"id": "a4", "kind": "purge_deletion_vectors"},
    ]
    item = {"table": "t", "actions": actions}
    assert [a["id"] for a in stage_actions(item, "optimize")[0]] == ["a0", "a4"]
    run, superseded = stage_actions(item, "vacuum")
    assert ([a["id"] for a in run], [a["id"] for a in superseded]) == (["a2"], ["a1"])
    assert stage_actions(item, "cleanup_log") == ([], [])
    only_lite = {"table": "t", "actions": actions[:2]}
    assert [a["id"] for a in stage_actions(only_lite, "vacuum")[0]] == ["a1"]


def test_history_rows_join_results_and_record_every_decision(tmp_path: Path) -> None:
    t = _fragmented(tmp_path / "t", 8)
    failed = {"table": "/nowhere", "conn_id": None, "error": "TableNotFoundError: x"}
    items = work_items([_plan(t, checkpoint_interval=5), failed])
    compact = next(a for a in items[0]["actions"] if a["kind"] == "compact")
    done = t.run_maintenance(compact, dry_run=False)
    results = [{"table": t.uri, "id": compact["id"], "kind": "compact", "status": "done", "result": done,
                "seconds": 0.5}]  # fmt: skip
    rows = history.history_rows(items, results, dag_id="d", run_id="r", dry_run=False, now=NOW)
    decisions = sum(len(i["actions"]) + len(i["skipped"]) + len(i["over_budget"]) for i in items) + 1
    assert len(rows) == decisions
    row = next(r for r in rows if r["kind"] == "compact")
    assert row["status"] == "done" and row["seconds"] == 0.5
    assert row["predicted_files_removed"] == row["actual_files_removed"] == 7  # 8 files -> 1
    assert row["actual_bytes_written"] == done["actual"]["bytes_after"]
    assert row["committed_version"] == done["version"] and row["rule"] == "min_input_files"
    others = [r for r in rows if r["decision"] == "action" and r["kind"] != "compact"]
    assert others and all(r["status"] == "no_result" for r in others)  # never reported: not done
    error = next(r for r in rows if r["decision"] == "error")
    assert (error["table_uri"], error["status"]) == ("/nowhere", "error")
    assert all(r["rule"] for r in rows if r["decision"] != "error")
    text = history.report(rows)["text"]
    assert "no_result" in text and "error: plan of /nowhere" in text


def test_the_history_table_is_delta_and_two_runs_append(tmp_path: Path) -> None:
    t = _fragmented(tmp_path / "t", 3)
    uri = str(tmp_path / "hist")
    rows = history.history_rows(work_items([_plan(t)]), [], dag_id="d", run_id="r1", dry_run=True, now=NOW)
    assert history.append_history(uri, rows) == 1  # created on first use (version 0), then written
    assert history.append_history(uri, rows) == 2
    assert history.append_history(uri, []) is None  # nothing to record: no commit
    theirs = DeltaTable(uri).to_pyarrow_table()
    assert theirs.num_rows == 2 * len(rows)
    assert set(theirs.column("table_uri").to_pylist()) == {t.uri}
    assert theirs.schema.field("recorded_at").type == pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize("budget", [-1, 1.5, True, "10"])
def test_a_bad_byte_budget_is_refused_at_construction(budget: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="byte_budget"):
        TxnLogMaintenancePlanOperator(task_id="plan", tables=["/t"], byte_budget=budget)


@pytest.mark.parametrize("tables", [[], [1], " , ", 5])
def test_bad_table_lists_are_refused(tables: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="tables"):
        TxnLogMaintenancePlanOperator(task_id="plan", tables=tables)


def test_a_rendered_template_of_tables_is_a_comma_separated_list() -> None:
    op = TxnLogMaintenancePlanOperator(task_id="plan", tables="/a, /b")
    assert op.tables == ["/a", "/b"]
    assert (
        TxnLogMaintenancePlanOperator(task_id="p2", tables="{{ var.value.t }}").tables == "{{ var.value.t }}"
    )


class _TaskInstance:
    """What execute uses of a task instance: xcom_push (recorded)."""

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def test_catalog_planning_skips_folders_without_a_log_and_isolates_each_tables_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = _fragmented(tmp_path / "good", 6)
    (tmp_path / "landing").mkdir()  # an asset of CSV files, say: no Delta log
    catalog = [
        {"uri": f"file://{good.uri}", "conn_id": "txnlog_default"},
        {"uri": f"file://{tmp_path / 'landing'}", "conn_id": "txnlog_default"},
        {"uri": "s3://bucket/t", "conn_id": "team_b_s3"},  # a connection this worker does not have
    ]
    # (the REST call itself is tested against a real api-server in tests/ui)
    monkeypatch.setattr(TxnLogCatalogHook, "tables", lambda self: catalog)
    ti = _TaskInstance()
    work = TxnLogMaintenancePlanOperator(task_id="plan", settings=QUIET).execute({"ti": ti})  # type: ignore[arg-type]
    items = {i["table"]: i for i in ti.pushed["items"]}
    assert [w["table"] for w in work] == [f"file://{good.uri}"]
    landing = items[f"file://{tmp_path / 'landing'}"]
    assert landing["error"] is None and landing["skipped"][0]["rule"] == "has_delta_log"
    assert "not a table" in landing["skipped"][0]["reason"]
    assert "team_b_s3" in items["s3://bucket/t"]["error"]
    rows = history.history_rows(ti.pushed["items"], [], dag_id="d", run_id="r", dry_run=True, now=NOW)
    assert {r["status"] for r in rows if r["table_uri"].endswith("landing")} == {"skipped"}


def test_a_listed_table_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    ti = _TaskInstance()
    TxnLogMaintenancePlanOperator(task_id="plan", tables=[str(tmp_path / "nope")]).execute({"ti": ti})  # type: ignore[arg-type]
    (item,) = ti.pushed["items"]
    assert item["error"].startswith("TableNotFoundError")


def test_planning_workers_give_the_items_one_process_gives(tmp_path: Path) -> None:
    tables = [_fragmented(tmp_path / f"t{i}", 6 + i).uri for i in range(3)] + [str(tmp_path / "nope")]
    settings = {
        **QUIET,
        "now_ms": int(dt.datetime.now(dt.UTC).timestamp() * 1000) + 60_000,
    }  # (one plan time)
    items = []
    for workers in (1, 2):
        ti = _TaskInstance()
        op = TxnLogMaintenancePlanOperator(
            task_id="plan", tables=tables, settings=settings, planning_workers=workers
        )
        op.execute({"ti": ti})  # type: ignore[arg-type]
        items.append(ti.pushed["items"])
    assert items[0] == items[1] and sorted(i["table"] for i in items[1]) == sorted(tables)
    by_table = {i["table"]: i for i in items[1]}
    assert [len(by_table[t]["actions"]) > 0 for t in tables] == [True, True, True, False]
    assert by_table[tables[3]]["error"].startswith("TableNotFoundError")
    with pytest.raises(InvalidArgumentError, match="planning_workers must be a positive integer"):
        TxnLogMaintenancePlanOperator(task_id="bad", tables=tables, planning_workers=0)


def test_built_inside_a_task_group_the_history_reads_the_right_task_ids() -> None:
    with DAG("nested", schedule=None) as dag, TaskGroup("lake"):
        _, _, hist = planned_maintenance(history_uri="/h", tables=["/t"])
    assert set(hist.result_task_ids) <= set(dag.task_dict)
    assert hist.result_task_ids == [f"lake.maintain.{s}" for s in STAGES]


def test_the_catalog_connection_keeps_https(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_TXNLOG_AIRFLOW_API", "https://maint:s3cret@airflow.example.com")
    assert TxnLogCatalogHook().base_url() == "https://airflow.example.com"
    monkeypatch.setenv("AIRFLOW_CONN_TXNLOG_AIRFLOW_API", "http://u:p@127.0.0.1:8080")
    assert TxnLogCatalogHook().base_url() == "http://127.0.0.1:8080"


def test_a_dry_run_action_changes_nothing(tmp_path: Path) -> None:
    t = _fragmented(tmp_path / "t", 6)
    version = t.latest_version()
    item = work_items([_plan(t)])[0]
    for stage in ("checkpoint", "optimize", "vacuum", "cleanup_log"):
        for action in stage_actions(item, stage)[0]:
            t.run_maintenance(action, dry_run=True)
    assert Table.open(t.uri).latest_version() == version
