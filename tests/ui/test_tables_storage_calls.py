"""Storage calls of one Tables view page: per table and route, ONE listing of the log and ONE read of
the savepoints (their folder listed once, each record read once), whatever the route.

A page of one table asks the plugin for the detail, a history page and the chart (`tables.js`); the
list asks for a summary per table. Each route asks the engine one `Table.overview`
(engine.overview). The calls are counted as the version triggers' tests count theirs
(tests/airflow/version_helpers.CountingStorage wraps a storage and counts per method): here every
call of the local backend is recorded with its key, by patching `LocalStorage` itself, since the
plugin builds its storage inside the hook. Figures of a table with 20 commits, 2 savepoints and a
checkpoint (before this change the chart alone listed the log 5 times and the savepoints twice).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.storage import LocalStorage, Storage
from airflow_txnlog.plugins import tables_report
from airflow_txnlog.plugins.tables_catalog import KnownTable, table_id_of
from tests.conftest import FIGURES_KEY, SCHEMA, rows

pytestmark = pytest.mark.airflow

Calls = list[tuple[str, str]]  # (list | read | exists, key)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    """Every listing, read and existence check of the local backend, with its key."""
    seen: Calls = []

    def counted(owner: type[Storage], name: str, kind: str) -> None:
        original = getattr(owner, name)

        def method(self: Storage, key: str, *args: Any, **kwargs: Any) -> Any:
            seen.append((kind, key))
            return original(self, key, *args, **kwargs)

        monkeypatch.setattr(owner, name, method)

    counted(LocalStorage, "list_dir", "list")
    counted(LocalStorage, "read", "read")  # (read_many reads each key through it)
    counted(LocalStorage, "exists", "exists")
    counted(LocalStorage, "open_input", "read")  # checkpoint files
    yield seen


@pytest.fixture
def known(tmp_path: Path) -> KnownTable:
    """20 commits (versions 0..19), savepoints of versions 6 and 13, a checkpoint at 10."""
    uri = str(tmp_path / "t")
    table = Table.create(uri, schema=SCHEMA)
    for i in range(19):
        table.write(rows([i, i + 100]))
        if i in (5, 12):
            table.create_savepoint(f"sp{i}")
    assert table.latest_version() == 19 and Table.open(uri).snapshot().checkpoint_version == 10
    tables_report._FACTS.pop(uri, None)
    return KnownTable(uri, table_id_of(uri), (), ("d",), "txnlog_default")


def _route(known: KnownTable) -> dict[str, Callable[[], object]]:
    return {
        "summary": lambda: tables_report.summary(known),
        "detail": lambda: tables_report.detail(known),
        "history": lambda: tables_report.history(known, before=None, limit=50),
        "chart": lambda: tables_report.chart_data(known, limit=50),
    }


def _figures(seen: Calls) -> dict[str, int]:
    return {
        "log listings": seen.count(("list", "_delta_log")),
        "savepoint listings": seen.count(("list", "_savepoints")),
        "savepoint records read": sum(1 for k, key in seen if k == "read" and key.startswith("_savepoints/")),
        "listings": sum(1 for kind, _ in seen if kind == "list"),
        "reads": sum(1 for kind, _ in seen if kind == "read"),
        "total": len(seen),
    }


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize("route", ["summary", "detail", "history", "chart"])
def test_each_route_lists_the_log_once_and_reads_the_savepoints_once(
    known: KnownTable, calls: Calls, route: str, warm: bool
) -> None:
    """Cold: the facts are computed (the snapshot loaded from the same listing); warm: reused."""
    if warm:
        tables_report.detail(known)
    calls.clear()
    _route(known)[route]()
    got = _figures(calls)
    assert (got["log listings"], got["savepoint listings"], got["listings"]) == (1, 1, 2), calls
    records = [key for kind, key in calls if kind == "read" and key.startswith("_savepoints/")]
    assert sorted(records) == ["_savepoints/sp12.json", "_savepoints/sp5.json"], calls  # each once
    if warm or route == "history":  # no snapshot: no checkpoint, no hint
        assert not any("checkpoint" in key for _, key in calls), calls


def test_the_page_figures(known: KnownTable, calls: Calls, request: pytest.FixtureRequest) -> None:
    """A page as the browser loads it: detail (facts computed), history, chart (facts reused)."""
    per_route = {}
    for route in ("detail", "history", "chart"):
        calls.clear()
        _route(known)[route]()
        if route == "detail":
            detail_reads = [key for kind, key in calls if kind == "read"]
        per_route[route] = _figures(calls)
    page = {k: sum(r[k] for r in per_route.values()) for k in per_route["detail"]}
    request.node.user_properties.append((FIGURES_KEY, {"title": "Tables view page, 20 commits", **page}))
    assert (page["log listings"], page["savepoint listings"], page["savepoint records read"]) == (3, 3, 6)
    assert page["listings"] == 6
    # detail: its history entry (19), the hint, the checkpoint, then the commits after it (11..19)
    commits = [int(k[11:31]) for k in detail_reads if k.startswith("_delta_log/0") and k.endswith(".json")]
    assert commits == [19, *range(11, 20)]
    assert detail_reads.count("_delta_log/_last_checkpoint") == 1
    # history and chart: the page's 20 commits and the 2 savepoint records, no snapshot
    assert per_route["history"]["reads"] == per_route["chart"]["reads"] == 22
