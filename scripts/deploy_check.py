"""Deployment check: a real Airflow (api-server, scheduler, dag-processor, triggerer) runs the examples.

Run it with `./scripts/deploy_check.sh` (see docs/deployment.md). The pieces live in scripts/deploy/:
`stack` (temporary folder, PostgreSQL cluster or SQLite, the four services and their PIDs),
`api` (REST client), `scenario` (the runs and the expectations table), `checks` (the assertions).
Exit status 0 when every check passed; 1 with the failed checks and log tails otherwise; services,
the cluster and the temporary folder are cleaned up in every case (`--keep` keeps the folder).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deploy.api import AirflowApi
from deploy.checks import Results, run_checks
from deploy.scenario import RUNS, Outcome, create_watched_table, run_scenario, say, wait_for
from deploy.stack import SERVICES, Stack, postgres_available

EXPECTED_DAGS = {p.dag_id for p in RUNS} | {"txnlog_downstream", "deploy_check_watcher"}


def bring_up(stack: Stack, out: Outcome) -> AirflowApi:
    start = time.monotonic()
    stack.prepare()
    say(f"temporary folder {stack.tmp}; metadata DB: {stack.db_label()}")
    stack.airflow("db", "migrate")
    stack.airflow("pools", "set", "txnlog_maintenance", "2", "planned maintenance (txnlog_maintenance)")
    out.timings["db migrate"] = time.monotonic() - start
    create_watched_table(stack)
    stack.start(stack.environment())
    say(f"started {', '.join(f'{s} (pid {p})' for s, p in stack.pids.items())}")
    api = AirflowApi(stack.base_url)

    def up() -> bool:
        if dead := stack.dead_services():
            raise RuntimeError(f"service(s) exited: {dead}")
        return api.healthy()

    wait_for("all services healthy", up, timeout=180, poll=2)
    wait_for("the DAGs to be parsed", lambda: set(api.dags()) >= EXPECTED_DAGS, timeout=180, poll=2)
    errors = api.get("/importErrors")["import_errors"]
    if errors:
        raise RuntimeError(f"DAG import errors: {errors}")
    out.timings["startup (to DAGs parsed)"] = time.monotonic() - start
    return api


def report(stack: Stack, out: Outcome, res: Results, total: float) -> None:
    print("\n==== deployment check report ====")
    print(f"metadata DB: {stack.db_label()}; executor: LocalExecutor; services: {', '.join(SERVICES)}")
    for plan in RUNS:
        run = res.facts.get("runs", {}).get(plan.key, {})
        print(
            f"run {plan.key:14} {plan.dag_id:22} {run.get('state', '?'):8} "
            f"logical_date={run.get('logical_date')} run_id={out.run_ids.get(plan.key)} "
            f"({_duration(run)})"
        )
    for commit in res.facts.get("history", []):
        job = commit.get("job") or {}
        print(
            f"version {commit['version']:3} {commit.get('operation', '?'):14} by "
            f"{job.get('jobId')}/{job.get('jobName')} run {job.get('jobRunId')} try {job.get('runId')}"
        )
    if restore := res.facts.get("restore"):
        print(
            f"restore: bad MERGE v{restore['bad']} -> restored savepoint v{restore['savepoint']} as "
            f"v{restore['restored']} ({restore['rows']} rows)"
        )
    for ev in res.facts.get("events", []):
        x = ev.get("extra") or {}
        print(
            f"asset event: v{x.get('version')} (prev {x.get('previous_version')}) {x.get('operation')} "
            f"+{x.get('num_added_rows')} rows +{x.get('num_added_files')}/-{x.get('num_removed_files')} "
            f"files from {x.get('dag_id')}.{x.get('task_id')}"
        )
    print(f"sensor: deferred={out.sensor_deferred}, resumed on {res.facts.get('sensor', {}).get('version')}")
    print(f"watcher: {res.facts.get('watcher')}")
    print(f"downstream read: {res.facts.get('downstream')}")
    print(
        f"guarded DAG write-audit-publish shape: {res.facts.get('wap')}; "
        f"published version: {res.facts.get('published')}"
    )
    for name, seconds in out.timings.items():
        print(f"duration {name}: {seconds:.0f}s")
    print(f"duration total: {total:.0f}s")
    for status, name, detail in res.lines:
        print(f"[{status}] {name}" + (f" -- {detail}" if detail and status != "ok" else ""))
    counts = {s: sum(1 for line in res.lines if line[0] == s) for s in ("ok", "FAILED")}
    print(f"triggerer 'blocked' warnings (s): {res.facts.get('triggerer blocked warnings (s)')}")
    print(f"checks: {counts['ok']} passed, {counts['FAILED']} failed")


def _duration(run: dict[str, Any]) -> str:
    from datetime import datetime  # noqa: PLC0415

    if not (run.get("start_date") and run.get("end_date")):
        return "?"
    start, end = (datetime.fromisoformat(run[k].replace("Z", "+00:00")) for k in ("start_date", "end_date"))
    return f"{(end - start).total_seconds():.0f}s"


def diagnostics(stack: Stack, api: AirflowApi | None, out: Outcome) -> None:
    """Log tails of the services and the logs of every failed task (an unexpected failure's cause)."""
    for service in SERVICES:
        path = stack.log(service)
        if path.exists():
            tail = path.read_text(errors="replace").splitlines()[-40:]
            print(f"\n---- {service} log (last {len(tail)} lines) ----\n" + "\n".join(tail))
    if api is None:
        return
    for plan in RUNS:
        run_id = out.run_ids.get(plan.key)
        if not run_id:
            continue
        try:
            tis = api.task_instances(plan.dag_id, run_id)
        except Exception as exc:  # diagnostics must not hide the original failure
            print(f"(task instances of {run_id} unavailable: {exc})")
            continue
        for task_id, ti in tis.items():
            if ti.get("state") in ("failed", "up_for_retry", "upstream_failed", None, "queued", "running"):
                log = api.task_log(plan.dag_id, run_id, task_id, max(1, ti.get("try_number") or 1))
                print(f"\n---- task {plan.dag_id}.{task_id} ({ti.get('state')}) log tail ----")
                print("\n".join(log.splitlines()[-30:]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sqlite", action="store_true", help="use SQLite even if PostgreSQL is present")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder for inspection")
    parser.add_argument("--asyncio-debug", action="store_true", help="PYTHONASYNCIODEBUG=1 for the triggerer")
    args = parser.parse_args()
    begin = time.monotonic()
    # SIGTERM (a CI timeout) must still stop the services: turn it into SystemExit, which runs `finally`
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stack = Stack(use_postgres=postgres_available() and not args.sqlite, asyncio_debug=args.asyncio_debug)
    out, api, res = Outcome(), None, Results()
    try:
        try:
            api = bring_up(stack, out)
            run_scenario(stack, api, out)
            res = run_checks(stack, api, out)
        except Exception:  # any error is a failed check, reported with the logs
            res.check("the scenario ran to the end", False, traceback.format_exc())
        report(stack, out, res, time.monotonic() - begin)
        if res.failed:
            diagnostics(stack, api, out)
    finally:
        say("stopping " + ", ".join(f"{s} (pid {p})" for s, p in stack.pids.items()))
        stack.stop()
        stack.cleanup(keep=args.keep)
        if args.keep:
            say(f"kept {stack.tmp}")
    ok = not res.failed
    print(f"RESULT: {'PASS' if ok else 'FAIL'} in {time.monotonic() - begin:.0f}s", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
