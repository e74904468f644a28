"""The main job: run the example DAGs end to end on local Spark, a local table and Airflow's SQLite DB.

What it shows, in order (one function per step, listed in `STEPS`; a new step is a function taking
the `Demo` and one more entry there):
1. `txnlog_ingest` for three days (Spark appends; one partition expiry), then day 1 again: the
   idempotent write commits nothing;
2. `txnlog_guarded_merge` with good data (write-audit-publish): savepoint, merge (no asset event),
   audit passes, `publish` publishes the merge's version and emits the table's event;
3. `txnlog_guarded_merge` with bad data: the audit fails, nothing is published, the table is
   restored to the savepoint (callback + restore task; the second restore commits nothing), and no
   asset event ever names the bad version;
4. `txnlog_maintenance` (planned: plan, per-table checkpoint / optimize / vacuum / log cleanup as the
   plan says, the maintenance-history table), then `txnlog_maintenance_fixed` (the hand-built
   schedule: health, checkpoint, (Spark optimize), vacuum, log cleanup);
5. `txnlog_downstream`: reads exactly the version the last asset event names;
6. `txnlog_ingest` and `txnlog_guarded_merge` triggered without a logical date (Airflow 3's default
   for manual runs): the examples fall back to the run's `run_after`;
7. `txnlog_release`: three tables written by Spark, a cross-table audit and a release; then a run
   whose orders name an unknown customer: the audit fails and every table goes back to the release
   (a rollback release); a reader that follows the log reads one consistent cut each time;
then prints the asset events, the table history and its health, and a closing report: each run
(DAG, kind, state, table version before and after), the restore, the asset events and the health.

The terminal shows only that story. Airflow's logs (dag.test() logs every task at INFO) and Spark's
(the driver JVM's) go to `demo_output/airflow.log`: the process's file descriptors 1 and 2 are
pointed at that file, which catches the JVM too, and the story is written to a copy of the original
stdout. On a failure the traceback goes to both.
Everything lives in ./demo_output/ (wiped at start).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(os.environ.get("TXNLOG_DEMO_DIR", ROOT / "demo_output")).resolve()
TABLE = OUT / "orders"
QUARANTINE = OUT / "orders_quarantine"
HISTORY = OUT / "maintenance_history"
RELEASE = OUT / "release"  # txnlog_release's three tables and its release log
LOG_FILE = OUT / "airflow.log"
DAYS = [dt.date(2024, 6, 1) + dt.timedelta(days=i) for i in range(3)]
STORY: TextIO = sys.stdout  # the terminal; `_send_logs_to_file` replaces it


def _environment() -> None:
    os.chdir(ROOT)  # the working directory may be inside OUT, which is wiped (Spark needs a cwd)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    os.environ.update(
        {
            "AIRFLOW_HOME": str(OUT / "airflow_home"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags_examples"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "TXNLOG_EXAMPLE_TABLE": str(TABLE),
            "TXNLOG_EXAMPLE_RELEASE": str(RELEASE),
            # planned maintenance acts on the demo's tables (no api-server here to ask for the
            # catalog); they are tiny and were just written, so the thresholds are lowered for
            # the demo to show actions: no quiet period, 2 small files make a bin, checkpoint at 5
            "TXNLOG_MAINTENANCE_TABLES": f"{TABLE},{QUARANTINE}",
            "TXNLOG_MAINTENANCE_DRY_RUN": "false",
            "TXNLOG_MAINTENANCE_SETTINGS": json.dumps(
                {"quiet_minutes": 0, "min_input_files": 2, "checkpoint_interval": 5}
            ),
            # ... and its data rewrites run on Spark (spark_default is not defined: local[*]), as a
            # user's would on their cluster; the engine plans and commits them
            "TXNLOG_MAINTENANCE_SPARK_CONN_ID": "spark_default",
            "TXNLOG_MAINTENANCE_SPARK_MIN_BYTES": "0",
            "AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI": str(HISTORY),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
        }
    )


def _send_logs_to_file(path: Path) -> TextIO:
    """Point file descriptors 1 and 2 at `path`; return a stream on the terminal for the story.

    Redirecting the descriptors rather than `sys.stdout` also catches what Airflow's log handlers
    and the Spark JVM (a child process inheriting 1 and 2) write.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    terminal = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    return terminal


def tell(text: str = "") -> None:
    print(text, file=STORY, flush=True)


def say(text: str) -> None:
    tell(f"\n==> {text}")


@dataclass
class RunRecord:
    dag_id: str
    kind: str  # "2024-06-01", "manual (no logical date)", plus the conf when there is one
    state: str
    version_before: int | None  # None: no table yet
    version_after: int | None


@dataclass
class Demo:
    """The DAGs, the runs made so far and the table's rows at named moments (for the checks)."""

    dags: dict[str, Any]
    runs: list[RunRecord] = field(default_factory=list)
    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    steps_done: int = 0

    def step(self, title: str) -> None:
        self.steps_done += 1
        say(f"{self.steps_done}. {title}")

    def run(self, dag_id: str, day: dt.date, **conf: Any) -> str:
        """A run for `day` (its logical date)."""
        logical = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
        return self._record(dag_id, str(day), conf, logical_date=logical)

    def run_manual(self, dag_id: str, run_after: dt.datetime, **conf: Any) -> str:
        """A run with no logical date, as `airflow dags trigger` without --logical-date creates."""
        return self._record(dag_id, "manual (no logical date)", conf, logical_date=None, run_after=run_after)

    def _record(self, dag_id: str, kind: str, conf: dict[str, Any], **when: Any) -> str:
        before = table_version()
        run = self.dags[dag_id].test(run_conf=conf or None, **when)
        states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
        label = f"{kind} {conf}" if conf else kind
        self.runs.append(RunRecord(dag_id, label, str(run.state), before, table_version()))
        told = label if when.get("logical_date") else kind  # as tests/airflow/test_examples_e2e.py reads
        tell(f"    {dag_id} {told}: run {run.state}; tasks {states}")
        return str(run.state)

    def table_summary(self, label: str) -> list[tuple[Any, ...]]:
        from airflow_txnlog.engine import Table  # noqa: PLC0415

        snap = Table.open(str(TABLE)).snapshot()
        rows = [tuple(r.values()) for r in snap.to_arrow().sort_by("order_id").to_pylist()]
        tell(f"    {label}: version {snap.version}, {len(rows)} rows, {snap.num_files} files")
        self.rows[label] = rows
        return rows


def table_version() -> int | None:
    from airflow_txnlog.engine import Table, TableNotFoundError  # noqa: PLC0415

    try:
        return Table.open(str(TABLE)).latest_version()
    except TableNotFoundError:
        return None


# ------------------------------------------------------------------ the steps


def ingest(demo: Demo) -> None:
    demo.step("txnlog_ingest: three daily Spark appends")
    for day in DAYS:
        demo.run("txnlog_ingest", day)
    before = demo.table_summary("after ingest")
    say("   ... and day 1 again: the idempotent write must commit nothing")
    demo.run("txnlog_ingest", DAYS[0])
    assert demo.table_summary("after the re-run") == before, "the re-run changed the table"


def published_version() -> int | None:
    from airflow_txnlog.engine import Table  # noqa: PLC0415

    pub = Table.open(str(TABLE)).publication()
    return None if pub is None else pub.version


def good_merge(demo: Demo) -> None:
    demo.step("txnlog_guarded_merge with good data: merge, audit, publish")
    assert demo.run("txnlog_guarded_merge", DAYS[2], inject_bad_rows=False) == "success"
    demo.table_summary("after the good merge")
    tell(f"    published version: {published_version()} (the audited merge)")


def bad_merge(demo: Demo) -> None:
    demo.step("txnlog_guarded_merge with bad data: the audit fails, nothing is published, restored")
    published = published_version()
    before = table_version()
    state = demo.run("txnlog_guarded_merge", DAYS[2] + dt.timedelta(days=1), inject_bad_rows=True)
    restored = demo.table_summary("after the failed run")
    good = demo.rows["after the good merge"]
    tell(f"    run state: {state}; table equal to its pre-run rows: {restored == good}")
    assert restored == good, "the table was not restored"
    assert before is not None
    bad = before + 1  # the merge's commit; the restore follows it
    named = {extra.get("version") for _, _, extra in _asset_events()}
    tell(
        f"    bad version {bad}: named by an asset event: {bad in named}; "
        f"published version still {published_version()} (was {published})"
    )
    assert bad not in named and published_version() == published, "downstream could see the bad version"


def maintenance(demo: Demo) -> None:
    demo.step("txnlog_maintenance: planned (only what each table needs, and why), then the fixed one")
    assert demo.run("txnlog_maintenance", DAYS[2]) == "success", "planned maintenance failed"
    from airflow_txnlog.engine import Table  # noqa: PLC0415

    rows = Table.open(str(HISTORY)).snapshot().to_arrow().to_pylist()
    for r in rows[:20]:
        what = r["reason"] or (
            f"{r['status']} ({r['rule']}: {r['observed']} >= {r['threshold']}; "
            f"files removed predicted {r['predicted_files_removed']}, measured {r['actual_files_removed']})"
        )
        tell(f"    {r['table_uri'].rsplit('/', 1)[-1]} {r['kind']} {r['partition'] or ''}: {what}")
    assert rows, "planned maintenance recorded no decision"
    for r in _optimize_results():
        name = r["table"].rsplit("/", 1)[-1]
        tell(f"    optimize {r['kind']} of {name}: {r['status']} on {r.get('runner')}")
    demo.run("txnlog_maintenance_fixed", DAYS[2])


def _optimize_results() -> list[dict[str, Any]]:
    """What the planned run's optimize tasks returned (their XCom, from Airflow's DB)."""
    from airflow.models.xcom import XComModel  # noqa: PLC0415
    from airflow.utils.session import create_session  # noqa: PLC0415

    with create_session() as session:
        found = session.query(XComModel).filter(
            XComModel.dag_id == "txnlog_maintenance",
            XComModel.task_id == "maintain.optimize",
            XComModel.key == "return_value",
        )
        values = [XComModel.deserialize_value(x) for x in found]
    return [r for v in values if isinstance(v, list) for r in v]


def downstream(demo: Demo) -> None:
    demo.step("txnlog_downstream reads the version of the last asset event")
    demo.run("txnlog_downstream", DAYS[2])


def manual_runs(demo: Demo) -> None:
    demo.step("manual runs without a logical date: the examples use the run's run_after")
    due = dt.datetime(2024, 6, 10, 12, tzinfo=dt.UTC)
    assert demo.run_manual("txnlog_ingest", due) == "success", "ingest failed without a logical date"
    # conf given explicitly: in one process, dag.test() keeps the previous run's params (bad rows)
    merged = demo.run_manual("txnlog_guarded_merge", due, inject_bad_rows=False)
    assert merged == "success", "merge failed without a logical date"
    demo.table_summary("after the manual runs")


def _released_cut() -> tuple[int, str, dict[str, int]]:
    """(sequence, kind, {table: rows}) of the current release, read the way a downstream reader
    does: every table at its version in that one release; checked to be one consistent cut."""
    from airflow_txnlog.engine import Releases  # noqa: PLC0415

    release = Releases.open(str(RELEASE / "_releases" / "nightly")).current()
    assert release is not None, "nothing was released"
    cut = {Path(uri).name: release.snapshot(uri).to_arrow() for uri in release.versions}
    known = set(cut["customers"].column("customer").to_pylist())
    assert set(cut["orders"].column("customer").to_pylist()) <= known, "a mixed cut"
    return release.sequence, release.kind, {name: rows.num_rows for name, rows in cut.items()}


def releases(demo: Demo) -> None:
    demo.step("txnlog_release: three tables, one audit, one release; then a bad run rolled back")
    assert demo.run("txnlog_release", DAYS[2]) == "success", "the good release run failed"
    sequence, kind, rows = _released_cut()
    tell(f"    released: release {sequence} ({kind}), rows {rows}")
    state = demo.run("txnlog_release", DAYS[2] + dt.timedelta(days=1), inject_bad_rows=True)
    assert state == "failed", "the bad run was not stopped by its audit"
    back_sequence, back_kind, back_rows = _released_cut()
    tell(f"    after the bad run: release {back_sequence} ({back_kind}), rows {back_rows}")
    assert back_kind == "rollback" and back_rows == rows, "the tables did not come back to the release"


STEPS: list[Callable[[Demo], None]] = [
    ingest, good_merge, bad_merge, maintenance, downstream, manual_runs, releases,
]  # fmt: skip


# ------------------------------------------------------------------ what the runs left


def _asset_events() -> list[tuple[str, str, dict[str, Any]]]:
    """(dag_id, task_id, extra) of the table's asset events, from Airflow's DB, oldest first."""
    from airflow.models.asset import AssetEvent, AssetModel  # noqa: PLC0415
    from airflow.utils.session import create_session  # noqa: PLC0415

    from airflow_txnlog.assets import table_asset_uri  # noqa: PLC0415

    with create_session() as session:  # (the release log's events are its own asset's: not these)
        events = (
            session.query(AssetEvent)
            .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .filter(AssetModel.uri == table_asset_uri(str(TABLE)))
            .order_by(AssetEvent.id)
        )
        return [(str(e.source_dag_id), str(e.source_task_id), dict(e.extra or {})) for e in events]


def print_table_state() -> None:
    """The asset events, then the table's history and health as the `txnlog` CLI prints them."""
    from typer.testing import CliRunner  # noqa: PLC0415

    from airflow_txnlog.cli import app  # noqa: PLC0415

    say("Asset events of the table (from Airflow's DB)")
    for dag_id, task_id, extra in _asset_events():
        tell(f"    {dag_id}.{task_id}: {extra}")
    for args in (["history", str(TABLE), "--limit", "12"], ["health", str(TABLE)]):
        say("$ txnlog " + " ".join(args))
        tell(CliRunner().invoke(app, args, env={"COLUMNS": "160"}).output)
    try:
        from deltalake import DeltaTable  # noqa: PLC0415

        dt_ = DeltaTable(str(TABLE))
        say(f"delta-rs reads the table: version {dt_.version()}, {dt_.to_pyarrow_table().num_rows} rows")
    except ImportError:
        pass


def _version(v: int | None) -> str:
    return "no table" if v is None else str(v)


def closing_report(runs: list[RunRecord]) -> None:
    """The short report the demo ends with (see the module docstring)."""
    from airflow_txnlog.engine import Table  # noqa: PLC0415

    table = Table.open(str(TABLE))
    say("Report")
    tell("    runs (DAG, kind, state, table version before -> after):")
    for r in runs:
        change = f"{_version(r.version_before)} -> {_version(r.version_after)}"
        tell(f"      {r.dag_id:<22} {r.kind:<52} {r.state:<8} {change}")
    rows = table.snapshot().to_arrow().num_rows
    first = _version(runs[0].version_before if runs else None)
    tell(f"    table versions: {first} before the runs, {table.latest_version()} after them ({rows} rows)")
    for entry in table.history():
        if entry["operation"] == "RESTORE":
            job = entry.get("job") or {}
            tell(
                f"    restore: version {entry['version']} restored the table to "
                f"{_restored_to(entry.get('operationParameters') or {})}"
                f" (by {job.get('jobId', '?')}.{job.get('jobName', '?')})"
            )
    events = _asset_events()
    tell(f"    published version (what downstream readers follow): {published_version()}")
    tell(f"    asset events: {len(events)}")
    for dag_id, task_id, extra in events:
        tell(f"      version {extra.get('version')} {extra.get('operation')} by {dag_id}.{task_id}")
    h = table.health().to_dict()
    tell(
        f"    health: version {h['version']}, {h['num_files']} files, {h['size_bytes']} bytes, "
        f"last checkpoint {h['last_checkpoint_version']}, {h['tombstones']} tombstones, "
        f"{h['reclaimable_bytes']} reclaimable bytes, {len(h['savepoints'])} savepoint(s)"
    )
    tell(f"    the table: {TABLE}/; Airflow's and Spark's logs: {LOG_FILE}")


def _restored_to(parameters: dict[str, Any]) -> str:
    """What a RESTORE commit names as its target: a version (and its savepoint), or its parameters."""
    if "version" in parameters:
        savepoint = parameters.get("savepoint")
        return f"version {parameters['version']}" + (f" (savepoint {savepoint!r})" if savepoint else "")
    return str(parameters)


# ------------------------------------------------------------------ main


def _dags() -> dict[str, Any]:
    from airflow.dag_processing.dagbag import DagBag  # noqa: PLC0415 - after the environment is set

    bag = DagBag(dag_folder=str(ROOT / "dags_examples"))
    if bag.import_errors:
        raise SystemExit(f"DAG import errors: {bag.import_errors}")
    return bag.dags


def _demo() -> None:
    from airflow.utils.db import initdb  # noqa: PLC0415

    say(f"Airflow metadata DB (SQLite) in {OUT / 'airflow_home'}")
    initdb()
    demo = Demo(_dags())
    tell(f"    DAGs: {sorted(demo.dags)}")
    for step in STEPS:
        step(demo)
    print_table_state()
    closing_report(demo.runs)


def main() -> int:
    global STORY  # noqa: PLW0603 - set once, before anything is told
    _environment()
    STORY = _send_logs_to_file(LOG_FILE)
    tell(f"Airflow's and Spark's logs go to {LOG_FILE}")
    try:
        _demo()
    except BaseException:
        tell(traceback.format_exc())
        tell(f"the demo failed; Airflow's and Spark's logs are in {LOG_FILE}")
        traceback.print_exc()  # into the log file too, next to what led to it
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
