"""What the Tables view shows of a table's maintenance: the last plan made for it and the history.

Both come from the maintenance-history Delta table that planned maintenance appends to
(`[txnlog] maintenance_history_uri`, opened with `txnlog_default`; airflow_txnlog.operators.
planned_maintenance): only the rows whose `table_uri` is this table are read (a filter the engine
prunes files with), so a user who may read this table sees nothing of the others. The last plan is
every decision of the newest run that planned the table (actions with their status and measured
figures, skips with their reasons); the history is the actions of the runs before it, newest first.
The state (`planned` / `running` / `committed` / `failed` / `skipped`) is the newest recorded run's,
unless a run not yet recorded is in flight (`in_flight`: Airflow's metadata database); the rules are
in tables_maintenance_state.
The rows are matched in Arrow (no SQL text is built from a URI). As elsewhere in the view, an
error is shown by its class name only (a store's message may echo an endpoint), and the DAG id and
run id of a maintenance run only to a user who may read that DAG (`may_see_dag`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.plugins.tables_catalog import KnownTable
from airflow_txnlog.plugins.tables_maintenance_state import recorded_state
from airflow_txnlog.plugins.tables_report import run_link

log = logging.getLogger(__name__)
InFlight = Callable[[str, dt.datetime | None], dict[str, Any] | None]  # (table URI, newest recorded_at)


def history_uri() -> str:
    from airflow.configuration import conf  # noqa: PLC0415 - api-server only

    return str(conf.get("txnlog", "maintenance_history_uri", fallback="") or "").strip()


def maintenance(
    known: KnownTable,
    *,
    limit: int,
    may_see_dag: Callable[[str], bool],
    in_flight: InFlight | None = None,
) -> dict[str, Any]:
    """The payload of the maintenance route; `in_flight(uri, after)` (None: not asked) gives the
    state of a run in flight that planned the table after `after` (tables_maintenance_state)."""
    uri = history_uri()
    rows = _rows(uri, known.uri) if uri else []
    seen: dict[str, bool] = {}
    out: dict[str, Any] = {"configured": bool(uri), "lastPlan": None, "history": []}
    mine: list[dict[str, Any]] = []
    if rows:
        rows.sort(key=lambda r: (r["recorded_at"], r["run_id"] or ""), reverse=True)
        last = (rows[0]["dag_id"], rows[0]["run_id"])
        mine = [r for r in rows if (r["dag_id"], r["run_id"]) == last]
        older = [r for r in rows if (r["dag_id"], r["run_id"]) != last and r["decision"] == "action"]
        shown = [_shown(r, seen, may_see_dag) for r in mine]
        head = {k: shown[0][k] for k in ("dag_id", "run_id", "recorded_at", "table_version", "dry_run")}
        out["lastPlan"] = {**head, "decisions": shown}
        out["history"] = [_shown(r, seen, may_see_dag) for r in older[:limit]]
    state = _state(known, mine, in_flight)
    if state is not None:
        state = _hidden(state, seen, may_see_dag)
        state["runLink"] = run_link({"dagId": state["dag_id"], "runId": state["run_id"]})
    out["state"] = state
    return out


def _state(
    known: KnownTable, newest: list[dict[str, Any]], in_flight: InFlight | None
) -> dict[str, Any] | None:
    """A run in flight's state, else the newest recorded run's (None: neither). When the metadata
    database cannot be asked, the recorded state carries `inFlightError` (the error's class name)."""
    recorded = recorded_state(newest)
    if in_flight is None:
        return recorded
    try:
        flying = in_flight(known.uri, newest[0]["recorded_at"] if newest else None)
    except Exception as exc:  # the recorded part still stands
        log.warning("Tables view: runs in flight unknown for %s: %s", known.table_id, type(exc).__name__)
        return None if recorded is None else {**recorded, "inFlightError": type(exc).__name__}
    return flying or recorded


def _rows(uri: str, table_uri: str) -> list[dict[str, Any]]:
    """The history rows of one table (none while the history table does not exist)."""
    import pyarrow as pa  # noqa: PLC0415 - pyarrow on the first request, not when plugins load
    import pyarrow.compute as pc  # noqa: PLC0415

    from airflow_txnlog.engine import TableNotFoundError  # noqa: PLC0415

    try:
        table = TxnLogHook().get_table(uri)
    except TableNotFoundError:
        return []
    data = table.snapshot().to_arrow()
    mine: list[dict[str, Any]] = data.filter(
        pc.equal(data.column("table_uri"), pa.scalar(table_uri, pa.string()))
    ).to_pylist()
    return mine


def _shown(row: dict[str, Any], seen: dict[str, bool], may_see_dag: Callable[[str], bool]) -> dict[str, Any]:
    """The row as the page gets it: timestamps as epoch milliseconds, the error's class name only,
    the DAG and run left out ("") for a user who may not read the DAG."""
    out = {k: int(v.timestamp() * 1000) if isinstance(v, dt.datetime) else v for k, v in row.items()}
    if out.get("error"):
        out["error"] = str(out["error"]).split(":", 1)[0]
    return _hidden(out, seen, may_see_dag)


def _hidden(out: dict[str, Any], seen: dict[str, bool], may_see_dag: Callable[[str], bool]) -> dict[str, Any]:
    """`out` with its DAG id and run id left out ("") when the user may not read the DAG."""
    dag = str(out.get("dag_id") or "")
    if dag not in seen:
        seen[dag] = may_see_dag(dag)
    if not seen[dag]:
        out["dag_id"] = out["run_id"] = ""
    return out
