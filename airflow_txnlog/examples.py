"""What an example DAG file (dags_examples/) needs to run as a script on a fresh machine.

    .venv/bin/python dags_examples/txnlog_ingest.py                  one run of the DAG, here and now
    .venv/bin/python dags_examples/txnlog_guarded_merge.py '{"inject_bad_rows": true}'   with a conf

Each example ends with `if __name__ == "__main__": run_as_script(dag)`, which runs the DAG once with
Airflow's `dag.test()` (every task in this process, local Spark for the Spark tasks) and exits with 0
when the run succeeded, 1 when it did not. `dag.test()` needs two things a fresh machine lacks, which
`run_as_script` sets up first: Airflow's metadata database ($AIRFLOW_HOME, ~/airflow by default:
migrated, a no-op when it already is) and a DAG bundle that holds the file (when the configured dags
folder does not, the file's own folder becomes the dags folder for this process).

The examples that read or maintain the orders table call `example_orders(uri)` first: a table there
is left alone, and where there is none (nothing ingested yet on this machine) three days of orders
are written, as txnlog_ingest would have written them, so that the DAG has something to work on.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from airflow import settings
from airflow.sdk import DAG
from airflow.utils.db import initdb

from airflow_txnlog.engine import Table, TableNotFoundError

ORDERS_PER_DAY = 50
SEED_DAYS = 3


def run_as_script(dag: DAG, argv: Sequence[str] | None = None) -> None:
    """Run `dag` once with `dag.test()` (see the module docstring) and exit: 0 when the run succeeded.

    :param argv: the script's arguments (default `sys.argv[1:]`): nothing, or the run's conf as JSON.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    conf = _conf(args)
    _prepare(Path(str(dag.fileloc)).resolve().parent)
    run = dag.test(run_conf=conf)
    states = {ti.task_id: _name(ti.state) for ti in run.get_task_instances()}
    state = _name(run.state)
    tasks = ", ".join(f"{task} {states[task]}" for task in sorted(states))
    print(f"{dag.dag_id}: run {state}; tasks: {tasks}", flush=True)
    raise SystemExit(0 if state == "success" else 1)


def _conf(args: Sequence[str]) -> dict[str, Any] | None:
    if not args:
        return None
    try:
        conf = json.loads(args[0])
    except json.JSONDecodeError as exc:
        raise SystemExit(f"the argument must be the run's conf as a JSON object: {exc}") from None
    if len(args) > 1 or not isinstance(conf, dict):
        raise SystemExit("give at most one argument: the run's conf as a JSON object")
    return conf


def _prepare(folder: Path) -> None:
    """Airflow's database migrated, and `folder` in the dags folder bundle (see the module docstring)."""
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")  # (no example bundle to parse)
    configured = Path(settings.DAGS_FOLDER).expanduser().resolve()
    if not folder.is_relative_to(configured):
        os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(folder)
        settings.DAGS_FOLDER = str(folder)  # (read when the bundle is made, after Airflow's import)
    initdb()


def _name(state: object) -> str:
    """A task or run state as its plain name (`success`), whether an enum or a string."""
    return str(getattr(state, "value", state))


def example_orders(uri: str) -> None:
    """The orders table at `uri` when none is there: SEED_DAYS days of orders before today, each day
    one commit of ORDERS_PER_DAY rows in its `day` partition (the schema txnlog_ingest writes)."""
    try:
        Table.open(uri)
    except TableNotFoundError:
        pass
    else:
        return
    table = Table.create(uri, schema=_orders_schema(), partition_by=["day"], name="orders")
    today = dt.datetime.now(dt.UTC).date()
    for back in range(SEED_DAYS, 0, -1):
        table.write(_orders(today - dt.timedelta(days=back)))
    print(f"created the example table {uri} (version {table.latest_version()})", flush=True)


def _orders_schema() -> pa.Schema:
    return pa.schema(
        [("order_id", pa.int64()), ("day", pa.string()), ("customer", pa.string()), ("amount", pa.float64())]
    )


def _orders(day: dt.date) -> pa.Table:
    """A day of orders as txnlog_ingest makes them (without the bad ones its expectations catch)."""
    text = day.isoformat()
    base = int(text.replace("-", "")) * 1000
    rows = [(base + i, text, f"customer-{i % 7}", float(10 + i)) for i in range(ORDERS_PER_DAY)]
    return pa.Table.from_pylist(
        [dict(zip(("order_id", "day", "customer", "amount"), r, strict=True)) for r in rows],
        schema=_orders_schema(),
    )
