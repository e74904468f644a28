"""The Tables view's parts without a server: catalog, chart, badges, history pages, the off switch."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine import overview as overview_module
from airflow_txnlog.engine.maintenance.health import TableHealth
from airflow_txnlog.engine.state.history import history_page
from airflow_txnlog.operators import _maintenance_history as history
from airflow_txnlog.plugins import tables_maintenance, tables_report
from airflow_txnlog.plugins.tables_access import may_read, readable_names
from airflow_txnlog.plugins.tables_catalog import KnownTable, build_catalog, table_id_of
from airflow_txnlog.plugins.tables_chart import chart_svg, sizes_after
from airflow_txnlog.plugins.tables_report import badges, run_link
from tests.conftest import SCHEMA, rows
from tests.processes import run_python

pytestmark = pytest.mark.airflow


def _task(uri: str, module: str = "airflow_txnlog.operators.maintenance", conn: str | None = None) -> dict:
    fields = {"_task_module": module, "table_uri": uri}
    if conn:
        fields["txnlog_conn_id"] = conn
    return {"__var": fields, "__type": "operator"}


def test_catalog_joins_assets_and_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {"conn_type": "txnlog", "host": "s3://lake/warehouse"}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps(conn))
    dags = [
        ("a", {"dag": {"tasks": [_task("sales/orders", conn="lake"), _task("{{ params.t }}")]}}),
        (
            "b",
            {"dag": {"tasks": [_task("s3://lake/warehouse/sales/orders"), _task("/data/t", "other.module")]}},
        ),
        ("c", {"dag": {"tasks": [_task("relative/without/conn", conn="missing_conn")]}}),
    ]
    assets = [("7", "s3://lake/warehouse/sales/orders"), ("8", "postgres://db/t"), ("9", "file:///data/x/")]
    catalog = {t.uri: t for t in build_catalog(assets, dags)}
    assert set(catalog) == {"s3://lake/warehouse/sales/orders", "file:///data/x"}
    orders = catalog["s3://lake/warehouse/sales/orders"]
    assert orders.asset_ids == ("7",) and orders.dag_ids == ("a", "b") and orders.conn_id == "lake"
    assert orders.table_id == table_id_of(orders.uri) and "/" not in orders.table_id
    assert catalog["file:///data/x"].dag_ids == ()


def test_history_pages_read_only_their_commits(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    for i in range(11):
        t.write(rows([i, i + 100]))
    reads: list[str] = []
    real = t.storage.read_many
    t.storage.read_many = lambda keys: reads.extend(keys) or real(keys)  # type: ignore[method-assign]
    page = history_page(t.storage, limit=4)
    assert [e["version"] for e in page.entries] == [11, 10, 9, 8] and page.next_before == 8
    assert len(reads) == 4  # the page's commits, not the log's (which has 12 and a checkpoint)
    last = history_page(t.storage, before=3, limit=4)
    assert [e["version"] for e in last.entries] == [2, 1, 0] and last.next_before is None
    assert last.entries[0]["rowsAdded"] == 2 and last.entries[0]["filesAdded"] == 1
    with pytest.raises(Exception, match="limit"):
        history_page(t.storage, limit=0)


def test_chart_sizes_go_back_from_the_latest() -> None:
    entries = [
        {"version": 3, "bytesAdded": 10, "bytesRemoved": 0, "rowsAdded": 1},
        {"version": 2, "bytesAdded": 5, "bytesRemoved": 20, "rowsAdded": None},
        {"version": 1, "bytesAdded": 20, "bytesRemoved": 0, "rowsAdded": 4},
    ]
    assert sizes_after(entries, 25) == [(1, 30), (2, 15), (3, 25)]
    svg = chart_svg(entries, 25)
    assert svg.startswith("<svg") and 'data-versions="3"' in svg and "15-30 bytes" in svg
    assert "<script" not in svg and chart_svg([], 0).startswith("<svg")


def test_badges_name_each_problem() -> None:
    health = TableHealth(
        version=30,
        num_files=20,
        size_bytes=100,
        small_files=15,
        small_file_bytes=10,
        last_checkpoint_version=10,
        commits_since_checkpoint=20,
        tombstones=3,
        reclaimable_bytes=50,
        savepoints=["a", "b"],
        expired_savepoints=["a"],
        oldest_log_version=0,
        oldest_restorable_version=0,
        checksum_problems=["00000000000000000030.crc: numFiles: the checksum says 21, the log says 20"],
    )
    got = badges(health, 10, now_ms=1_000, savepoint_expiries=[1_000 + 3600_000, 1_000 + 10 * 86400_000])
    assert [b.split(":")[0] for b in got] == [
        "small files",
        "tombstones",
        "checkpoint lag",
        "expired savepoints",
        "version checksum disagrees with the log",
        "savepoints expiring within a day",
    ]
    assert "the checksum says 21, the log says 20" in got[4]
    agreeing = dataclasses.replace(health, checksum_problems=[])
    assert not any("checksum" in b for b in badges(agreeing, 10, now_ms=1_000, savepoint_expiries=[]))


def test_the_view_can_be_turned_off() -> None:
    script = (
        "from airflow_txnlog.plugins.tables_plugin import TxnLogTablesPlugin as P; "
        "print(len(P.fastapi_apps), len(P.external_views))"
    )
    env = {**os.environ, "AIRFLOW__TXNLOG__TABLES_VIEW": "False"}
    off = run_python(["-c", script], env)
    assert off.stdout.split() == ["0", "0"], off.stderr[-2000:]
    env["AIRFLOW__TXNLOG__TABLES_VIEW"] = "True"
    on = run_python(["-c", script], env)
    assert on.stdout.split() == ["1", "1"], on.stderr[-2000:]


def test_run_links_cannot_leave_the_dag_runs_path() -> None:
    """A commit's job fields are whatever its writer put there: the link quotes every part."""
    assert run_link({"dagId": "d", "taskId": "t", "runId": "manual__1"}) == "../dags/d/runs/manual__1"
    hostile = run_link({"dagId": "javascript:alert(1)//", "taskId": "t", "runId": "../../x?y#z"})
    assert hostile == "../dags/javascript%3Aalert%281%29%2F%2F/runs/..%2F..%2Fx%3Fy%23z"
    assert run_link({"dagId": "d", "taskId": "t", "runId": ""}) is None and run_link(None) is None
    assert run_link({"dagId": "..", "taskId": "t", "runId": "x"}) is None  # "../dags/../runs/x" climbs
    assert run_link({"dagId": "d", "taskId": "t", "runId": "."}) is None


class _Manager:
    """An auth manager that allows the listed asset and DAG ids."""

    def __init__(self, assets: set[str], dags: set[str]) -> None:
        self.assets, self.dags = assets, dags

    def is_authorized_asset(self, *, method: str, details: Any, user: Any) -> bool:
        return method == "GET" and details.id in self.assets

    def is_authorized_dag(self, *, method: str, details: Any, user: Any) -> bool:
        return method == "GET" and details.id in self.dags


def test_assets_decide_when_a_table_has_any() -> None:
    both = KnownTable("s3://b/t", "id1", ("1",), ("d",), "c")
    assert not may_read(None, both, _Manager(set(), {"d"}))  # its asset is not theirs: the DAG does not help
    assert may_read(None, both, _Manager({"1"}, set()))
    dag_only = KnownTable("s3://b/u", "id2", (), ("d", "e"), "c")
    assert may_read(None, dag_only, _Manager(set(), {"e"}))
    assert not may_read(None, dag_only, _Manager({"1"}, set()))
    assert readable_names(None, dag_only, _Manager(set(), {"e"})) == ([], ["e"])


def test_a_writers_impossible_commit_time_falls_back_to_the_files(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    for version, stamp in ((1, '"x"'), (2, "9000000000000000000"), (3, "true")):
        line = '{"commitInfo":{"operation":"WRITE","inCommitTimestamp":' + stamp + "}}\n"
        t.storage.put_if_absent(f"_delta_log/{version:020d}.json", line.encode())
    stamps = [e["timestamp"] for e in history_page(t.storage).entries]
    assert all(1_700_000_000_000 < s < 4_000_000_000_000 for s in stamps)


def test_a_summary_shows_one_version_even_when_a_commit_lands_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every figure is of the version the overview listed: a commit that lands after the listing
    (here: while the savepoints are read, before the snapshot is loaded) shows in the next summary."""
    uri = str(tmp_path / "t")
    t = Table.create(uri, schema=SCHEMA)
    t.write(rows([1]))
    listed = t.snapshot()
    real = overview_module.list_savepoints

    def commit_first(storage: Any) -> Any:
        t.write(rows([2, 3]), mode="overwrite")  # lands after the overview listed the log
        return real(storage)

    monkeypatch.setattr(overview_module, "list_savepoints", commit_first)
    known = KnownTable(uri, table_id_of(uri), (), ("d",), "txnlog_default")
    tables_report._FACTS.pop(uri, None)
    row = tables_report.summary(known)
    assert row["version"] == 1 and row["lastCommit"]["operation"] == "WRITE"
    assert (row["numFiles"], row["sizeBytes"]) == (listed.num_files, listed.size_bytes)
    monkeypatch.setattr(overview_module, "list_savepoints", real)
    after = tables_report.summary(known)
    assert after["version"] == 2 and after["sizeBytes"] == t.snapshot().size_bytes != row["sizeBytes"]


def test_a_history_page_loads_no_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = str(tmp_path / "t")
    t = Table.create(uri, schema=SCHEMA)
    for i in range(3):
        t.write(rows([i]))

    def no_snapshot(table: Any) -> Any:
        raise AssertionError("a history page loaded the snapshot")

    monkeypatch.setattr(overview_module, "version_facts", no_snapshot)
    known = KnownTable(uri, table_id_of(uri), (), ("d",), "txnlog_default")
    page = tables_report.history(known, before=2, limit=5)
    assert [e["version"] for e in page["entries"]] == [1, 0] and page["nextBefore"] is None


def _known(uri: str) -> KnownTable:
    return KnownTable(
        uri=uri, table_id=table_id_of(uri), asset_ids=(), dag_ids=("d",), conn_id="txnlog_default"
    )


def test_the_maintenance_rows_are_matched_exactly_and_shown_with_care(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No SQL text is built from a URI (a crafted one must not widen the match), a quote in a URI
    works, errors show their class only, and a DAG the user may not read is not named."""
    uri = str(tmp_path / "history")
    crafted = "s3://lake/t\\' OR table_uri IS NOT NULL --"
    now = dt.datetime(2026, 11, 27, tzinfo=dt.UTC)
    base = {"dag_id": "secret_dag", "run_id": "r1", "recorded_at": now, "dry_run": True, "decision": "error",
            "kind": "plan", "status": "error"}  # fmt: skip
    rows = [
        {**base, "table_uri": "s3://prod/payroll", "error": "OSError: https://internal-endpoint refused"},
        {**base, "table_uri": "file:///data/o'brien", "error": "TableNotFoundError: no log at ..."},
    ]
    history.append_history(uri, rows)
    monkeypatch.setenv("AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI", uri)
    assert (
        tables_maintenance.maintenance(_known(crafted), limit=50, may_see_dag=lambda d: True)["lastPlan"]
        is None
    )
    shown = tables_maintenance.maintenance(
        _known("file:///data/o'brien"), limit=50, may_see_dag=lambda d: False
    )
    (decision,) = shown["lastPlan"]["decisions"]
    assert decision["table_uri"] == "file:///data/o'brien" and decision["error"] == "TableNotFoundError"
    assert (decision["dag_id"], decision["run_id"], shown["lastPlan"]["dag_id"]) == ("", "", "")
    allowed = tables_maintenance.maintenance(
        _known("s3://prod/payroll"), limit=50, may_see_dag=lambda d: True
    )
    assert allowed["lastPlan"]["run_id"] == "r1" and allowed["lastPlan"]["decisions"][0]["error"] == "OSError"
    monkeypatch.delenv("AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI")
    assert tables_maintenance.maintenance(_known(crafted), limit=5, may_see_dag=bool)["configured"] is False
