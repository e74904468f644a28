"""The maintenance state of a table (tables_maintenance_state), without a server: each state from
recorded history rows and from a run in flight, and what the maintenance payload says of it.

The metadata-database lookup itself runs on a real api-server in test_tables_api.py."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.operators import _maintenance_history as history
from airflow_txnlog.operators._maintenance_work import runnable
from airflow_txnlog.plugins import tables_maintenance
from airflow_txnlog.plugins.tables_maintenance_state import (
    Plan,
    TaskState,
    in_flight,
    plan_state,
    recorded_state,
    table_item,
)
from tests.ui.test_tables_units import _known

pytestmark = pytest.mark.airflow
T0 = dt.datetime(2026, 11, 27, 12, tzinfo=dt.UTC)
URI = "file:///lake/orders"


def _row(status: str, decision: str = "action", kind: str = "compact", **more: Any) -> dict[str, Any]:
    return {"dag_id": "m", "run_id": "r", "recorded_at": T0, "decision": decision, "kind": kind,
            "status": status, "error": None, **more}  # fmt: skip


SKIP = _row("skipped", "skip", "vacuum")


@pytest.mark.parametrize(
    ("rows", "state", "reason"),
    [
        # failed: any failed / no_result / error row, even beside a done action
        ([_row("done"), _row("failed", kind="vacuum", error="OSError: https://endpoint")], "failed",
         "vacuum failed (OSError)"),  # (the error's class only)
        ([_row("done"), _row("no_result", kind="checkpoint")], "failed", "checkpoint no_result"),
        ([_row("error", "error", "plan", error="TableNotFoundError: x"), SKIP], "failed",
         "plan error (TableNotFoundError)"),
        # committed: a done action and nothing failed, whatever else happened
        ([_row("done", committed_version=7), _row("conflict", kind="vacuum"), SKIP], "committed",
         "done: compact (version 7)"),
        ([_row("done", kind="checkpoint"), _row("over_budget", "over_budget")], "committed",
         "done: checkpoint"),
        # skipped: nothing changed; a conflict and a dry run say so
        ([_row("conflict"), _row("dry_run", kind="vacuum"), SKIP], "skipped", "conflict: compact lost"),
        ([_row("dry_run"), _row("dry_run", kind="vacuum"), SKIP], "skipped", "dry run: 2 action(s)"),
        ([_row("over_budget", "over_budget"), SKIP], "skipped", "over budget: compact"),
        ([_row("superseded", kind="vacuum"), SKIP], "skipped", "nothing to do: 1 skip(s)"),
        ([SKIP, SKIP], "skipped", "nothing to do: 2 skip(s)"),
    ],
)  # fmt: skip
def test_the_recorded_state_of_the_newest_run(rows: list[dict[str, Any]], state: str, reason: str) -> None:
    got = recorded_state(rows)
    assert got is not None
    assert (got["state"], got["since"], got["run_id"]) == (state, int(T0.timestamp() * 1000), "r")
    assert got["reason"].startswith(reason), got["reason"]
    assert "endpoint" not in got["reason"]
    assert recorded_state([]) is None


def _items() -> list[dict[str, Any]]:
    action = [{"id": "a", "kind": "compact"}]
    return [
        {"table": "/lake/a", "asset_uri": "file:///lake/a", "actions": action, "skipped": []},
        {"table": "/lake/quiet", "asset_uri": "file:///lake/quiet", "actions": [], "skipped": [{}]},
        {"table": "/lake/broken", "asset_uri": None, "actions": [], "error": "OSError: denied"},
        {"table": "/lake/orders", "asset_uri": URI, "actions": action * 2, "skipped": []},
    ]


def test_a_table_s_map_index_is_its_place_among_the_items_with_actions() -> None:
    """What the mapped group is expanded over (`runnable`, operators._maintenance_work)."""
    items = _items()
    item, index = table_item(items, URI) or ({}, -1)
    assert index == 1 == runnable(items).index(item)
    assert table_item(items, "file:///lake/quiet") == (items[1], None)
    assert table_item(items, "/lake/broken") == (items[2], None)  # no asset form: named as listed
    assert table_item(items, "file:///lake/other") is None and table_item("not a list", URI) is None


def _plan(task_id: str = "plan", at: dt.datetime = T0) -> Plan:
    return Plan("maint", "run_1", task_id, at, _items())


def _tasks(mine: dict[str, str | None], *, group: str = "", history: str | None = None) -> list[TaskState]:
    """The run's tasks: the table (map index 1) in the given stage states, table `a` (map index 0)
    running its optimize, and the history task."""
    p = f"{group}." if group else ""
    stages = ("checkpoint", "optimize", "vacuum", "cleanup_log")
    started = T0 + dt.timedelta(minutes=5)
    out = [TaskState(f"{p}history", -1, history, "TxnLogMaintenanceHistoryOperator", None, None)]
    for stage in stages:
        state = mine.get(stage)
        out.append(TaskState(f"{p}maintain.{stage}", 1, state, "TxnLogPlannedActionsOperator",
                             started if state not in (None, "scheduled") else None, None))  # fmt: skip
        other = "running" if stage == "optimize" else None
        out.append(TaskState(f"{p}maintain.{stage}", 0, other, "TxnLogPlannedActionsOperator", T0, None))
    return out


def test_planned_until_one_of_the_table_s_stages_begins() -> None:
    ms = int(T0.timestamp() * 1000)
    got = plan_state(_plan(), _tasks({}), URI)  # another table's optimize runs: not this one's
    assert got == {"dag_id": "maint", "run_id": "run_1", "since": ms, "state": "planned",
                   "reason": "2 action(s) to run"}  # fmt: skip
    waiting = plan_state(_plan(), _tasks({"checkpoint": "scheduled"}), URI)
    assert waiting is not None and waiting["state"] == "planned" and "pool slot" in waiting["reason"]
    quiet = plan_state(_plan(), _tasks({}), "file:///lake/quiet")
    assert quiet is not None and quiet["state"] == "planned" and quiet["reason"].startswith("no action")
    broken = plan_state(_plan(), _tasks({}), "/lake/broken")
    assert broken is not None and broken["state"] == "planned" and "(OSError)" in broken["reason"]


@pytest.mark.parametrize(
    ("stages", "reason"),
    [
        ({"checkpoint": "queued"}, "checkpoint queued"),
        ({"checkpoint": "running"}, "checkpoint running"),
        ({"checkpoint": "success", "optimize": "up_for_retry"}, "checkpoint success, optimize up_for_retry"),
        ({"checkpoint": "success"}, "checkpoint success"),  # between two stages
        ({s: "success" for s in ("checkpoint", "optimize", "vacuum", "cleanup_log")}, "checkpoint success"),
    ],
)
def test_running_once_a_stage_of_the_table_begins(stages: dict[str, str], reason: str) -> None:
    got = plan_state(_plan(), _tasks(stages), URI)
    assert got is not None and got["state"] == "running" and got["reason"].startswith(reason)
    assert got["since"] == int((T0 + dt.timedelta(minutes=5)).timestamp() * 1000)  # its first start


def test_a_plan_whose_history_finished_or_is_elsewhere_is_not_in_flight() -> None:
    for done in ("success", "failed", "upstream_failed"):  # the history table says what happened
        assert plan_state(_plan(), _tasks({"checkpoint": "running"}, history=done), URI) is None
    assert plan_state(_plan(), _tasks({"checkpoint": "running"}, history="running"), URI) is not None
    # planned maintenance inside a task group: the plan's group decides which tasks are its own
    grouped = plan_state(_plan("nightly.plan"), _tasks({"checkpoint": "running"}, group="nightly"), URI)
    assert grouped is not None and grouped["state"] == "running"
    assert plan_state(_plan("nightly.plan"), _tasks({"checkpoint": "running"}), URI) is None  # no history
    assert plan_state(_plan(), _tasks({"checkpoint": "running"}, group="nightly"), URI) is None
    assert plan_state(_plan(), _tasks({}), "file:///lake/other") is None


def test_the_newest_plan_after_the_newest_record_decides() -> None:
    later = T0 + dt.timedelta(hours=1)
    asked: list[str] = []

    def tasks_of(plan: Plan) -> list[TaskState]:
        asked.append(plan.run_id)
        return _tasks({"checkpoint": "running"} if plan.run_id == "new" else {})

    plans = [Plan("m", "old", "plan", T0, _items()), Plan("m", "new", "plan", later, _items()),
             Plan("m", "unrelated", "plan", later + dt.timedelta(hours=1), [])]  # fmt: skip
    got = in_flight(plans, tasks_of, URI, after=None)
    assert got is not None and (got["run_id"], got["state"]) == ("new", "running")
    assert asked == ["new"]  # a plan not naming the table costs no task query
    assert in_flight(plans, tasks_of, URI, after=later) is None  # recorded after the newest plan
    old = in_flight(plans, tasks_of, URI, after=T0 - dt.timedelta(seconds=1))
    assert old is not None and old["run_id"] == "new"


def test_the_payload_states_the_newest_recorded_run_unless_one_is_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "history")
    base = {"dag_id": "maint", "table_uri": URI, "dry_run": False, "decision": "action", "kind": "compact"}
    history.append_history(uri, [
        {**base, "run_id": "r1", "recorded_at": T0, "status": "failed", "error": "OSError: x"},
        {**base, "run_id": "r2", "recorded_at": T0 + dt.timedelta(hours=1), "status": "done"},
        {**base, "run_id": "r0", "recorded_at": T0 - dt.timedelta(hours=1), "status": "done"},
        {**base, "table_uri": "file:///lake/other", "run_id": "r3", "recorded_at": T0 + dt.timedelta(hours=2),
         "status": "failed"},
    ])  # fmt: skip
    monkeypatch.setenv("AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI", uri)
    got = tables_maintenance.maintenance(_known(URI), limit=50, may_see_dag=lambda d: True)["state"]
    assert (got["state"], got["run_id"], got["dag_id"]) == ("committed", "r2", "maint")
    assert got["runLink"] == "../dags/maint/runs/r2"
    asked: list[Any] = []

    def flying(table: str, after: dt.datetime | None) -> dict[str, Any]:
        asked.append((table, after))
        return {
            "state": "running",
            "dag_id": "maint",
            "run_id": "r9",
            "since": 1,
            "reason": "optimize running",
        }

    hidden = tables_maintenance.maintenance(
        _known(URI), limit=50, may_see_dag=lambda d: False, in_flight=flying
    )
    assert asked == [(URI, T0 + dt.timedelta(hours=1))]  # after the newest record
    assert hidden["state"] == {"state": "running", "dag_id": "", "run_id": "", "since": 1,
                               "reason": "optimize running", "runLink": None}  # fmt: skip
    assert hidden["lastPlan"]["run_id"] == ""

    def broken(table: str, after: dt.datetime | None) -> None:
        raise RuntimeError("database is locked")

    fallback = tables_maintenance.maintenance(_known(URI), limit=50, may_see_dag=bool, in_flight=broken)
    assert fallback["state"]["state"] == "committed" and fallback["state"]["inFlightError"] == "RuntimeError"
    never = tables_maintenance.maintenance(_known("file:///lake/never"), limit=50, may_see_dag=bool)
    assert never["state"] is None and never["lastPlan"] is None
    monkeypatch.delenv("AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI")
    unconfigured = tables_maintenance.maintenance(_known(URI), limit=5, may_see_dag=bool, in_flight=flying)
    assert unconfigured["configured"] is False and unconfigured["state"]["state"] == "running"
