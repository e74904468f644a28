"""`txnlog plan URI`: what the table needs now and why (engine.maintenance.planner), from its log alone.

Each action and skip is one row: kind, partition, the rule with its observed value and threshold,
and (actions) the files and bytes involved, or (skips) the reason. `--json` prints the plan's
`to_dict()`; `--set name=value` overrides a threshold (`--set quiet_minutes=0`). Nothing is run:
`txnlog vacuum`, `cleanup-log` and `checkpoint` run single actions, and the Airflow operators the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.table import Table as RichTable

from airflow_txnlog.cli._output import (
    JsonOpt,
    UriArg,
    compact,
    emit_json,
    engine_errors,
    key_values,
    open_table,
    print_rows,
)


def _row(d: Mapping[str, Any]) -> list[str]:
    what = d.get("reason") or f"{len(d.get('files') or [])} file(s); " + compact(d.get("benefit"))
    rule = f"{d['rule']}: {d['observed']} vs {d['threshold']}"
    return [d["kind"], compact(d.get("partition")) or "-", "skip" if d.get("reason") else "run", rule, what]


def plan(
    ctx: typer.Context,
    uri: UriArg,
    *,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a threshold: name=value (repeatable).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """What the table needs now (compaction, DV purge, checkpoint, vacuum, log cleanup) and why."""
    with engine_errors():
        doc = open_table(ctx, uri).plan_maintenance(**key_values(set_ or [], "--set")).to_dict()
    if as_json:
        emit_json(doc)
        return
    table = RichTable(title=f"plan of version {doc['version']}", title_justify="left")
    for name in ("kind", "partition", "decision", "rule", "detail"):
        table.add_column(name, overflow="fold")
    print_rows(table, [_row(d) for d in [*doc["actions"], *doc["skipped"]]], heading=3)
