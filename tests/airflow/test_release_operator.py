"""Release operators and the release failure callback, on real tables in tmp_path (no Spark, no DB).

Runs `execute` with a plain dict context (as tests/airflow/test_publish_operator.py does); "no event"
means the release log's asset left the task instance's outlets. A DAG run's commits are made under
the engine's provenance, which tags them with the run's owner tag, as a task's commits are.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_txnlog.assets import release_asset, table_asset_uri
from airflow_txnlog.callbacks import rollback_release_on_failure
from airflow_txnlog.engine import (
    ForeignCommitsError,
    InvalidArgumentError,
    ReleaseError,
    ReleaseNotFoundError,
    Releases,
    Table,
)
from airflow_txnlog.engine.spi import provenance
from airflow_txnlog.get_provider_info import get_provider_info
from airflow_txnlog.operators.release import TxnLogReleaseOperator, TxnLogReleaseRollbackOperator
from tests.conftest import SCHEMA, rows

pytestmark = pytest.mark.airflow
DAG = "nightly"
RUN = "manual__2026-06-01T00:00:00+00:00"


class Lake:
    """Two tables at version 1 each, and where their release log goes."""

    def __init__(self, root: Path) -> None:
        self.orders = Table.create(str(root / "orders"), schema=SCHEMA)
        self.customers = Table.create(str(root / "customers"), schema=SCHEMA)
        self.orders.write(rows([1, 2]))
        self.customers.write(rows([7]))
        self.log = str(root / "_releases" / "nightly")

    def ids(self, table: Table) -> list[int]:
        return sorted(Table.open(table.uri).snapshot().to_arrow().column("id").to_pylist())

    def releases(self) -> Releases:
        return Releases.open(self.log)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path)


def _context(
    run_id: str = RUN,
    *,
    task_id: str = "release",
    pushed: dict[str, Any] | None = None,
    state: str = "running",
    map_index: int = -1,
) -> dict[str, Any]:
    ti = SimpleNamespace(
        task_id=task_id,
        try_number=1,
        map_index=map_index,
        state=state,
        xcom_pull=lambda task_ids: (pushed or {})[task_ids],
    )
    return {
        "dag": SimpleNamespace(dag_id=DAG),
        "run_id": run_id,
        "ti": ti,
        "outlet_events": defaultdict(lambda: SimpleNamespace(extra=None)),
    }


def _release(lake: Lake, context: dict[str, Any] | None = None, **kwargs: Any) -> tuple[Any, Any, Any]:
    """(operator, its XCom, the asset event's extra or None)."""
    op = TxnLogReleaseOperator(task_id="release", release_log_uri=lake.log, **kwargs)
    context = context or _context()
    out = op.execute(context)
    return op, out, context["outlet_events"][release_asset(lake.log)].extra


def _commit(table: Table, ids: list[int], run_id: str = RUN) -> int:
    """A commit of `run_id`'s task `write` (tagged with that run's owner tag)."""
    with provenance(dag_id=DAG, task_id="write", run_id=run_id):
        return Table.open(table.uri).write(rows(ids))


# ------------------------------------------------------------------ publishing


def test_publish_from_versions_creates_the_log_and_emits_the_release(lake: Lake) -> None:
    versions = {lake.orders.uri: "1", lake.customers.uri: 1}  # a rendered XCom is text
    op, out, extra = _release(lake, versions=versions, note="night of 2026-06-01")
    assert out == {"sequence": 0, "versions": {lake.orders.uri: 1, lake.customers.uri: 1}}
    current = lake.releases().current()
    assert current is not None and (current.sequence, current.note) == (0, "night of 2026-06-01")
    assert current.publish_id == "nightly.release.manual__2026-06-01T00_00_00_00_00"  # the run's, made safe
    assert current.published_by is not None and current.published_by["jobRunId"] == RUN
    assert op.outlets == [release_asset(lake.log)]
    assert release_asset(lake.log).uri == table_asset_uri(lake.log) == "file://" + lake.log
    assert extra == {
        "sequence": 0,
        "previous_sequence": None,
        "kind": "publish",
        "rollback_to": None,
        "versions": {lake.orders.uri: 1, lake.customers.uri: 1},
        "note": "night of 2026-06-01",
        "publish_id": current.publish_id,
        "dag_id": DAG,
        "task_id": "release",
        "run_id": RUN,
    }
    _commit(lake.orders, [3])  # version 2
    _, later, extra = _release(lake, _context("scheduled__2"), versions={lake.orders.uri: 2})
    assert later == {"sequence": 1, "versions": {lake.orders.uri: 2, lake.customers.uri: 1}}  # the whole cut
    assert (extra["sequence"], extra["previous_sequence"], extra["run_id"]) == (1, 0, "scheduled__2")


def test_publish_from_tasks_takes_ints_and_the_write_operators_dicts(lake: Lake) -> None:
    pushed = {"write_orders": {"version": 1, "num_rows": 2, "skipped": False}, "audit_customers": 1}
    from_tasks = {lake.orders.uri: "write_orders", lake.customers.uri: "audit_customers"}
    op, out, _ = _release(lake, _context(pushed=pushed), from_tasks=from_tasks)
    assert out["versions"] == {lake.orders.uri: 1, lake.customers.uri: 1}
    assert sorted(op.lineage_tables()) == sorted([lake.orders.uri, lake.customers.uri])


def test_a_task_that_pushed_no_version_publishes_nothing(lake: Lake) -> None:
    pushed = {"merge": {"operation": "MERGE", "version": None}}  # a DML that matched no rows
    with pytest.raises(InvalidArgumentError, match="task 'merge' pushed no version"):
        _release(lake, _context(pushed=pushed), from_tasks={lake.orders.uri: "merge"})
    assert not Path(lake.log, "releases").exists()


def test_relative_uris_resolve_against_the_connection(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(Path(lake.log).parents[1])
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", f'{{"conn_type": "txnlog", "host": "{root}"}}')
    op = TxnLogReleaseOperator(
        task_id="release", release_log_uri="_releases/nightly", versions={"orders": 1}, txnlog_conn_id="lake"
    )
    assert op.execute(_context())["versions"] == {lake.orders.uri: 1}
    assert lake.releases().current() is not None


def test_a_retry_returns_the_first_release_and_emits_it_again(lake: Lake) -> None:
    _release(lake, versions={lake.orders.uri: 1})  # try 1 published, then its worker died
    op, out, extra = _release(lake, versions={lake.orders.uri: "1"})  # try 2 of the same run
    assert out["sequence"] == 0 and len(lake.releases().history()) == 1
    assert release_asset(lake.log) in op.outlets and extra["sequence"] == 0


def test_a_retry_asking_for_other_versions_is_refused(lake: Lake) -> None:
    _release(lake, versions={lake.orders.uri: 1})
    _commit(lake.orders, [3])  # an upstream task ran again: version 2
    with pytest.raises(ReleaseError, match="with other versions than this try asks for"):
        _release(lake, versions={lake.orders.uri: 2})
    assert len(lake.releases().history()) == 1


def test_another_runs_release_emits_nothing(lake: Lake) -> None:
    _release(lake, _context("other_run"), versions={lake.orders.uri: 1}, publish_id="shared")
    op, out, extra = _release(lake, versions={lake.orders.uri: 1}, publish_id="shared")
    assert out["sequence"] == 0 and extra is None
    assert release_asset(lake.log) not in op.outlets


def test_mapped_tasks_publish_one_release_each(lake: Lake) -> None:
    _release(lake, _context(map_index=0), versions={lake.orders.uri: 1})
    _, out, _ = _release(lake, _context(map_index=1), versions={lake.customers.uri: 1})
    assert out["sequence"] == 1
    assert lake.releases().get(1).publish_id.endswith(".1")


def test_no_log_is_created_when_create_is_false(lake: Lake) -> None:
    with pytest.raises(ReleaseNotFoundError):
        _release(lake, versions={lake.orders.uri: 1}, create=False)
    Releases.create(lake.log, rollback_window=2)
    _, out, _ = _release(lake, versions={lake.orders.uri: 1}, create=False)
    assert out["sequence"] == 0 and lake.releases().rollback_window == 2


def test_two_spellings_of_one_table_are_refused(lake: Lake) -> None:
    with pytest.raises(InvalidArgumentError, match="a second time"):
        _release(lake, versions={lake.orders.uri: 1, lake.orders.uri + "/": 1})


def test_lineage_names_every_table_of_the_release_at_its_version(lake: Lake) -> None:
    op, _, _ = _release(lake, versions={lake.orders.uri: 1, lake.customers.uri: 1})
    start = op.get_openlineage_facets_on_start()
    assert sorted(d.name for d in start.inputs) == sorted([lake.orders.uri, lake.customers.uri])
    done = op.get_openlineage_facets_on_complete(None)
    assert {d.name: d.facets["version"].datasetVersion for d in done.inputs} == {
        lake.orders.uri: "1",
        lake.customers.uri: "1",
    }
    assert [(d.namespace, d.name) for d in done.outputs] == [("file", lake.log)]


# ------------------------------------------------------------------ bad arguments

BAD = {
    "neither source": ({}, "exactly one of versions"),
    "both sources": ({"versions": {"/t": 1}, "from_tasks": {"/t": "w"}}, "exactly one of versions"),
    "versions not a mapping": ({"versions": [1]}, "non-empty mapping"),
    "empty versions": ({"versions": {}}, "non-empty mapping"),
    "text version": ({"versions": {"/t": "one"}}, "table version"),
    "negative version": ({"versions": {"/t": -1}}, "table version"),
    "from_tasks values": ({"from_tasks": {"/t": 1}}, "mapping of str to str"),
    "publish_id": ({"versions": {"/t": 1}, "publish_id": "-bad id"}, "publish_id must be"),
    "create": ({"versions": {"/t": 1}, "create": "yes"}, "create must be"),
    "rollback_window": ({"versions": {"/t": 1}, "rollback_window": -1}, "rollback_window must be"),
    "note": ({"versions": {"/t": 1}, "note": 3}, "note must be"),
    "log uri": ({"versions": {"/t": 1}, "release_log_uri": ""}, "release_log_uri must be"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_arguments_are_refused_when_built(case: str) -> None:
    kwargs, message = BAD[case]
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogReleaseOperator(**{"task_id": "r", "release_log_uri": "/log", **kwargs})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"to": -1}, "to must be None or a release sequence"),
        ({"to": "latest"}, "to must be None or a release sequence"),
        ({"on_foreign_commits": "Force"}, "'fail' or 'force'"),
        ({"owner_tag": " "}, "owner_tag must be None or a non-empty string"),
    ],
)
def test_bad_rollback_arguments_are_refused_when_built(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogReleaseRollbackOperator(task_id="rb", release_log_uri="/log", **kwargs)


def test_templates_are_checked_once_rendered(lake: Lake) -> None:
    op = TxnLogReleaseOperator(
        task_id="r", release_log_uri="{{ params.log }}", versions={"/t": "{{ ti.xcom_pull('audit') }}"},
        publish_id="{{ params.id }}",
    )  # fmt: skip
    assert op.outlets == []  # a templated log: no default outlet (as for a templated table)
    op.release_log_uri, op.versions = lake.log, {lake.orders.uri: "None"}  # what rendering gave
    with pytest.raises(InvalidArgumentError, match="must be a table version"):
        op.execute(_context())
    TxnLogReleaseRollbackOperator(task_id="rb", release_log_uri="/log", to="{{ params.to }}")


def test_building_the_tasks_loads_no_pyarrow() -> None:
    """DAG files build these at parse time, when pyarrow and the engine must not load."""
    code = (
        "import sys, json\n"
        "from airflow_txnlog.callbacks import rollback_release_on_failure\n"
        "from airflow_txnlog.operators.release import TxnLogReleaseOperator, TxnLogReleaseRollbackOperator\n"
        "from airflow_txnlog.sensors.release import TxnLogReleaseSensor\n"
        "TxnLogReleaseOperator(task_id='r', release_log_uri='/log', versions={'/t': 1}, publish_id='p')\n"
        "TxnLogReleaseOperator(task_id='f', release_log_uri='/log', from_tasks={'/t': 'w'})\n"
        "TxnLogReleaseRollbackOperator(task_id='b', release_log_uri='/log', to=2)\n"
        "TxnLogReleaseSensor(task_id='s', release_log_uri='/log', after_sequence=1)\n"
        "rollback_release_on_failure('/log', on_foreign_commits='force')\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'pyarrow', 'pyspark'})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_provider_lists_the_release_modules() -> None:
    info = get_provider_info()
    assert "airflow_txnlog.operators.release" in info["operators"][0]["python-modules"]
    assert "airflow_txnlog.sensors.release" in info["sensors"][0]["python-modules"]
    assert "airflow_txnlog.triggers.release" in info["triggers"][0]["python-modules"]


# ------------------------------------------------------------------ rolling back


def _rollback(lake: Lake, context: dict[str, Any] | None = None, **kwargs: Any) -> tuple[Any, Any, Any]:
    op = TxnLogReleaseRollbackOperator(task_id="rollback", release_log_uri=lake.log, **kwargs)
    context = context or _context(task_id="rollback")
    out = op.execute(context)
    return op, out, context["outlet_events"][release_asset(lake.log)].extra


def test_rollback_undoes_the_runs_commits_since_the_current_release(lake: Lake) -> None:
    _release(lake, _context("yesterday"), versions={lake.orders.uri: 1, lake.customers.uri: 1})
    _commit(lake.orders, [66])
    _commit(lake.customers, [99])
    op, out, extra = _rollback(lake, note="audit failed")
    assert (out["sequence"], out["kind"], out["rollback_to"]) == (1, "rollback", 0)
    assert lake.ids(lake.orders) == [1, 2] and lake.ids(lake.customers) == [7]
    assert out["versions"] == {lake.orders.uri: 3, lake.customers.uri: 3}  # the restores' commits
    assert (extra["kind"], extra["rollback_to"], extra["note"], extra["previous_sequence"]) == (
        "rollback",
        0,
        "audit failed",
        0,
    )
    outputs = {d.name for d in op.get_openlineage_facets_on_complete(None).outputs}
    assert outputs == {lake.orders.uri, lake.customers.uri, lake.log}  # restored tables are written
    _, again, _ = _rollback(lake)  # run again: nothing moved since the rollback's release
    assert again["sequence"] == 1 and len(lake.releases().history()) == 2


def test_rollback_to_an_older_release(lake: Lake) -> None:
    _release(lake, _context("r0"), versions={lake.orders.uri: 1})
    _commit(lake.orders, [3], run_id="r1")
    _release(lake, _context("r1"), versions={lake.orders.uri: 2})
    _, out, _ = _rollback(lake, to="0", owner_tag="anyone")  # a rendered template is text
    assert (out["sequence"], out["rollback_to"]) == (2, 0) and lake.ids(lake.orders) == [1, 2]


def test_rollback_refuses_another_writers_commit(lake: Lake) -> None:
    _release(lake, _context("yesterday"), versions={lake.orders.uri: 1, lake.customers.uri: 1})
    _commit(lake.orders, [66])
    Table.open(lake.customers.uri).write(rows([8]))  # a script, not this run
    with pytest.raises(ForeignCommitsError):
        _rollback(lake)
    assert lake.ids(lake.orders) == [1, 2, 66] and len(lake.releases().history()) == 1  # nothing restored
    _, out, _ = _rollback(lake, on_foreign_commits="force")
    assert out["kind"] == "rollback" and lake.ids(lake.customers) == [7]


def test_rollback_without_a_release_says_so(lake: Lake) -> None:
    Releases.create(lake.log)
    with pytest.raises(ReleaseNotFoundError, match="no release yet"):
        _rollback(lake)


# ------------------------------------------------------------------ the failure callback


def test_the_callback_rolls_a_failed_runs_writes_back(lake: Lake, caplog: pytest.LogCaptureFixture) -> None:
    _release(lake, _context("yesterday"), versions={lake.orders.uri: 1, lake.customers.uri: 1})
    _commit(lake.orders, [66])
    callback = rollback_release_on_failure(lake.log)
    retry = _context(task_id="audit", state="up_for_retry")
    callback(retry)  # not a final failure: nothing rolled back yet
    assert lake.ids(lake.orders) == [1, 2, 66]
    failed = _context(task_id="audit", state="failed")
    with caplog.at_level(logging.INFO, logger="airflow_txnlog.callbacks"):
        callback(failed)
        current = lake.releases().current()
        assert current is not None and (current.kind, current.rollback_to) == ("rollback", 0)
        assert current.note == f"rollback_release_on_failure: task audit of {DAG}/{RUN} failed"
        assert lake.ids(lake.orders) == [1, 2] and lake.ids(lake.customers) == [7]
        callback(failed)  # fired twice
    assert len(lake.releases().history()) == 2
    assert "nothing to roll back" in caplog.text


def test_the_callback_refuses_a_foreign_writers_commit(lake: Lake, caplog: pytest.LogCaptureFixture) -> None:
    _release(lake, _context("yesterday"), versions={lake.orders.uri: 1, lake.customers.uri: 1})
    _commit(lake.orders, [66])
    with provenance(dag_id="other_dag", task_id="load", run_id="r9"):
        Table.open(lake.customers.uri).write(rows([8]))
    with caplog.at_level(logging.ERROR, logger="airflow_txnlog.callbacks"):
        rollback_release_on_failure(lake.log)(_context(task_id="audit", state="failed"))  # never raises
    assert lake.ids(lake.orders) == [1, 2, 66] and len(lake.releases().history()) == 1
    assert "NOT rolling back" in caplog.text
    assert f"version 2 of {lake.customers.uri}: WRITE by dag 'other_dag' task 'load'" in caplog.text


def test_the_callback_never_raises(lake: Lake, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="airflow_txnlog.callbacks"):
        rollback_release_on_failure(lake.log)(_context(state="failed"))  # no release log yet
    assert "no release log" in caplog.text
    with pytest.raises(InvalidArgumentError, match="'fail' or 'force'"):
        rollback_release_on_failure(lake.log, on_foreign_commits="all")  # type: ignore[arg-type]


# ------------------------------------------------------------------ the example in docs/airflow.md

DOCS = Path(__file__).resolve().parents[2] / "docs" / "airflow.md"


def _docs_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Multi-table releases") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```\n", start)]


def _run_task(dag: Any, task_id: str, run_id: str, *args: Any) -> Any:
    with provenance(dag_id=dag.dag_id, task_id=task_id, run_id=run_id):
        return dag.get_task(task_id).python_callable(*args)


def test_the_docs_dag_releases_and_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The DAG snippet of docs/airflow.md, "Multi-table releases", built and its tasks run in order:
    a good run releases both tables, the report reads them at the release; a failed audit's
    callback rolls both back to that release."""
    import pyarrow as pa  # noqa: PLC0415

    monkeypatch.chdir(tmp_path)
    orders = Table.create("lake/orders", schema=pa.schema([("id", pa.int64()), ("customer", pa.int64())]))
    customers = Table.create("lake/customers", schema=pa.schema([("customer", pa.int64())]))
    orders.write(pa.table({"id": [1], "customer": [7]}))
    customers.write(pa.table({"customer": [7]}))
    namespace: dict[str, Any] = {}
    exec(compile(_docs_example(), str(DOCS), "exec"), namespace)
    load_dag, report_dag = namespace["load_dag"], namespace["report_dag"]

    pushed = {t: _run_task(load_dag, t, "good") for t in ("load_orders", "load_customers")}
    _run_task(load_dag, "audit", "good")
    release = load_dag.get_task("release")
    release.note = "good"  # (what "{{ run_id }}" renders to)
    context = _context("good", pushed=pushed)
    assert release.execute(context) == {"sequence": 0, "versions": {orders.uri: 2, customers.uri: 2}}
    assert report_dag.timetable.asset_condition.objects == (release_asset("lake/_releases/nightly"),)
    waited = report_dag.get_task("wait").execute({})
    assert waited == {"sequence": 0, "versions": {orders.uri: 2, customers.uri: 2}}
    assert _run_task(report_dag, "report", "good", waited) == {orders.uri: 2, customers.uri: 2}

    with provenance(dag_id="nightly_load", task_id="load_orders", run_id="bad"):
        Table.open(orders.uri).write(pa.table({"id": [4], "customer": [99]}))  # an unknown customer
    with pytest.raises(ValueError, match="unknown customers"):
        _run_task(load_dag, "audit", "bad")
    callbacks = load_dag.get_task("audit").on_failure_callback
    for callback in callbacks if isinstance(callbacks, list) else [callbacks]:
        callback({**_context("bad", task_id="audit", state="failed"), "dag": load_dag})
    current = Releases.open("lake/_releases/nightly").current()
    assert current is not None and (current.kind, current.rollback_to) == ("rollback", 0)
    assert sorted(Table.open(orders.uri).snapshot().to_arrow().column("id").to_pylist()) == [1, 3]
