"""The Tables view on a real api-server: registration, the page, the JSON API and access control.

See tests/ui/conftest.py for the server, its users and its tables.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from airflow_txnlog.hooks.catalog import TxnLogCatalogHook
from airflow_txnlog.plugins.tables_catalog import table_id_of
from tests.processes import run_python
from tests.ui.conftest import ORDERS_VERSIONS, Server

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def test_the_plugin_is_listed(api_server: Server) -> None:
    status, body = api_server.json("/api/v2/plugins", api_server.token("admin"))
    assert status == 200, body
    plugin = next(p for p in body["plugins"] if p["name"] == "txnlog_tables")
    assert [a["url_prefix"] for a in plugin["fastapi_apps"]] == ["/txnlog"]
    assert [v["name"] for v in plugin["external_views"]] == ["Tables"]


def test_the_admin_gets_the_page_and_every_table(api_server: Server) -> None:
    token = api_server.token("admin")
    status, page = api_server.request("/txnlog/", token)
    assert status == 200 and b'<script src="static/tables.js">' in page
    status, body = api_server.json("/txnlog/api/tables", token)
    assert status == 200
    by_uri = {t["uri"]: t for t in body["tables"]}
    assert set(by_uri) == set(api_server.tables.values())
    orders = by_uri[api_server.tables["orders"]]
    assert orders["version"] == ORDERS_VERSIONS - 1 and orders["lastCommit"]["operation"] == "WRITE"
    assert orders["lastCommit"]["writer"] == {"dagId": "ui_orders", "taskId": "load", "runId": "manual__1"}
    assert orders["numFiles"] > 0 and orders["sizeBytes"] > 0 and isinstance(orders["badges"], list)
    assert orders["dags"] == ["ui_orders", "ui_orders_admin"] and len(orders["assets"]) == 1
    assert by_uri[api_server.tables["secret"]]["assets"] == []  # named by a task only
    assert by_uri[api_server.tables["other"]]["dags"] == []  # named by an asset only


def test_one_table_history_pages_and_chart(api_server: Server) -> None:
    token = api_server.token("admin")
    table_id = table_id_of(api_server.tables["orders"])
    status, detail = api_server.json(f"/txnlog/api/tables/{table_id}", token)
    assert status == 200
    assert [f["name"] for f in detail["schema"]] == ["id", "amount", "part"]
    assert detail["protocol"]["minWriterVersion"] >= 5 and detail["partitionColumns"] == ["part"]
    assert [s["name"] for s in detail["savepoints"]] == ["before_merge"]
    assert detail["layout"]["clustered"] is False and detail["layout"]["rowTracking"]["enabled"] is False
    status, first = api_server.json(f"/txnlog/api/tables/{table_id}/history?limit=5", token)
    assert status == 200 and [e["version"] for e in first["entries"]] == [13, 12, 11, 10, 9]
    assert first["nextBefore"] == 9 and first["latestVersion"] == 13
    versions = [e["version"] for e in first["entries"]]
    before = first["nextBefore"]
    while before is not None:
        _, page = api_server.json(f"/txnlog/api/tables/{table_id}/history?limit=5&before={before}", token)
        versions += [e["version"] for e in page["entries"]]
        before = page["nextBefore"]
    assert versions == list(range(ORDERS_VERSIONS - 1, -1, -1))
    _, full = api_server.json(f"/txnlog/api/tables/{table_id}/history?limit=50", token)
    marks = {e["version"]: e for e in full["entries"]}
    assert marks[10]["restore"] and marks[11]["schemaChange"] and marks[8]["savepoints"] == ["before_merge"]
    assert marks[1]["rowsAdded"] == 3 and marks[1]["filesAdded"] == 1
    assert marks[9]["rowsRemoved"] == 24 and marks[9]["filesRemoved"] == 8  # the overwrite's removes
    assert marks[10]["rowsRemoved"] == 2  # the restore removed the overwrite's file
    assert marks[13]["runLink"] == "../dags/ui_orders/runs/manual__1" and marks[12]["runLink"] is None
    status, svg = api_server.request(f"/txnlog/api/tables/{table_id}/chart.svg", token)
    assert status == 200 and svg.startswith(b"<svg") and f'data-versions="{ORDERS_VERSIONS}"'.encode() in svg


def test_the_layout_of_a_clustered_table(api_server: Server) -> None:
    token = api_server.token("admin")
    status, detail = api_server.json(f"/txnlog/api/tables/{table_id_of(api_server.tables['other'])}", token)
    assert status == 200
    layout = detail["layout"]
    assert layout["clustered"] is True and layout["clusteringColumns"] == ["id"]
    assert (layout["clusteredFiles"], layout["files"]) == (1, 2)
    assert 0 < layout["clusteredBytes"] < layout["bytes"]
    assert layout["rowTracking"] == {"supported": False, "enabled": False, "highWaterMark": None}


def test_the_viewer_sees_only_their_table(api_server: Server) -> None:
    token = api_server.token("viewer")
    status, body = api_server.json("/txnlog/api/tables", token)
    assert status == 200
    assert [t["uri"] for t in body["tables"]] == [api_server.tables["orders"]]
    assert body["tables"][0]["dags"] == ["ui_orders"]  # not ui_orders_admin, which they may not read
    for name in ("secret", "other"):
        status, raw = api_server.request(f"/txnlog/api/tables/{table_id_of(api_server.tables[name])}", token)
        assert status == 403
        assert api_server.tables[name].encode() not in raw and name.encode() not in raw
        for route in ("history", "chart.svg"):
            status, _ = api_server.request(
                f"/txnlog/api/tables/{table_id_of(api_server.tables[name])}/{route}", token
            )
            assert status == 403
    status, _ = api_server.request(f"/txnlog/api/tables/{table_id_of(api_server.tables['orders'])}", token)
    assert status == 200


@pytest.mark.parametrize(
    "path",
    [
        "/txnlog/",
        "/txnlog/static/tables.js",
        "/txnlog/static/tables.css",
        "/txnlog/api/tables",
        "/txnlog/api/tables/0123abcd",
        "/txnlog/api/tables/0123abcd/history",
        "/txnlog/api/tables/0123abcd/chart.svg",
        "/txnlog/api/lookup?uri=file:///etc",
    ],
)
def test_anonymous_callers_get_401(api_server: Server, path: str) -> None:
    status, body = api_server.request(path)
    assert status == 401, body
    assert b"orders" not in body
    status, body = api_server.request(path, token="not-a-valid-token")
    assert status == 403 and b"orders" not in body  # Airflow's answer to a forged token


def test_a_path_no_asset_or_task_names_is_refused(api_server: Server, tmp_path: object) -> None:
    token = api_server.token("admin")
    status, raw = api_server.request("/txnlog/api/lookup?uri=file:///etc", token)
    assert status == 404 and b"/etc" not in raw
    status, body = api_server.json(f"/txnlog/api/lookup?uri={api_server.tables['orders']}", token)
    assert status == 200 and body == {"id": table_id_of(api_server.tables["orders"])}
    status, _ = api_server.request(
        f"/txnlog/api/lookup?uri={api_server.tables['secret']}", api_server.token("viewer")
    )
    assert status == 403
    status, _ = api_server.request("/txnlog/api/tables/" + table_id_of("file:///etc"), token)
    assert status == 404
    assert json.loads(api_server.request("/txnlog/api/tables", token)[1])  # the server is still fine


def test_the_catalog_route_lists_only_readable_tables_without_opening_them(api_server: Server) -> None:
    status, body = api_server.json("/txnlog/api/catalog", api_server.token("admin"))
    assert status == 200
    assert {t["uri"] for t in body["tables"]} == set(api_server.tables.values())
    assert all(t["conn_id"] == "txnlog_default" and t["id"] == table_id_of(t["uri"]) for t in body["tables"])
    status, body = api_server.json("/txnlog/api/catalog", api_server.token("viewer"))
    assert status == 200 and [t["uri"] for t in body["tables"]] == [api_server.tables["orders"]]
    assert api_server.request("/txnlog/api/catalog")[0] == 401


def test_a_planning_task_reads_the_catalog_through_its_connection(
    api_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = api_server.url.removeprefix("http://")
    monkeypatch.setenv("AIRFLOW_CONN_TXNLOG_AIRFLOW_API", f"http://viewer:viewer-pw-1@{host}")
    assert TxnLogCatalogHook().tables() == [{"uri": api_server.tables["orders"], "conn_id": "txnlog_default"}]
    monkeypatch.setenv("AIRFLOW_CONN_TXNLOG_AIRFLOW_API", f"http://viewer:wrong@{host}")
    with pytest.raises(Exception, match="401"):
        TxnLogCatalogHook().tables()


def test_the_last_plan_and_the_maintenance_history(api_server: Server) -> None:
    token = api_server.token("admin")
    table_id = table_id_of(api_server.tables["orders"])
    status, body = api_server.json(f"/txnlog/api/tables/{table_id}/maintenance", token)
    assert status == 200 and body["configured"] is True
    last = body["lastPlan"]
    assert (last["run_id"], last["dry_run"], last["table_version"]) == ("plan_2", True, ORDERS_VERSIONS - 1)
    decisions = last["decisions"]
    assert {d["table_uri"] for d in decisions} == {api_server.tables["orders"]}  # this table's rows only
    assert any(d["decision"] == "action" and d["kind"] == "compact" for d in decisions)
    assert all(d["reason"] for d in decisions if d["decision"] == "skip")
    assert all(d["rule"] and d["threshold"] is not None for d in decisions)
    assert body["history"] and {h["run_id"] for h in body["history"]} == {"plan_1"}
    assert {h["decision"] for h in body["history"]} == {"action"}
    # the viewer may not read `secret`, and gets nothing of it here either
    secret = table_id_of(api_server.tables["secret"])
    assert api_server.json(f"/txnlog/api/tables/{secret}/maintenance", api_server.token("viewer"))[0] == 403
    status, other = api_server.json(f"/txnlog/api/tables/{secret}/maintenance", token)
    assert status == 200 and other["lastPlan"] is None  # never planned


def _in_flight(api_server: Server, step: str, items: list[dict[str, Any]] | None = None) -> None:
    proc = run_python(["-m", "tests.ui.in_flight", step, json.dumps(items or [])], api_server.env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def test_the_maintenance_state_follows_a_run_in_flight_then_the_history(api_server: Server) -> None:
    """A run of `ui_maintenance` (which the viewer may not read) plans `other` then `orders` (map
    indexes 0 and 1); the state of each table follows its own stage tasks, and once the history task
    has finished the newest recorded run decides again (`plan_2`, a dry run: skipped)."""
    admin, viewer = api_server.token("admin"), api_server.token("viewer")
    orders, other = (table_id_of(api_server.tables[n]) for n in ("orders", "other"))

    def state(table_id: str, token: str = admin) -> dict[str, Any]:
        status, body = api_server.json(f"/txnlog/api/tables/{table_id}/maintenance", token)
        assert status == 200, body
        assert body["lastPlan"]["run_id"] in ("plan_2", "")  # the last plan stays the recorded one
        return dict(body["state"])

    before = state(orders)
    assert (before["state"], before["run_id"]) == ("skipped", "plan_2")
    assert before["reason"].startswith("dry run")
    action = [{"id": "a1", "kind": "checkpoint"}]
    items = [
        {"table": api_server.tables[n].removeprefix("file://"), "asset_uri": api_server.tables[n],
         "actions": action, "skipped": [], "over_budget": [], "error": None}
        for n in ("other", "orders")
    ]  # fmt: skip
    started = int(time.time() * 1000)
    _in_flight(api_server, "planned", items)
    try:
        planned = state(orders)
        assert (planned["state"], planned["dag_id"], planned["run_id"]) == (
            "planned",
            "ui_maintenance",
            "inflight_1",
        )
        assert planned["since"] >= started - 5000 and planned["reason"] == "1 action(s) to run"
        assert state(other)["state"] == "running"  # its checkpoint (map index 0) runs
        hidden = state(orders, viewer)
        assert (hidden["state"], hidden["dag_id"], hidden["run_id"]) == ("planned", "", "")
        _in_flight(api_server, "running")
        running = state(orders)
        assert (running["state"], running["reason"]) == ("running", "checkpoint success, optimize running")
    finally:
        _in_flight(api_server, "recorded")
    assert state(orders) == before
