"""The Tables view's releases part (tables_releases) without a server: real tables and real release
logs in tmp_path; the route's access control through FastAPI's test client; its storage calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fsspec.implementations.local import LocalFileSystem

from airflow_txnlog.engine import Releases, Table
from airflow_txnlog.engine.spi import provenance, release_records
from airflow_txnlog.engine.storage import LocalStorage
from airflow_txnlog.plugins import tables_api, tables_releases
from airflow_txnlog.plugins.tables_catalog import KnownTable
from tests.conftest import SCHEMA, rows
from tests.ui.test_tables_units import _known, _Manager

pytestmark = pytest.mark.airflow


def _view(table: Table, *, limit: int = 5, may_see_dag: Any = lambda dag_id: True) -> dict[str, Any]:
    return tables_releases.releases(_known(f"file://{table.uri}"), limit=limit, may_see_dag=may_see_dag)


@pytest.fixture
def lake(tmp_path: Path) -> tuple[Table, Table, Releases]:
    """`orders` (versions 0..5) and `customers` (0..1), released 3 times by the log `nightly`
    (orders at 1, then 2, then back to 1 by a rollback: restored as version 3), then written twice."""
    orders = Table.create(str(tmp_path / "orders"), schema=SCHEMA)
    customers = Table.create(str(tmp_path / "customers"), schema=SCHEMA)
    orders.write(rows([1]))
    customers.write(rows([7]))
    log = Releases.create(str(tmp_path / "_releases" / "nightly"))
    log.publish({orders.uri: 1, customers.uri: 1}, note="night 1")
    orders.write(rows([2]))
    log.publish({orders.uri: 2})
    with provenance(dag_id="nightly_release", task_id="rollback", run_id="manual__3"):
        log.rollback(to=0, note="audit: bad customer")
    orders.write(rows([3]))
    orders.write(rows([4]))
    assert orders.latest_version() == 5 and log.current().versions[orders.uri] == 3  # type: ignore[union-attr]
    return orders, customers, log


def test_the_current_release_the_unreleased_commits_and_the_newest_releases(
    lake: tuple[Table, Table, Releases],
) -> None:
    orders, customers, log = lake
    got = _view(orders)
    assert got["latestVersion"] == 5 and got["moreLogs"] == 0
    (entry,) = got["logs"]
    assert (entry["id"], entry["uri"], entry["count"]) == (log.id, log.uri, 3)
    assert entry["tableVersion"] == 3 and entry["unreleasedCommits"] == 2
    current = entry["current"]
    assert (current["sequence"], current["kind"], current["rollbackTo"]) == (2, "rollback", 0)
    assert current["note"] == "audit: bad customer" and current["publishedAt"] > 0
    assert current["publishedBy"] == {"dagId": "nightly_release", "taskId": "rollback", "runId": "manual__3"}
    assert current["runLink"] == "../dags/nightly_release/runs/manual__3"
    assert [(r["sequence"], r["kind"], r["tableVersion"]) for r in entry["releases"]] == [
        (2, "rollback", 3),
        (1, "publish", 2),
        (0, "publish", 1),
    ]
    other = _view(customers)["logs"][0]  # not republished: its version of release 0, nothing newer
    assert (other["tableVersion"], other["unreleasedCommits"], other["current"]["sequence"]) == (1, 0, 2)
    assert [r["tableVersion"] for r in other["releases"]] == [1, 1, 1]
    first = _view(orders, limit=3)["logs"][0]["releases"][-1]
    assert first["sequence"] == 0 and "publishedBy" not in first and "note" not in first
    two = _view(orders, limit=2)["logs"][0]
    assert [r["sequence"] for r in two["releases"]] == [2, 1] and two["count"] == 3


def test_a_table_without_releases(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    assert _view(table) == {"logs": [], "moreLogs": 0, "latestVersion": None}


def test_the_publisher_is_hidden_from_a_user_who_may_not_read_its_dag(
    lake: tuple[Table, Table, Releases],
) -> None:
    asked: list[str] = []
    current = _view(lake[0], may_see_dag=lambda dag_id: asked.append(dag_id) or False)["logs"][0]["current"]
    assert current["publishedBy"] == {"dagId": "", "taskId": "", "runId": ""} and current["runLink"] is None
    assert asked == ["nightly_release"] and current["note"] == "audit: bad customer"


def test_an_unreadable_log_is_one_line_and_the_others_still_show(
    tmp_path: Path, lake: tuple[Table, Table, Releases]
) -> None:
    orders, customers, nightly = lake
    hourly = Releases.create(str(tmp_path / "_releases" / "hourly"))
    hourly.publish({customers.uri: 1})  # before orders joined the log
    hourly.publish({orders.uri: 4})
    broken = Releases.create(str(tmp_path / "_releases" / "broken"))
    broken.publish({orders.uri: 5})
    LocalStorage(broken.uri).write(release_records.record_key(0), b"{not json")
    logs = {entry["uri"]: entry for entry in _view(orders)["logs"]}
    assert logs[broken.uri] == {"id": broken.id, "uri": broken.uri, "error": "LogCorruptedError"}
    assert logs[hourly.uri]["tableVersion"] == 4 and logs[hourly.uri]["unreleasedCommits"] == 1
    assert [(r["sequence"], r["tableVersion"]) for r in logs[hourly.uri]["releases"]] == [(1, 4), (0, None)]
    outside = logs[hourly.uri]["current"]  # published outside Airflow
    assert outside["publishedBy"] is None and outside["runLink"] is None
    assert logs[nightly.uri]["unreleasedCommits"] == 2  # the latest version from one listing after 3


def test_a_hold_whose_log_does_not_release_the_table_shows_no_record(
    tmp_path: Path, lake: tuple[Table, Table, Releases]
) -> None:
    """A hold is written by anyone who can write the table: a log it names is shown only when its
    current release names the table (an orphan hold: its publisher died before the record)."""
    orders, customers, nightly = lake
    elsewhere = Releases.create(str(tmp_path / "elsewhere"))
    elsewhere.publish({customers.uri: 1}, note="not for the orders' readers")
    empty = Releases.create(str(tmp_path / "empty"))
    table = LocalStorage(orders.uri)
    release_records.write_hold(table, elsewhere.id, "p1", version=3, now_ms=1, log_uri=elsewhere.uri)
    release_records.write_hold(table, empty.id, "p2", version=3, now_ms=1, log_uri=empty.uri)
    release_records.write_hold(table, "a" * 32, "p3", version=3, now_ms=1, log_uri=nightly.uri)
    logs = {(entry["id"], entry["uri"]): entry for entry in _view(orders)["logs"]}
    shown = logs[(elsewhere.id, elsewhere.uri)]
    assert shown["current"] is None and shown["releases"] == [] and shown["count"] == 0
    assert shown["reason"] == tables_releases.NOT_NAMED and "note" not in str(shown)
    assert logs[(empty.id, empty.uri)]["reason"] == "no release yet"
    assert logs[("a" * 32, nightly.uri)]["error"].startswith("another release log")
    assert logs[(nightly.id, nightly.uri)]["tableVersion"] == 3


def test_at_most_max_logs_are_opened(
    tmp_path: Path, lake: tuple[Table, Table, Releases], monkeypatch: pytest.MonkeyPatch
) -> None:
    orders = lake[0]
    Releases.create(str(tmp_path / "_releases" / "zz_second")).publish({orders.uri: 5})
    monkeypatch.setattr(tables_releases, "MAX_LOGS", 1)
    got = _view(orders)
    assert [entry["uri"] for entry in got["logs"]] == [lake[2].uri] and got["moreLogs"] == 1


Calls = list[tuple[str, str]]  # (ls | list | read | exists, key or path)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    """Every listing (the storage's and fsspec's `ls`), read and existence check on the local disk."""
    seen: Calls = []

    def counted(owner: type[Any], name: str, kind: str) -> None:
        original = getattr(owner, name)

        def method(self: Any, key: str, *args: Any, **kwargs: Any) -> Any:
            seen.append((kind, key))
            return original(self, key, *args, **kwargs)

        monkeypatch.setattr(owner, name, method)

    counted(LocalStorage, "list_dir", "list")
    counted(LocalStorage, "read", "read")
    counted(LocalStorage, "exists", "exists")
    counted(LocalStorage, "open_input", "read")
    counted(LocalFileSystem, "ls", "ls")
    yield seen


def test_the_storage_calls_are_bounded_whatever_the_length_of_the_logs(
    tmp_path: Path, lake: tuple[Table, Table, Releases], calls: Calls
) -> None:
    """One listing of `_releases/`; per log a listing and a read of its holds, a listing of its
    records and `limit` record reads; one listing of the table's log, from the smallest released
    version on. No commit, checkpoint or snapshot is read."""
    orders, _, nightly = lake
    hourly = Releases.create(str(tmp_path / "_releases" / "hourly"))
    for version in (4, 4, 5, 5, 5, 5):
        hourly.publish({orders.uri: version})
    calls.clear()
    got = _view(orders, limit=2)
    assert [len(entry["releases"]) for entry in got["logs"]] == [2, 2]
    assert [kind for kind, _ in calls].count("ls") == 1
    listed = [key for kind, key in calls if kind == "list"]
    assert sorted(listed) == sorted(
        [f"_releases/{nightly.id}", f"_releases/{hourly.id}", "releases", "releases", "_delta_log"]
    )
    reads = [key for kind, key in calls if kind == "read"]
    assert len(reads) == 2 + 2 * 2 and not any(key.startswith("_delta_log") for key in reads), calls
    assert sorted(k for k in reads if k.startswith("releases/")) == sorted(
        release_records.record_key(s) for s in (2, 1, 5, 4)
    )
    assert not any(kind == "exists" for kind, _ in calls)
    calls.clear()
    assert tables_releases.latest_after(LocalStorage(orders.uri), 3) == 5
    assert calls == [("list", "_delta_log")]


# ---------------------------------------------------------------------------- the route


@pytest.fixture
def client(lake: tuple[Table, Table, Releases], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The view's app with the catalog of `orders` (asset "1") and `customers` (asset "2"), for a
    user allowed asset "1" only and no DAG."""
    from airflow.api_fastapi.core_api.security import get_user  # noqa: PLC0415
    from fastapi.testclient import TestClient  # noqa: PLC0415

    orders, customers, _ = lake
    catalog = [
        KnownTable(f"file://{orders.uri}", "orders0", ("1",), (), "txnlog_default"),
        KnownTable(f"file://{customers.uri}", "customers0", ("2",), (), "txnlog_default"),
    ]
    monkeypatch.setattr(tables_api, "_catalog", lambda: catalog)
    monkeypatch.setattr(tables_api, "_auth_manager", lambda: _Manager({"1"}, set()))
    app = tables_api.create_app()
    app.dependency_overrides[get_user] = lambda: "viewer"
    with TestClient(app) as test_client:
        yield test_client


def test_the_route_checks_access_and_hides_the_dags_the_user_may_not_read(client: Any) -> None:
    response = client.get("/api/tables/orders0/releases?limit=2")
    assert response.status_code == 200
    (entry,) = response.json()["logs"]
    assert [r["sequence"] for r in entry["releases"]] == [2, 1] and entry["unreleasedCommits"] == 2
    assert entry["current"]["publishedBy"] == {"dagId": "", "taskId": "", "runId": ""}
    denied = client.get("/api/tables/customers0/releases")
    assert denied.status_code == 403 and "customers" not in denied.text
    assert client.get("/api/tables/nope/releases").status_code == 404
    too_many = tables_releases.MAX_RECENT + 1
    assert client.get(f"/api/tables/orders0/releases?limit={too_many}").status_code == 422


def test_a_table_that_cannot_be_read_answers_with_the_error_class_only(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(storage: Any) -> dict[str, str]:
        raise PermissionError("https://internal-endpoint/lake refused the key AKIA...")

    monkeypatch.setattr(release_records, "release_logs", refused)
    response = client.get("/api/tables/orders0/releases")
    assert response.status_code == 502 and response.json() == {"id": "orders0", "error": "PermissionError"}
