"""A table's maintenance state at a glance: `planned`, `running`, `committed`, `failed` or `skipped`.

Recorded (from the maintenance-history table, the rows of the table's newest recorded run, i.e. the
run of its newest `recorded_at`):
- `failed`: a row of that run has status `failed`, `no_result` or `error` (what fails the history
  task: operators.planned_maintenance.FAILING);
- `committed`: else, an action of that run is `done`;
- `skipped`: else (only skips, actions over the byte budget, dry runs, conflicts and superseded lite
  vacuums). A `conflict` (a concurrent commit took the action's files) is `skipped`, not `failed`,
  as the history task treats it: nothing was changed and the next plan sees the new state; a
  `dry_run` is `skipped` too, since a dry run changes nothing. The reason says which, in this order:
  conflict, dry run, over budget, skips only.
`since` is the run's `recorded_at`.

In flight (from Airflow's metadata database, not yet recorded): a DAG run in state `running` or
`queued` whose plan task (any task pushing XCom key `items`, as TxnLogMaintenancePlanOperator does)
pushed, in the last `WINDOW` and after the table's newest `recorded_at`, a work item naming the table
(its `asset_uri`, else its `table`, equal to the view's URI, as `history_rows` records it), while
that plan's history task (TxnLogMaintenanceHistoryOperator in the plan's task group) has not
finished. The newest such plan decides:
- `running`: a stage task of the table (TxnLogPlannedActionsOperator in `<group>.<maintain group>.*`
  with the table's map index: its place among the plan's items with actions, what the mapped group
  is expanded over) is past waiting: queued, running, deferred, up for retry / reschedule,
  restarting, or finished (its stages finished, the history task has not recorded them yet).
  `since`: the earliest start (else queue time) of those tasks;
- `planned`: else: the plan named the table and none of its stage tasks has begun (no state yet, or
  `scheduled`: waiting for a pool slot), or the table has no action in this plan (only skips or a
  planning error, which the history task records). `since`: when the plan was pushed.
An in-flight state replaces the recorded one. Runs are looked up among the newest `MAX_RUNS` plans
of the window only: one query for the plans, then the task instances of the runs whose plan names
the table, newest first, until one is in flight (usually one query).
The DAG id and run id are shown only to a user who may read that DAG (the caller's `may_see_dag`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FAILED = ("failed", "no_result", "error")  # the statuses that fail a run's history task
WINDOW = dt.timedelta(hours=24)
MAX_RUNS = 50
RUN_STATES = ("running", "queued")
PLAN_KEY = "items"  # operators.planned_maintenance.ITEMS_KEY
HISTORY_OPERATOR = "TxnLogMaintenanceHistoryOperator"
STAGE_OPERATOR = "TxnLogPlannedActionsOperator"
FINISHED = ("success", "failed", "skipped", "upstream_failed", "removed")
NOT_BEGUN = (None, "scheduled", "removed")


def _ms(value: dt.datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def _error_class(error: object) -> str:
    return str(error).split(":", 1)[0]


def recorded_state(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The state of the table's newest recorded run, from that run's history rows (None: none)."""
    if not rows:
        return None
    head = {"since": _ms(rows[0]["recorded_at"]), "dag_id": rows[0]["dag_id"], "run_id": rows[0]["run_id"]}
    failed = [r for r in rows if r["status"] in FAILED]
    if failed:
        said = [
            f"{r['kind']} {r['status']}" + (f" ({_error_class(r['error'])})" if r.get("error") else "")
            for r in failed
        ]
        return {**head, "state": "failed", "reason": ", ".join(said)}
    done = [r for r in rows if r["decision"] == "action" and r["status"] == "done"]
    if done:
        versions = [v for r in done if (v := r.get("committed_version")) is not None]
        at = f" (version {max(versions)})" if versions else ""
        return {**head, "state": "committed", "reason": "done: " + ", ".join(r["kind"] for r in done) + at}
    return {**head, "state": "skipped", "reason": _skipped_reason(rows)}


def _skipped_reason(rows: Sequence[Mapping[str, Any]]) -> str:
    def kinds(status: str) -> str:
        return ", ".join(sorted({str(r["kind"]) for r in rows if r["status"] == status}))

    if any(r["status"] == "conflict" for r in rows):
        return f"conflict: {kinds('conflict')} lost to a concurrent commit (the next plan sees it)"
    dry = sum(r["status"] == "dry_run" for r in rows)
    if dry:
        return f"dry run: {dry} action(s) reported, nothing changed"
    if any(r["status"] == "over_budget" for r in rows):
        return f"over budget: {kinds('over_budget')}"
    return f"nothing to do: {sum(r['status'] == 'skipped' for r in rows)} skip(s)"


@dataclass(frozen=True)
class Plan:
    """A plan task's XCom `items` in a DAG run that has not finished."""

    dag_id: str
    run_id: str
    task_id: str
    pushed_at: dt.datetime
    items: Any  # the work items as pushed (checked when read)


@dataclass(frozen=True)
class TaskState:
    """One task instance of a DAG run."""

    task_id: str
    map_index: int
    state: str | None
    operator: str | None
    start_date: dt.datetime | None
    queued_at: dt.datetime | None


def _group(task_id: str) -> str:
    """The task group a task id is in ("" at the top): `g.plan` -> `g`."""
    return task_id.rpartition(".")[0]


def table_item(items: object, uri: str) -> tuple[Mapping[str, Any], int | None] | None:
    """(the work item naming `uri`, its map index in the mapped group: its place among the items
    with actions, None when it has none), or None when the plan does not name the table."""
    if not isinstance(items, list):
        return None
    index = 0
    for item in items:
        if not isinstance(item, Mapping):
            continue
        if (item.get("asset_uri") or item.get("table")) == uri:
            return item, index if item.get("actions") else None
        if item.get("actions"):
            index += 1
    return None


def plan_state(plan: Plan, tasks: Iterable[TaskState], uri: str) -> dict[str, Any] | None:
    """The in-flight state `plan` gives the table (None: the plan does not name it, or its history
    task finished or is not there: then the history table says it)."""
    found = table_item(plan.items, uri)
    group = _group(plan.task_id)
    tasks = list(tasks)
    history = [t for t in tasks if t.operator == HISTORY_OPERATOR and _group(t.task_id) == group]
    if found is None or not history or all(t.state in FINISHED for t in history):
        return None
    item, index = found
    head = {"dag_id": plan.dag_id, "run_id": plan.run_id, "since": _ms(plan.pushed_at)}
    if index is None:
        what = (
            f"the plan could not be made ({_error_class(item['error'])})"
            if item.get("error")
            else "no action"
        )
        return {**head, "state": "planned", "reason": f"{what}; recorded when the run's history task runs"}
    stages = [
        t
        for t in tasks
        if t.operator == STAGE_OPERATOR and t.map_index == index and _group(_group(t.task_id)) == group
    ]
    begun = [t for t in stages if t.state not in NOT_BEGUN]
    if not begun:
        waiting = " (waiting for a pool slot)" if any(t.state == "scheduled" for t in stages) else ""
        return {**head, "state": "planned", "reason": f"{len(item['actions'])} action(s) to run{waiting}"}
    starts = [s for t in begun if (s := t.start_date or t.queued_at) is not None]
    since = _ms(min(starts)) if starts else head["since"]
    said = ", ".join(f"{t.task_id.rpartition('.')[2]} {t.state}" for t in begun)
    return {**head, "since": since, "state": "running", "reason": said}


def in_flight(
    plans: Iterable[Plan],
    tasks_of: Callable[[Plan], Iterable[TaskState]],
    uri: str,
    *,
    after: dt.datetime | None,
) -> dict[str, Any] | None:
    """The state of the newest plan (pushed after `after`) that names the table and is in flight;
    `tasks_of(plan)` gives its run's task instances (asked only for plans naming the table)."""
    for plan in sorted(plans, key=lambda p: p.pushed_at, reverse=True):
        if after is not None and plan.pushed_at <= after:
            break
        if table_item(plan.items, uri) is None:
            continue
        state = plan_state(plan, tasks_of(plan), uri)
        if state is not None:
            return state
    return None


def in_flight_from_db(uri: str, after: dt.datetime | None) -> dict[str, Any] | None:
    """`in_flight` over Airflow's metadata database (the api-server's): the plans of the last
    `WINDOW` in running / queued DAG runs, newest `MAX_RUNS` first, and one run's task instances."""
    from airflow.utils.session import create_session  # noqa: PLC0415 - api-server only

    with create_session() as session:
        now = dt.datetime.now(dt.UTC)
        since = now - WINDOW if after is None else max(now - WINDOW, after)
        return in_flight(_plans(session, since), lambda p: _tasks(session, p), uri, after=after)


def _plans(session: Any, since: dt.datetime) -> list[Plan]:
    from airflow.models.dagrun import DagRun  # noqa: PLC0415
    from airflow.models.xcom import XComModel  # noqa: PLC0415
    from sqlalchemy import select  # noqa: PLC0415

    query = (
        select(XComModel)
        .join(DagRun, DagRun.id == XComModel.dag_run_id)
        .where(
            XComModel.key == PLAN_KEY,
            XComModel.map_index == -1,
            XComModel.timestamp > since,
            DagRun.state.in_(RUN_STATES),
        )
        .order_by(XComModel.timestamp.desc())
        .limit(MAX_RUNS)
    )
    return [
        Plan(x.dag_id, x.run_id, x.task_id, x.timestamp, XComModel.deserialize_value(x))
        for x in session.scalars(query)
    ]


def _tasks(session: Any, plan: Plan) -> list[TaskState]:
    from airflow.models.taskinstance import TaskInstance as TI  # noqa: PLC0415
    from sqlalchemy import select  # noqa: PLC0415

    rows = session.execute(
        select(TI.task_id, TI.map_index, TI.state, TI.operator, TI.start_date, TI.queued_dttm).where(
            TI.dag_id == plan.dag_id,
            TI.run_id == plan.run_id,
            TI.operator.in_((HISTORY_OPERATOR, STAGE_OPERATOR)),
        )
    )
    return [TaskState(r[0], r[1], _text(r[2]), r[3], r[4], r[5]) for r in rows]


def _text(state: object) -> str | None:
    """A task instance state as its value (`running`), whether the column gives a str or an enum."""
    return None if state is None else str(getattr(state, "value", state))
