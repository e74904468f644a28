"""What the Tables view shows of a table's maintenance: the last plan made for it and the history.

Both come from the maintenance-history Delta table that planned maintenance appends to
(`[txnlog] maintenance_history_uri`, opened with `txnlog_default`; airflow_txnlog.operators.
planned_maintenance): only the rows whose `table_uri` is this table are read (a filter the engine
prunes files with), so a user who may read this table sees nothing of the others. The last plan is
every decision of the newest run that planned the table (actions with their status and measured
figures, skips with their reasons); the history is the actions of the runs before it, newest first.
The rows are matched in Arrow (no SQL text is built from a URI). As elsewhere in the view, an
error is shown by its class name only (a store's message may echo an endpoint), and the DAG id and
run id of a maintenance run only to a user who may read that DAG (`may_see_dag`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.plugins.tables_catalog import KnownTable


def history_uri() -> str:
    from airflow.configuration import conf  # noqa: PLC0415 - api-server only

    return str(conf.get("txnlog", "maintenance_history_uri", fallback="") or "").strip()


def maintenance(known: KnownTable, *, limit: int, may_see_dag: Callable[[str], bool]) -> dict[str, Any]:
    uri = history_uri()
    if not uri:
        return {"configured": False, "lastPlan": None, "history": []}
    import pyarrow as pa  # noqa: PLC0415 - pyarrow on the first request, not when plugins load
    import pyarrow.compute as pc  # noqa: PLC0415

    from airflow_txnlog.engine import TableNotFoundError  # noqa: PLC0415

    try:
        table = TxnLogHook().get_table(uri)
    except TableNotFoundError:
        return {"configured": True, "lastPlan": None, "history": []}
    data = table.snapshot().to_arrow()
    rows = data.filter(pc.equal(data.column("table_uri"), pa.scalar(known.uri, pa.string()))).to_pylist()
    if not rows:
        return {"configured": True, "lastPlan": None, "history": []}
    rows.sort(key=lambda r: (r["recorded_at"], r["run_id"] or ""), reverse=True)
    last = (rows[0]["dag_id"], rows[0]["run_id"])
    mine = [r for r in rows if (r["dag_id"], r["run_id"]) == last]
    older = [r for r in rows if (r["dag_id"], r["run_id"]) != last and r["decision"] == "action"]
    seen: dict[str, bool] = {}
    shown = [_shown(r, seen, may_see_dag) for r in mine]
    head = {k: shown[0][k] for k in ("dag_id", "run_id", "recorded_at", "table_version", "dry_run")}
    return {
        "configured": True,
        "lastPlan": {**head, "decisions": shown},
        "history": [_shown(r, seen, may_see_dag) for r in older[:limit]],
    }


def _shown(row: dict[str, Any], seen: dict[str, bool], may_see_dag: Callable[[str], bool]) -> dict[str, Any]:
    """The row as the page gets it: timestamps as epoch milliseconds, the error's class name only,
    the DAG and run left out ("") for a user who may not read the DAG."""
    out = {k: int(v.timestamp() * 1000) if isinstance(v, dt.datetime) else v for k, v in row.items()}
    if out.get("error"):
        out["error"] = str(out["error"]).split(":", 1)[0]
    dag = str(out.get("dag_id") or "")
    if dag not in seen:
        seen[dag] = may_see_dag(dag)
    if not seen[dag]:
        out["dag_id"] = out["run_id"] = ""
    return out
