"""The main job: run the example DAGs end to end on local Spark, a local table and Airflow's SQLite DB.

What it shows, in order:
1. `txnlog_ingest` for three days (Spark appends; one partition expiry), then day 1 again: the
   idempotent write commits nothing;
2. `txnlog_guarded_merge` with good data: savepoint, merge, quality check pass;
3. `txnlog_guarded_merge` with bad data: the quality check fails, the table is restored to the
   savepoint (callback + restore task; the second restore commits nothing);
4. `txnlog_maintenance`: health, checkpoint, (optimize), vacuum, log cleanup;
5. `txnlog_downstream`: reads exactly the version the last asset event names;
6. `txnlog_ingest` and `txnlog_guarded_merge` triggered without a logical date (Airflow 3's default
   for manual runs): the examples fall back to the run's `run_after`;
then prints the asset events, the table history and its health.
Everything lives in ./demo_output/ (wiped at start).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(os.environ.get("TXNLOG_DEMO_DIR", ROOT / "demo_output")).resolve()
TABLE = OUT / "orders"


def _environment() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    os.environ.update(
        {
            "AIRFLOW_HOME": str(OUT / "airflow_home"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags_examples"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "TXNLOG_EXAMPLE_TABLE": str(TABLE),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
        }
    )


def say(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def _dags() -> dict[str, Any]:
    from airflow.dag_processing.dagbag import DagBag  # noqa: PLC0415 - after the environment is set

    bag = DagBag(dag_folder=str(ROOT / "dags_examples"))
    if bag.import_errors:
        raise SystemExit(f"DAG import errors: {bag.import_errors}")
    return bag.dags


def _run(dag: Any, day: dt.date, **conf: Any) -> str:
    logical = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
    run = dag.test(logical_date=logical, run_conf=conf or None)
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    print(f"    {dag.dag_id} {day} {conf or ''}: run {run.state}; tasks {states}", flush=True)
    return str(run.state)


def _run_manual(dag: Any, run_after: dt.datetime, **conf: Any) -> str:
    """A run with no logical date, as `airflow dags trigger` without --logical-date creates."""
    run = dag.test(logical_date=None, run_after=run_after, run_conf=conf or None)
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    print(f"    {dag.dag_id} manual (no logical date): run {run.state}; tasks {states}", flush=True)
    return str(run.state)


def _table_summary(label: str) -> list[tuple[Any, ...]]:
    from airflow_txnlog.engine import Table  # noqa: PLC0415

    snap = Table.open(str(TABLE)).snapshot()
    rows = snap.to_arrow().sort_by("order_id").to_pylist()
    print(f"    {label}: version {snap.version}, {len(rows)} rows, {snap.num_files} files")
    return [tuple(r.values()) for r in rows]


def main() -> int:
    _environment()
    from airflow.utils.db import initdb  # noqa: PLC0415

    say("Airflow metadata DB (SQLite) in demo_output/airflow_home")
    initdb()
    dags = _dags()
    print(f"    DAGs: {sorted(dags)}")
    days = [dt.date(2024, 6, 1) + dt.timedelta(days=i) for i in range(3)]

    say("1. txnlog_ingest: three daily Spark appends")
    for day in days:
        _run(dags["txnlog_ingest"], day)
    before = _table_summary("after ingest")
    say("   ... and day 1 again: the idempotent write must commit nothing")
    _run(dags["txnlog_ingest"], days[0])
    assert _table_summary("after the re-run") == before, "the re-run changed the table"

    say("2. txnlog_guarded_merge with good data")
    assert _run(dags["txnlog_guarded_merge"], days[2], inject_bad_rows=False) == "success"
    good = _table_summary("after the good merge")

    say("3. txnlog_guarded_merge with bad data: the quality check fails, the table is restored")
    state = _run(dags["txnlog_guarded_merge"], days[2] + dt.timedelta(days=1), inject_bad_rows=True)
    restored = _table_summary("after the failed run")
    print(f"    run state: {state}; table equal to its pre-run rows: {restored == good}")
    assert restored == good, "the table was not restored"

    say("4. txnlog_maintenance")
    _run(dags["txnlog_maintenance"], days[2])

    say("5. txnlog_downstream reads the version of the last asset event")
    _run(dags["txnlog_downstream"], days[2])

    say("6. manual runs without a logical date: the examples use the run's run_after")
    due = dt.datetime(2024, 6, 10, 12, tzinfo=dt.UTC)
    assert _run_manual(dags["txnlog_ingest"], due) == "success", "ingest failed without a logical date"
    # conf given explicitly: in one process, dag.test() keeps the previous run's params (bad rows)
    merged = _run_manual(dags["txnlog_guarded_merge"], due, inject_bad_rows=False)
    assert merged == "success", "merge failed without a logical date"
    _table_summary("after the manual runs")
    _report()
    return 0


def _report() -> None:
    from typer.testing import CliRunner  # noqa: PLC0415

    from airflow_txnlog.cli import app  # noqa: PLC0415

    say("Asset events of the table (from Airflow's DB)")
    _print_asset_events()
    for args in (["history", str(TABLE), "--limit", "12"], ["health", str(TABLE)]):
        say("$ txnlog " + " ".join(args))
        print(CliRunner().invoke(app, args, env={"COLUMNS": "160"}).output)
    try:
        from deltalake import DeltaTable  # noqa: PLC0415

        dt_ = DeltaTable(str(TABLE))
        say(f"delta-rs reads the table: version {dt_.version()}, {dt_.to_pyarrow_table().num_rows} rows")
    except ImportError:
        pass
    say(f"Done: the table is in {TABLE}/")


def _print_asset_events() -> None:
    from airflow.models.asset import AssetEvent  # noqa: PLC0415
    from airflow.utils.session import create_session  # noqa: PLC0415

    with create_session() as session:
        for event in session.query(AssetEvent).order_by(AssetEvent.id):
            print(f"    {event.source_dag_id}.{event.source_task_id}: {event.extra}")


if __name__ == "__main__":
    sys.exit(main())
