"""The maintenance-history Delta table: one row per decision of a planned-maintenance run, and the
run's short report.

Rows (`SCHEMA`): the run (dag_id, run_id, recorded_at), the table (`table_uri`, in its asset form:
`file:///...` for local tables, as the Tables view names it) and the version it was planned at,
the decision (`action`, `skip`, `over_budget`, `error`), its kind, partition (JSON), rule, observed
value and threshold (JSON text: a value may be a number, a date or a flag), the reason of a skip,
what the planner predicted and what was measured (files removed net, bytes read / written /
reclaimed, seconds, the version committed), and the status: `done`, `dry_run`, `conflict`,
`failed`, `superseded` (a lite vacuum when a full one ran), `no_result` (the action's task did not
report: it crashed or never ran), `skipped`, `over_budget`, `error`.
The table is an ordinary Delta table (the engine writes it, any reader reads it); it is created on
first use, and two runs creating it at once both land (the loser of version 0 opens the winner's).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from airflow_txnlog.engine import Table, TableExistsError, TableNotFoundError
from airflow_txnlog.operators._maintenance_work import as_text, measured, predicted

_FIGURES = ("files_removed", "bytes_read", "bytes_written", "bytes_reclaimed")
SCHEMA = pa.schema(
    [
        ("dag_id", pa.string()),
        ("run_id", pa.string()),
        ("recorded_at", pa.timestamp("us", tz="UTC")),
        ("table_uri", pa.string()),
        ("table_version", pa.int64()),
        ("planned_at", pa.timestamp("ms", tz="UTC")),
        ("decision", pa.string()),
        ("kind", pa.string()),
        ("partition", pa.string()),
        ("rule", pa.string()),
        ("observed", pa.string()),
        ("threshold", pa.string()),
        ("reason", pa.string()),
        ("status", pa.string()),
        ("dry_run", pa.bool_()),
        *[(f"predicted_{f}", pa.int64()) for f in _FIGURES],
        *[(f"actual_{f}", pa.int64()) for f in _FIGURES],
        ("seconds", pa.float64()),
        ("committed_version", pa.int64()),
        ("error", pa.string()),
    ]
)


def history_rows(
    items: Sequence[Mapping[str, Any]],
    results: Iterable[Mapping[str, Any]],
    *,
    dag_id: str,
    run_id: str,
    dry_run: bool,
    now: dt.datetime,
) -> list[dict[str, Any]]:
    """One row per decision of `items` (work items), actions joined with their `results`."""
    by_id = {(r.get("table"), r.get("id")): r for r in results if isinstance(r, Mapping)}
    run = {"dag_id": dag_id, "run_id": run_id, "recorded_at": now, "dry_run": dry_run}
    rows: list[dict[str, Any]] = []
    for item in items:
        base = {
            **run,
            "table_uri": item.get("asset_uri") or item["table"],
            "table_version": item.get("version"),
            "planned_at": _stamp(item.get("planned_at")),
        }
        if item.get("error"):
            rows.append(
                {**base, "decision": "error", "kind": "plan", "status": "error", "error": item["error"]}
            )
        for action in item.get("actions") or []:
            rows.append(_action_row(base, action, by_id.get((item["table"], action["id"]))))
        for action in item.get("over_budget") or []:
            rows.append({**_decided(base, action, "over_budget"), "status": "over_budget"})
        for skip in item.get("skipped") or []:
            rows.append({**_decided(base, skip, "skip"), "status": "skipped"})
    return rows


def _decided(base: Mapping[str, Any], d: Mapping[str, Any], decision: str) -> dict[str, Any]:
    return {
        **base,
        "decision": decision,
        "kind": d.get("kind"),
        "partition": as_text(d.get("partition")),
        "rule": d.get("rule"),
        "observed": as_text(d.get("observed")),
        "threshold": as_text(d.get("threshold")),
        "reason": d.get("reason"),
        **{f"predicted_{k}": v for k, v in predicted(d).items()},
    }


def _action_row(
    base: Mapping[str, Any], action: Mapping[str, Any], result: Mapping[str, Any] | None
) -> dict[str, Any]:
    row = _decided(base, action, "action")
    if result is None:
        return {**row, "status": "no_result"}
    figures = measured(result.get("result") or {})
    return {
        **row,
        "status": result.get("status"),
        "reason": result.get("reason") or row.get("reason"),
        "seconds": result.get("seconds"),
        "error": result.get("error"),
        "committed_version": figures.pop("committed_version", None),
        **{f"actual_{k}": v for k, v in figures.items()},
    }


def _stamp(ms: Any) -> dt.datetime | None:
    return None if ms is None else dt.datetime.fromtimestamp(int(ms) / 1000, tz=dt.UTC)


def append_history(uri: str, rows: Sequence[Mapping[str, Any]], *, storage_options: Any = None) -> int | None:
    """Append `rows` to the history table at `uri` (created on first use); the version written."""
    if not rows:
        return None
    data = pa.Table.from_pylist([dict(r) for r in rows], schema=SCHEMA)
    return _history_table(uri, storage_options).write(data)


def _history_table(uri: str, storage_options: Any) -> Table:
    try:
        return Table.open(uri, storage_options=storage_options)
    except TableNotFoundError:
        pass
    try:
        return Table.create(
            uri, schema=SCHEMA, storage_options=storage_options, description="txnlog maintenance history"
        )
    except TableExistsError:  # another run created it first
        return Table.open(uri, storage_options=storage_options)


WAIT_WINDOW = dt.timedelta(days=14)  # how far back a table's wait for the byte budget is counted


def waited_runs(uri: str, *, dag_id: str, now: dt.datetime, storage_options: Any = None) -> dict[str, int]:
    """{table_uri: in how many of `dag_id`'s latest recorded runs in a row (within WAIT_WINDOW) the
    table had a rewrite over the byte budget}: the fair-share order's memory (operators.
    _maintenance_work). An absent history table: no one waited."""
    import pyarrow.compute as pc  # noqa: PLC0415

    try:
        table = Table.open(uri, storage_options=storage_options)
    except TableNotFoundError:
        return {}
    since = (now - WAIT_WINDOW).astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    data = table.snapshot().to_arrow(
        ["dag_id", "run_id", "recorded_at", "table_uri", "decision"],
        filter=f"recorded_at >= TIMESTAMP '{since}'",
    )  # (a time this function formats: no caller's text in the predicate)
    data = data.filter(pc.equal(data.column("dag_id"), dag_id))  # (matched in Arrow, not in SQL text)
    runs: dict[str, Any] = {}
    over: dict[str, set[str]] = {}
    for r in data.to_pylist():
        runs[r["run_id"]] = max(runs.get(r["run_id"], r["recorded_at"]), r["recorded_at"])
        if r["decision"] == "over_budget":
            over.setdefault(r["table_uri"], set()).add(r["run_id"])
    newest_first = sorted(runs, key=lambda run: runs[run], reverse=True)
    return {
        table: _in_a_row(newest_first, waits)
        for table, waits in over.items()
        if _in_a_row(newest_first, waits)
    }


def _in_a_row(newest_first: Sequence[str], runs: set[str]) -> int:
    count = 0
    for run in newest_first:
        if run not in runs:
            break
        count += 1
    return count


def report(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's figures and a few lines of text saying them."""
    tables = {r["table_uri"] for r in rows}
    status: dict[str, int] = {}
    for r in rows:
        status[r["status"]] = status.get(r["status"], 0) + 1
    done = [r for r in rows if r["decision"] == "action" and r["status"] == "done"]
    rewritten = [r for r in done if r["kind"] in ("compact", "purge_deletion_vectors")]
    guess = sum(int(r.get("predicted_bytes_written") or 0) for r in rewritten)
    real = sum(int(r.get("actual_bytes_written") or 0) for r in rewritten)
    lines = [
        f"{len(tables)} table(s); {sum(r['decision'] == 'action' for r in rows)} action(s), "
        f"{status.get('skipped', 0)} skip(s); by status: "
        + ", ".join(f"{k} {v}" for k, v in sorted(status.items())),
    ]
    if rewritten:
        off = f"{(real - guess) / guess:+.1%}" if guess else "n/a"
        lines.append(f"rewritten: predicted {guess} bytes written, measured {real} ({off})")
    reclaimed = sum(int(r.get("actual_bytes_reclaimed") or 0) for r in done if r["kind"] == "vacuum")
    if reclaimed:
        lines.append(f"vacuum reclaimed {reclaimed} bytes")
    for r in rows:
        if r["status"] in ("failed", "error", "no_result", "conflict"):
            lines.append(f"{r['status']}: {r['kind']} of {r['table_uri']}: {r.get('error') or 'no result'}")
    return {"tables": len(tables), "by_status": status, "text": "\n".join(lines)}
