"""What the check runs against the deployment, in order, and what it expects (the tables at the top).

Phases (sequential where the table's state matters, overlapped where it does not):
0. the watcher DAG unpaused and the sensor DAG triggered before any writer: the sensor must reach
   `deferred` and the watcher's trigger must be running in the triggerer;
1. both ingest runs (Spark) and, while they run, the driver commits `WATCHER_COMMITS` versions to
   the watched table one at a time, each followed by one watcher run;
2. the guarded merge with good data, then 3. with bad data (sequential: the bad run's restore must
   see only its own commits after its savepoint);
4. planned maintenance (the catalog, acting), then 5. the fixed-schedule one; then the downstream
   runs the asset events caused are waited for.
Runs with a logical date use the DAG's next scheduled date, so unpausing a scheduled DAG creates no
extra (Spark-costly) scheduled run: the scheduler finds that date taken. The example DAGs' schedules
(@daily, @weekly) turn at a UTC midnight: a scenario that spans one would see the scheduler's own run
of the next interval do work the check's runs expect to do, so a scenario that would start less than
`SCENARIO_BUDGET_S` before a UTC midnight first waits until just after it (`clear_of_midnight`; the
clock it reads is `now()`, which `TXNLOG_DEPLOY_CHECK_NOW` may set for a test of the rule).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .api import AirflowApi
from .stack import Stack


@dataclass(frozen=True)
class RunPlan:
    key: str
    dag_id: str
    via: str  # "cli" (`airflow dags trigger`) or "api" (POST /dagRuns)
    logical: str | None  # "next": the DAG's next scheduled logical date; None: no logical date
    expect: str  # final run state
    conf: dict[str, Any] | None = None
    tasks: dict[str, str] = field(default_factory=dict)  # task_id -> expected final state


# ---- expectations: adjust here when the example DAGs change -----------------------------------
RUNS = (
    RunPlan("sensor", "deploy_check_sensor", "api", None, "success", tasks={"wait_for_write": "success"}),
    RunPlan("ingest_dated", "txnlog_ingest", "cli", "next", "success"),
    RunPlan("ingest_manual", "txnlog_ingest", "cli", None, "success"),
    RunPlan(
        "merge_good",
        "txnlog_guarded_merge",
        "api",
        None,
        "success",
        {"inject_bad_rows": False},
        tasks={"audit": "success", "publish": "success", "restore": "skipped"},
    ),
    RunPlan(
        "merge_bad",
        "txnlog_guarded_merge",
        "cli",
        None,
        "failed",
        {"inject_bad_rows": True},
        tasks={"audit": "failed", "publish": "upstream_failed", "restore": "success"},
    ),
    RunPlan(
        "maintenance",
        "txnlog_maintenance",
        "api",
        "next",
        "success",
        tasks={"plan": "success", "history": "success"},
    ),
    RunPlan("maintenance_fixed", "txnlog_maintenance_fixed", "api", "next", "success"),
    RunPlan(
        "release_good",
        "txnlog_release",
        "api",
        None,
        "success",
        {"inject_bad_rows": False},
        tasks={"audit": "success", "release": "success", "rollback": "skipped"},
    ),
    RunPlan(
        "release_bad",
        "txnlog_release",
        "cli",
        None,
        "failed",
        {"inject_bad_rows": True},
        tasks={"audit": "failed", "release": "upstream_failed", "rollback": "success"},
    ),
)
PHASES = (
    ("ingest_dated", "ingest_manual"),
    ("merge_good",),
    ("merge_bad",),
    ("maintenance",),
    ("maintenance_fixed",),
    ("release_good",),
    ("release_bad",),
)
ASSET_DAGS = ("txnlog_downstream", "deploy_check_watcher")  # asset-scheduled: any runs must succeed
WATCHER_COMMITS = 3  # versions the driver commits to the watched table; one watcher run each
NO_EVENT_TASKS = ("drop_old_partitions", "health", "checkpoint", "optimize", "vacuum", "cleanup_log")
RUN_TIMEOUT = 420  # seconds for one phase's runs (Spark under load)
SCENARIO_BUDGET_S = 10 * 60  # the scenario takes 5-8 minutes (docs/deployment.md): it must fit a day
# -----------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What happened, for the checks and the report."""

    run_ids: dict[str, str] = field(default_factory=dict)  # plan key -> run_id
    sensor_deferred: bool = False
    watcher_versions: list[int] = field(default_factory=list)  # versions the driver committed
    timings: dict[str, float] = field(default_factory=dict)


def say(text: str) -> None:
    print(f"[deploy-check {time.strftime('%H:%M:%S')}] {text}", flush=True)


def wait_for(what: str, predicate: Any, timeout: float, poll: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(poll)


def create_watched_table(stack: Stack) -> None:
    """Version 0 of the watched table, written as an outside writer that names itself."""
    from airflow_txnlog.engine import Table  # noqa: PLC0415 - after the environment is known
    from airflow_txnlog.engine.write.provenance import provenance  # noqa: PLC0415

    schema = pa.schema([("id", pa.int64()), ("note", pa.string())])
    with provenance(dag_id="deploy_check_driver", task_id="create", run_id="driver"):
        Table.create(str(stack.watched), schema=schema)


def commit_watched(stack: Stack, n: int) -> int:
    from airflow_txnlog.engine import Table  # noqa: PLC0415
    from airflow_txnlog.engine.write.provenance import provenance  # noqa: PLC0415

    rows = pa.table({"id": [n], "note": [f"commit {n}"]})
    with provenance(dag_id="deploy_check_driver", task_id="append", run_id=f"driver-{n}"):
        return Table.open(str(stack.watched)).write(rows)


def trigger(stack: Stack, api: AirflowApi, plan: RunPlan, dags: dict[str, Any]) -> str:
    logical = dags[plan.dag_id]["next_dagrun_logical_date"] if plan.logical == "next" else None
    if plan.logical == "next" and not logical:
        raise RuntimeError(f"{plan.dag_id} has no next scheduled logical date")
    if plan.via == "api":
        return api.trigger(plan.dag_id, logical_date=logical, conf=plan.conf)
    run_id = f"deploy_check__{plan.key}"
    args = ["dags", "trigger", plan.dag_id, "--run-id", run_id]
    if logical:
        args += ["--logical-date", logical]
    if plan.conf:
        import json  # noqa: PLC0415

        args += ["--conf", json.dumps(plan.conf)]
    stack.airflow(*args)
    return run_id


def ti_state(api: AirflowApi, dag_id: str, run_id: str, task_id: str) -> str | None:
    ti = api.task_instances(dag_id, run_id).get(task_id)
    return None if ti is None else ti.get("state")


def watcher_started(stack: Stack) -> bool:
    """The watcher trigger logs `watching <table> after version N` once it has stored its cursor."""
    return f"watching {stack.watched} after version" in stack.log("triggerer").read_text(errors="replace")


def now() -> dt.datetime:
    """The check's clock: UTC now, or `TXNLOG_DEPLOY_CHECK_NOW` (ISO 8601) when set."""
    given = os.environ.get("TXNLOG_DEPLOY_CHECK_NOW")
    return dt.datetime.fromisoformat(given) if given else dt.datetime.now(dt.UTC)


def clear_of_midnight(at: dt.datetime, budget_s: float = SCENARIO_BUDGET_S) -> float:
    """Seconds to wait at `at` so that a scenario of `budget_s` seconds spans no UTC midnight (the
    daily and weekly schedules' boundary): 0 when it fits before the next one, else until 30 s after."""
    at = at.astimezone(dt.UTC)
    midnight = dt.datetime.combine(at.date() + dt.timedelta(days=1), dt.time(), dt.UTC)
    left = (midnight - at).total_seconds()
    return 0.0 if left > budget_s else left + 30.0


def run_scenario(stack: Stack, api: AirflowApi, out: Outcome) -> None:
    wait = clear_of_midnight(now())
    if wait:
        say(f"a UTC midnight falls within the scenario's {SCENARIO_BUDGET_S} s: waiting {wait:.0f} s for it")
        time.sleep(wait)
    out.timings["waited for midnight"] = wait
    plans = {p.key: p for p in RUNS}
    dags = api.dags()
    t0 = time.monotonic()
    api.unpause("deploy_check_watcher")  # its trigger starts while the sensor's run gets going
    api.unpause("deploy_check_sensor")
    out.run_ids["sensor"] = trigger(stack, api, plans["sensor"], dags)
    say(f"sensor run {out.run_ids['sensor']} triggered; waiting for it to defer")
    wait_for(
        "the sensor to be deferred",
        lambda: ti_state(api, "deploy_check_sensor", out.run_ids["sensor"], "wait_for_write") == "deferred",
        timeout=180,
    )
    out.sensor_deferred = True
    wait_for("the watcher's trigger to start", lambda: watcher_started(stack), timeout=120)
    out.timings["sensor and watcher armed"] = time.monotonic() - t0
    api.unpause("txnlog_downstream")
    for index, keys in enumerate(PHASES):
        start = time.monotonic()
        for key in keys:
            out.run_ids[key] = trigger(stack, api, plans[key], dags)
            api.unpause(plans[key].dag_id)
            say(f"triggered {plans[key].dag_id} ({key}) as {out.run_ids[key]}")
        if index == 0:
            watch_commits(stack, api, out)
        for key in keys:
            run = api.wait_run(plans[key].dag_id, out.run_ids[key], timeout=RUN_TIMEOUT)
            say(f"{key}: {run['state']}")
        out.timings["+".join(keys)] = time.monotonic() - start
    api.wait_run("deploy_check_sensor", out.run_ids["sensor"], timeout=60)
    start = time.monotonic()
    settle_asset_runs(api)
    out.timings["asset-triggered runs settle"] = time.monotonic() - start


def watch_commits(stack: Stack, api: AirflowApi, out: Outcome) -> None:
    """Commit to the watched table one version at a time; each must bring one watcher run."""
    for n in range(1, WATCHER_COMMITS + 1):
        out.watcher_versions.append(commit_watched(stack, n))
        wait_for(
            f"watcher run {n}",
            lambda n=n: len(api.runs("deploy_check_watcher")) >= n,
            timeout=120,
        )
        say(f"watched table version {out.watcher_versions[-1]} -> watcher run {n}")


def settle_asset_runs(api: AirflowApi, quiet: float = 8.0, timeout: float = 240) -> None:
    """Wait until no asset-scheduled run is queued or running for `quiet` seconds."""
    deadline = time.monotonic() + timeout
    calm_since = time.monotonic()
    while time.monotonic() < deadline:
        busy = [r for dag in ASSET_DAGS for r in api.runs(dag) if r["state"] not in ("success", "failed")]
        if busy:
            calm_since = time.monotonic()
        elif time.monotonic() - calm_since >= quiet:
            return
        time.sleep(2)
    raise TimeoutError("asset-triggered runs did not settle")
