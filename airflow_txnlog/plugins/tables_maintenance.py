"""What the Tables view shows of a table's maintenance: the last plan made for it and the history.

Both come from the maintenance-history Delta table that planned maintenance appends to
(`[txnlog] maintenance_history_uri`, opened with `txnlog_default`; airflow_txnlog.operators.
planned_maintenance): only the rows whose `table_uri` is this table are read (a filter the engine
prunes files with), so a user who may read this table sees nothing of the others. The last plan is
every decision of the newest run that planned the table (actions with their status and measured
figures, skips with their reasons); the history is the actions of the runs before it, newest first.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.plugins.tables_catalog import KnownTable


def history_uri() -> str:
    from airflow.configuration import conf  # noqa: PLC0415 - api-server only

    return str(conf.get("txnlog", "maintenance_history_uri", fallback="") or "").strip()


def maintenance(known: KnownTable, *, limit: int) -> dict[str, Any]:
    uri = history_uri()
    if not uri:
        return {"configured": False, "lastPlan": None, "history": []}
    from airflow_txnlog.engine import TableNotFoundError  # noqa: PLC0415 - pyarrow on first request

    try:
        table = TxnLogHook().get_table(uri)
    except TableNotFoundError:
        return {"configured": True, "lastPlan": None, "history": []}
    quoted = known.uri.replace("'", "''")
    rows = [_plain(r) for r in table.snapshot().to_arrow(filter=f"table_uri = '{quoted}'").to_pylist()]
    rows.sort(key=lambda r: (r["recorded_at"] or 0, r["run_id"] or ""), reverse=True)
    if not rows:
        return {"configured": True, "lastPlan": None, "history": []}
    last = (rows[0]["dag_id"], rows[0]["run_id"])
    mine = [r for r in rows if (r["dag_id"], r["run_id"]) == last]
    older = [r for r in rows if (r["dag_id"], r["run_id"]) != last and r["decision"] == "action"]
    head = {k: rows[0][k] for k in ("dag_id", "run_id", "recorded_at", "table_version", "dry_run")}
    return {"configured": True, "lastPlan": {**head, "decisions": mine}, "history": older[:limit]}


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """Timestamps as epoch milliseconds (what the page formats), the rest as is."""
    return {k: int(v.timestamp() * 1000) if isinstance(v, dt.datetime) else v for k, v in row.items()}
