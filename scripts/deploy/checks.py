"""The assertions of the deployment check, read back from the REST API, the table logs and the logs.

Each check records a line (ok / FAILED).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .api import AirflowApi
from .checks_maintenance import check_planned
from .scenario import NO_EVENT_TASKS, RUNS, WATCHER_COMMITS, Outcome
from .stack import Stack

EXTRA_KEYS = ("version", "previous_version", "operation", "num_added_files", "num_removed_files")
SOURCE_KEYS = ("dag_id", "task_id", "run_id")
BLOCKED_MARKERS = ("blocked for", "async thread was blocked")
# Airflow warns from 0.2 s ([triggerer] blocked_main_thread_warning_threshold). The fault this check
# exists for (the engine imported on the loop) blocked it for ~1 s; on a 2-core machine running the
# test suite beside the deployment, plain CPU starvation of an idle triggerer shows as 0.20-0.25 s
# (no slow callback in asyncio's debug log at those times). So: fail from 0.5 s, report the rest.
BLOCKED_LIMIT_S = 0.5
_BLOCKED_SECONDS = re.compile(r"blocked for ([0-9.]+) seconds")


@dataclass
class Results:
    lines: list[tuple[str, str, str]] = field(default_factory=list)  # (status, name, detail)
    facts: dict[str, Any] = field(default_factory=dict)  # for the report

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        status = "ok" if ok else "FAILED"
        self.lines.append((status, name, detail))
        return ok

    @property
    def failed(self) -> list[tuple[str, str, str]]:
        return [line for line in self.lines if line[0] == "FAILED"]


def _history(uri: str) -> list[dict[str, Any]]:
    from airflow_txnlog.engine import Table  # noqa: PLC0415

    return sorted(Table.open(uri).history(), key=lambda c: c["version"])


def _rows(uri: str, version: int) -> list[dict[str, Any]]:
    from airflow_txnlog.engine import Table  # noqa: PLC0415

    data = Table.open(uri).snapshot(version=version).to_arrow()
    return sorted(data.to_pylist(), key=lambda r: (r["order_id"], r["day"]))


def check_runs(api: AirflowApi, out: Outcome, res: Results) -> None:
    runs: dict[str, dict[str, Any]] = {}
    for plan in RUNS:
        run = api.run(plan.dag_id, out.run_ids[plan.key])
        runs[plan.key] = run
        res.check(
            f"run {plan.key} ({plan.dag_id}) is {plan.expect}", run["state"] == plan.expect, run["state"]
        )
        if plan.logical is None:
            res.check(f"run {plan.key} has no logical date", run.get("logical_date") is None)
        tis = api.task_instances(plan.dag_id, out.run_ids[plan.key])
        for task_id, want in plan.tasks.items():
            got = (tis.get(task_id) or {}).get("state")
            res.check(f"task {plan.key}.{task_id} is {want}", got == want, str(got))
    res.facts["runs"] = runs


def check_sensor(stack: Stack, api: AirflowApi, out: Outcome, res: Results) -> None:
    run_id = out.run_ids["sensor"]
    res.check("sensor was seen deferred", out.sensor_deferred)
    ti = api.task_instances("deploy_check_sensor", run_id)["wait_for_write"]
    res.check("sensor resumed in its first try", ti.get("try_number") == 1, f"try {ti.get('try_number')}")
    version = api.xcom("deploy_check_sensor", run_id, "got")
    res.check("sensor returned a table version", isinstance(version, int), repr(version))
    # the triggerer writes a deferred task's trigger log next to its task log (*.log.trigger.<id>.log)
    folder = (
        stack.home / "logs" / "dag_id=deploy_check_sensor" / f"run_id={run_id}" / "task_id=wait_for_write"
    )
    events = [json.loads(ln).get("event", "") for f in folder.glob("*.trigger.*.log") for ln in f.open()]
    res.check(
        "the triggerer ran the sensor's trigger and it fired",
        any("starting" in e for e in events) and "Trigger fired event" in events,
        str(events)[:300],
    )
    started = [e for e in events if "starting" in e]
    res.facts["sensor"] = {"version": version, "trigger_lines": started[:1]}


def check_watcher(api: AirflowApi, out: Outcome, res: Results) -> None:
    runs = api.runs("deploy_check_watcher")
    seen = [api.xcom("deploy_check_watcher", r["dag_run_id"], "seen") for r in runs]
    res.check(
        f"watcher ran once per new version ({WATCHER_COMMITS})",
        len(runs) == WATCHER_COMMITS and all(isinstance(s, list) and len(s) == 1 for s in seen),
        f"{len(runs)} runs, versions per run {seen}",
    )
    flat = sorted(v for s in seen if isinstance(s, list) for v in s)
    res.check("watcher runs saw exactly the committed versions", flat == out.watcher_versions, f"{flat}")
    res.check("watcher runs succeeded", all(r["state"] == "success" for r in runs))
    res.facts["watcher"] = {"committed": out.watcher_versions, "seen": seen}


def check_provenance(stack: Stack, out: Outcome, res: Results) -> list[dict[str, Any]]:
    history = _history(str(stack.table))
    known = set(out.run_ids.values())
    bad = []
    for commit in history:
        job, tags = commit.get("job") or {}, commit.get("tags") or {}
        complete = all(job.get(k) for k in ("jobId", "jobName", "jobRunId", "runId"))
        owner_ok = tags.get("owner") == f"{job.get('jobId')}/{job.get('jobRunId')}"
        if not (complete and owner_ok and job.get("jobRunId") in known):
            bad.append((commit["version"], commit.get("operation"), job, tags))
    res.check(
        f"all {len(history)} commits name dag, task, run (commitInfo.job, tags.owner)",
        not bad,
        str(bad)[:600],
    )
    # planned maintenance (the catalog names the watched table too) may compact / checkpoint it
    watched = _history(str(stack.watched))
    writers = [(c.get("job") or {}).get("jobId") for c in watched if c.get("operation") != "OPTIMIZE"]
    upkeep = [c for c in watched if c.get("operation") == "OPTIMIZE"]
    res.check(
        "watched-table commits name the outside writer (planned maintenance's OPTIMIZE its run)",
        all(w == "deploy_check_driver" for w in writers)
        and all((c.get("job") or {}).get("jobRunId") == out.run_ids["maintenance"] for c in upkeep),
        f"{writers}; {[(c.get('job') or {}).get('jobRunId') for c in upkeep]}",
    )
    res.facts["history"] = history
    res.facts["table"] = stack.table
    return history


def check_events(
    api: AirflowApi, stack: Stack, out: Outcome, res: Results, history: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    from airflow_txnlog.assets import table_asset_uri  # noqa: PLC0415

    asset_id = api.asset_id(table_asset_uri(str(stack.table)))
    events = api.asset_events(asset_id) if asset_id is not None else []
    res.check("the table's asset has events", bool(events), f"asset id {asset_id}")
    by_version = {c["version"]: c for c in history}
    problems = []
    for ev in events:
        extra = ev.get("extra") or {}
        commit = by_version.get(extra.get("version"), {})
        job = commit.get("job") or {}
        wrong = [k for k in EXTRA_KEYS if k not in extra]
        wrong += [k for k in SOURCE_KEYS if extra.get(k) != ev.get(f"source_{k}")]
        if extra.get("operation") != "PUBLISH":  # a publish names an earlier commit's version
            wrong += [] if commit.get("operation") == extra.get("operation") else ["operation"]
            wrong += [] if commit.get("readVersion") == extra.get("read_version") else ["read_version"]
            version = extra.get("version", 0)
            follows = version - 1 if version else None  # version 0 (the write creating it) follows nothing
            wrong += [] if extra.get("previous_version") == follows else ["previous_version"]
            wrong += [] if job.get("jobRunId") == extra.get("run_id") else ["commit run"]
        if wrong:
            problems.append((extra, wrong))
    res.check("every event's extra matches its commit and source task", not problems, str(problems)[:600])
    noop = [
        ev
        for ev in events
        if (ev.get("extra") or {}).get("task_id") in NO_EVENT_TASKS
        or (ev.get("extra") or {}).get("run_id")
        in (out.run_ids["maintenance"], out.run_ids["maintenance_fixed"])
    ]
    res.check("no-op / maintenance tasks emitted no event", not noop, str(noop)[:300])
    for key in ("ingest_dated", "ingest_manual"):
        mine = [e for e in events if (e.get("extra") or {}).get("run_id") == out.run_ids[key]]
        rows = [(e.get("extra") or {}).get("num_added_rows") for e in mine]
        res.check(f"{key} emitted one WRITE event of 50 rows", rows == [50], f"{rows}")
    res.facts["events"] = events
    return events


def check_guarded(api: AirflowApi, stack: Stack, out: Outcome, res: Results, history: list[Any]) -> None:
    bad_run, good_run = out.run_ids["merge_bad"], out.run_ids["merge_good"]
    merges = {
        run: [
            c["version"]
            for c in history
            if (c.get("job") or {}).get("jobRunId") == run and c.get("operation") == "MERGE"
        ]
        for run in (bad_run, good_run)
    }
    res.check("the bad run committed one MERGE", len(merges[bad_run]) == 1, str(merges[bad_run]))
    savepoint = api.xcom("txnlog_guarded_merge", bad_run, "savepoint") or {}
    restores = [
        c
        for c in history
        if c.get("operation") == "RESTORE"
        and (c.get("tags") or {}).get("owner") == f"txnlog_guarded_merge/{bad_run}"
    ]
    res.check("the bad run committed one RESTORE", len(restores) == 1, str([c["version"] for c in restores]))
    if not (merges[bad_run] and restores and "version" in savepoint):
        return
    bad_version, restored = merges[bad_run][0], restores[0]["version"]
    before = _rows(str(stack.table), savepoint["version"])
    res.check(
        "restore brought back the pre-run rows",
        _rows(str(stack.table), restored) == before,
        f"savepoint v{savepoint['version']} ({len(before)} rows), bad v{bad_version}, restored v{restored}",
    )
    res.facts["restore"] = {
        "savepoint": savepoint["version"],
        "bad": bad_version,
        "restored": restored,
        "rows": len(before),
    }
    check_wap(api, out, res, bad_version, merges[good_run])


def check_wap(api: AirflowApi, out: Outcome, res: Results, bad: int, good_merges: list[int]) -> None:
    """Write-audit-publish: only `publish` tells downstream, and never about the bad version."""
    publish = api.tasks("txnlog_guarded_merge").get("publish") or {}
    wap = "TxnLogPublishOperator" in str(publish.get("operator_name") or publish.get("class_ref") or "")
    res.facts["wap"] = wap
    res.check("WAP: the guarded DAG publishes with TxnLogPublishOperator", wap, str(publish)[:200])
    events = res.facts.get("events", [])
    named = [e for e in events if (e.get("extra") or {}).get("version") == bad]
    res.check(
        "WAP: no asset event names the bad version",
        not named,
        str([(e["extra"]["operation"], e["extra"]["task_id"]) for e in named]),
    )
    read = [
        api.xcom("txnlog_downstream", r["dag_run_id"], "summarize") for r in api.runs("txnlog_downstream")
    ]
    versions = [x.get("version") for x in read if isinstance(x, dict)]
    res.check(
        "WAP: downstream never read the bad version",
        bad not in versions,
        f"bad v{bad}; downstream read {versions}",
    )
    good = [e["extra"] for e in events if (e.get("extra") or {}).get("run_id") == out.run_ids["merge_good"]]
    audited = api.xcom("txnlog_guarded_merge", out.run_ids["merge_good"], "audit")
    res.check(
        "WAP: the good run published its audited version (operation PUBLISH)",
        [(x.get("operation"), x.get("version")) for x in good] == [("PUBLISH", audited)]
        and audited in good_merges,
        f"audited v{audited}, good run events {[(x.get('operation'), x.get('version')) for x in good]}",
    )
    mine = [e["extra"] for e in events if (e.get("extra") or {}).get("run_id") == out.run_ids["merge_bad"]]
    res.check("WAP: the bad run emitted no asset event", not mine, str(mine)[:300])
    published = res.facts["published"] = _published_version(str(res.facts["table"]))
    res.check(
        "WAP: the published version is the good run's audited one",
        published == audited,
        f"published v{published}",
    )


def _published_version(uri: str) -> int | None:
    from airflow_txnlog.engine import Table  # noqa: PLC0415

    publication = Table.open(uri).publication()
    return None if publication is None else publication.version


def check_downstream(api: AirflowApi, res: Results) -> None:
    runs = api.runs("txnlog_downstream")
    read = [api.xcom("txnlog_downstream", r["dag_run_id"], "summarize") for r in runs]
    named = {(e.get("extra") or {}).get("version") for e in res.facts.get("events", [])}
    res.check(
        "downstream ran and every run succeeded",
        bool(runs) and all(r["state"] == "success" for r in runs),
        str([r["state"] for r in runs]),
    )
    res.check(
        "downstream read only versions named by events",
        all(isinstance(x, dict) and x.get("version") in named for x in read),
        str(read)[:300],
    )
    res.facts["downstream"] = read


def check_triggerer_log(stack: Stack, res: Results) -> None:
    lines = stack.log("triggerer").read_text(errors="replace").splitlines()
    blocked = [ln for ln in lines if any(m in ln for m in BLOCKED_MARKERS)]
    slow = [ln for ln in lines if "Executing <" in ln and " took " in ln]  # with --asyncio-debug
    seconds = [float(m.group(1)) for ln in blocked if (m := _BLOCKED_SECONDS.search(ln))]
    res.facts["triggerer blocked warnings (s)"] = seconds or "none"
    long_blocks = [s for s in seconds if s >= BLOCKED_LIMIT_S]
    unparsed = len(blocked) - len(seconds)
    res.check(
        f"no triggerer 'blocked' warning of {BLOCKED_LIMIT_S} s or more",
        not long_blocks and not unparsed,
        "\n".join((blocked + slow)[:10]),
    )


def check_release(stack: Stack, api: AirflowApi, out: Outcome, res: Results) -> None:
    """txnlog_release: the good run released the three tables as release 0; the bad run's audit failed
    and every table came back to that release as release 1 (a rollback); the log's asset has one event
    event for release 0 (and at most one per release)."""
    from airflow_txnlog.assets import release_asset  # noqa: PLC0415
    from airflow_txnlog.engine import Releases  # noqa: PLC0415

    log_uri = str(stack.release / "_releases" / "nightly")
    log = Releases.open(log_uri)
    history = log.history()
    kinds = [(r.sequence, r.kind) for r in history]
    res.check(
        "txnlog_release: release 0, then the bad run's rollback",
        kinds == [(1, "rollback"), (0, "publish")],
        str(kinds),
    )
    if kinds != [(1, "rollback"), (0, "publish")]:
        return
    back, first = history
    same = all(back.snapshot(u).to_arrow() == first.snapshot(u).to_arrow() for u in first.versions)
    res.check(
        "txnlog_release: every table back to release 0's rows",
        same and set(back.versions) == set(first.versions),
    )
    asset_id = api.asset_id(release_asset(log_uri).uri)
    events = api.asset_events(asset_id) if asset_id is not None else []
    seen = sorted((e.get("extra") or {}).get("sequence", -1) for e in events)
    # (release 1 is the failure callback's: a callback emits no event, and the rollback task after it
    # found nothing left to undo; readers of the log see it, scheduled DAGs need not: same rows)
    ok = 0 in seen and set(seen) <= {0, 1} and len(seen) == len(set(seen))
    res.check("txnlog_release: the log's asset events name its releases, once each", ok, str(seen))
    good = api.xcom("txnlog_release", out.run_ids["release_good"], "release") or {}
    res.check(
        "txnlog_release: the release task returned release 0", good.get("sequence") == 0, str(good)[:200]
    )


def run_checks(stack: Stack, api: AirflowApi, out: Outcome) -> Results:
    res = Results()
    check_runs(api, out, res)
    check_sensor(stack, api, out, res)
    check_watcher(api, out, res)
    history = check_provenance(stack, out, res)
    check_events(api, stack, out, res, history)
    check_guarded(api, stack, out, res, history)
    check_downstream(api, res)
    check_planned(stack, api, out, res)
    check_release(stack, api, out, res)
    check_triggerer_log(stack, res)
    return res
