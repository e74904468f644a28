"""The deployment check's assertions on planned maintenance (the `txnlog_maintenance` run).

The example DAG ran with no table list, so its plan came from the Tables view's catalog through the
api-server (`txnlog_airflow_api`); it acted (`TXNLOG_MAINTENANCE_DRY_RUN=false`) under the
`txnlog_maintenance` pool. Checked: every per-table task ran in the pool and succeeded, the history
table holds this run's decisions for the example table with rule, value and threshold (skips with
a reason), no action failed, the Tables view shows this run as the table's last plan, and every
file of the table's savepoints and published version is still there. Its data rewrites went to the
standalone Spark cluster (`txnlog_spark_cluster`, `TXNLOG_MAINTENANCE_SPARK_MIN_BYTES=0`): the
optimize tasks' results (XCom) show rewrites done with runner `spark` and none in the task, and the
cluster's master lists the application the task named `txnlog_maintenance-<task_id>`.
"""

from __future__ import annotations

import os
from typing import Any

from .api import AirflowApi
from .scenario import Outcome
from .stack import Stack

POOL = "txnlog_maintenance"
OPTIMIZE = "maintain.optimize"  # the stage task that runs the data rewrites
DATA_KINDS = ("cluster", "compact", "purge_deletion_vectors")  # (operators._maintenance_work.DATA_KINDS)


def _rows(uri: str) -> list[dict[str, Any]]:
    from airflow_txnlog.engine import Table  # noqa: PLC0415

    return list(Table.open(uri).snapshot().to_arrow().to_pylist())


def _missing_files(uri: str) -> list[str]:
    """Files a savepoint or the published version of the table needs that are gone."""
    from airflow_txnlog.engine import Table  # noqa: PLC0415

    t = Table.open(uri)
    versions = {s.version for s in t.savepoints()}
    published = t.publication()
    if published is not None:
        versions.add(published.version)
    return [
        f"v{v}:{f.path}"
        for v in sorted(versions)
        for f in t.snapshot(version=v).files()
        if not os.path.exists(os.path.join(uri, f.path))
    ]


def check_planned(stack: Stack, api: AirflowApi, out: Outcome, res: Any) -> None:
    from airflow_txnlog.assets import table_asset_uri  # noqa: PLC0415
    from airflow_txnlog.plugins.tables_catalog import table_id_of  # noqa: PLC0415

    run_id = out.run_ids["maintenance"]
    tis = api.get_all(f"/dags/txnlog_maintenance/dagRuns/{run_id}/taskInstances", "task_instances")
    mapped = [ti for ti in tis if ti["task_id"].startswith("maintain.")]
    res.check("planned maintenance mapped per-table tasks", bool(mapped), f"{len(mapped)} task instances")
    wrong = [(t["task_id"], t["map_index"], t["state"], t["pool"]) for t in mapped
             if t["state"] != "success" or t["pool"] != POOL]  # fmt: skip
    res.check(f"every per-table task succeeded in the {POOL} pool", not wrong, str(wrong)[:400])
    rows = [r for r in _rows(str(stack.history)) if r["run_id"] == run_id]
    orders = table_asset_uri(str(stack.table))
    tables = {r["table_uri"] for r in rows}
    res.check("the plan came from the catalog: the example table is in it", orders in tables, str(tables))
    unexplained = [r for r in rows if r["decision"] != "error" and (not r["rule"] or r["threshold"] is None)]
    unexplained += [r for r in rows if r["decision"] == "skip" and not r["reason"]]
    res.check("every decision carries rule, value and threshold", not unexplained, str(unexplained)[:400])
    failed = [r for r in rows if r["status"] in ("failed", "error", "no_result")]
    res.check("no planned action failed", not failed, str(failed)[:400])
    done = [f"{r['kind']}:{r['table_uri'].rsplit('/', 1)[-1]}" for r in rows if r["status"] == "done"]
    res.check("planned maintenance acted (dry_run=false)", bool(done), ", ".join(done))
    body = api.get_raw(f"/txnlog/api/tables/{table_id_of(orders)}/maintenance")
    last = (body or {}).get("lastPlan") or {}
    res.check(
        "the Tables view shows this run as the last plan", last.get("run_id") == run_id, str(last)[:200]
    )
    gone = _missing_files(str(stack.table))
    res.check("every file of a savepoint or the published version is still there", not gone, str(gone)[:400])
    on_spark = check_on_spark(stack, api, run_id, mapped, res)
    res.facts["planned"] = {"rows": len(rows), "done": done, "mapped": len(mapped), "on_spark": on_spark}


def check_on_spark(
    stack: Stack, api: AirflowApi, run_id: str, mapped: list[dict[str, Any]], res: Any
) -> list[str]:
    """The data rewrites ran on the standalone cluster, none in the task; the master saw the app."""
    results = [
        r
        for ti in mapped
        if ti["task_id"] == OPTIMIZE
        for r in api.xcom("txnlog_maintenance", run_id, OPTIMIZE, map_index=ti["map_index"]) or []
    ]
    rewrites = [r for r in results if r.get("kind") in DATA_KINDS]
    on_spark = [f"{r['kind']}:{r['table'].rsplit('/', 1)[-1]}" for r in rewrites
                if r.get("runner") == "spark" and r.get("status") == "done"]  # fmt: skip
    res.check("planned data rewrites were done on the Spark cluster", bool(on_spark), str(results)[:400])
    in_task = [r for r in rewrites if r.get("runner") != "spark"]
    res.check("no planned data rewrite ran in the task (engine)", not in_task, str(in_task)[:400])
    apps = [(a.get("name", ""), a.get("state")) for a in stack.spark.applications()]
    seen = [a for a in apps if a[0].startswith("txnlog_maintenance-") and a[1] in ("RUNNING", "FINISHED")]
    res.check(f"the Spark master ({stack.spark.url}) ran the maintenance application", bool(seen), str(apps))
    return on_spark
