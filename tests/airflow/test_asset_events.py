"""Asset events: emitted only for commits that changed data, with one extra shape (no Spark, no DB).

The operators' `emit` is exercised on engine commits with a plain dict context; `outlet_events` is a
stand-in for Airflow's accessors (anything with an `.extra` per asset). No event means the table's
asset left the task instance's outlets (Airflow emits one event per outlet of a successful task).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk import AssetWatcher
from airflow.sdk.definitions.asset import AssetUniqueKey

from airflow_txnlog.assets import table_asset, table_asset_uri
from airflow_txnlog.engine import Table
from airflow_txnlog.operators._base import TxnLogBaseOperator
from airflow_txnlog.operators._figures import commit_figures
from airflow_txnlog.triggers.version import TxnLogVersionEventTrigger
from tests.conftest import SCHEMA, rows

KEYS = {"version", "previous_version", "operation", "dag_id", "task_id", "run_id"}


def _context() -> dict[str, Any]:
    return {
        "dag": SimpleNamespace(dag_id="orders_dag"),
        "run_id": "manual__2024-06-01",
        "outlet_events": defaultdict(lambda: SimpleNamespace(extra=None)),
    }


@pytest.fixture
def uri(tmp_path: Path) -> str:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["part"])
    t.write(rows([1, 2, 3], "a"))  # version 1
    return str(tmp_path / "t")


def _emit(uri: str, version: int | None) -> tuple[TxnLogBaseOperator, dict[str, Any]]:
    op = TxnLogBaseOperator(task_id="append_orders", table_uri=uri)
    context = _context()
    op.emit(context, version, "WRITE")
    return op, context


def test_a_write_event_carries_the_commit_its_figures_and_its_writer(uri: str) -> None:
    op, context = _emit(uri, 1)
    asset = table_asset(uri)
    extra = context["outlet_events"][asset].extra
    entry = next(h for h in Table.open(uri).history() if h["version"] == 1)
    assert extra == {
        "version": 1,
        "previous_version": entry["version"] - 1,
        "read_version": entry["readVersion"],
        "operation": "WRITE",
        "num_added_rows": 3,
        "num_removed_rows": 0,  # an append removes nothing
        "num_added_files": int(entry["operationMetrics"]["numFiles"]),
        "num_removed_files": 0,
        "dag_id": "orders_dag",
        "task_id": "append_orders",
        "run_id": "manual__2024-06-01",
    }
    assert extra["previous_version"] == 0
    assert asset in op.outlets


def test_an_overwrite_event_leaves_out_the_rows_it_does_not_know(uri: str) -> None:
    version = Table.open(uri).write(rows([7], "b"), mode="overwrite")
    _, context = _emit(uri, version)
    extra = context["outlet_events"][table_asset(uri)].extra
    assert set(extra) >= KEYS
    assert (extra["version"], extra["previous_version"]) == (version, version - 1)
    assert extra["num_removed_files"] >= 1 and extra["num_added_rows"] == 1
    assert "num_removed_rows" not in extra  # the engine's overwrite does not count them: not invented


def test_no_commit_means_no_event(uri: str) -> None:
    """A skipped idempotent write, a DML that matched nothing: `version` None."""
    op, context = _emit(uri, None)
    assert table_asset(uri) not in op.outlets
    assert not context["outlet_events"]


def test_a_commit_without_data_files_means_no_event(uri: str) -> None:
    """An empty write still commits its txn id (so a re-run is recognised): it changed no data."""
    t = Table.open(uri).transaction("WRITE", {"mode": "Append", "partitionBy": '["part"]'})
    t.set_app_transaction("orders_dag.append_orders@2024", 1)
    version = t.commit(metrics={"numFiles": 0, "numOutputRows": 0, "numOutputBytes": 0})
    op, context = _emit(uri, version)
    assert table_asset(uri) not in op.outlets
    assert not context["outlet_events"]


def test_a_task_without_the_table_among_its_outlets_is_left_alone(uri: str) -> None:
    op = TxnLogBaseOperator(task_id="t", table_uri=uri, outlets=[])
    context = _context()
    op.emit(context, 1, "WRITE")
    assert not context["outlet_events"] and op.outlets == []


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"operation": "DELETE", "operationMetrics": {"numDeletedRows": "4", "numRemovedFiles": "2"}},
            {"num_added_rows": 0, "num_removed_rows": 4, "num_removed_files": 2},
        ),
        (
            {
                "operation": "MERGE",
                "operationMetrics": {
                    "numTargetRowsInserted": "1",
                    "numTargetRowsUpdated": "5",
                    "numTargetRowsDeleted": "0",
                    "numTargetFilesAdded": "2",
                    "numTargetFilesRemoved": "1",
                },
            },
            {
                "num_added_rows": 1,
                "num_updated_rows": 5,
                "num_removed_rows": 0,
                "num_added_files": 2,
                "num_removed_files": 1,
            },
        ),
        (
            {"operation": "RESTORE", "operationMetrics": {"numRestoredFiles": "3", "numRemovedFiles": "1"}},
            {"num_added_files": 3, "num_removed_files": 1},
        ),
        ({"operation": "VACUUM END", "operationMetrics": {"numDeletedFiles": "9"}}, {}),
    ],
)
def test_figures_come_from_the_operation_metrics(entry: dict[str, Any], expected: dict[str, int]) -> None:
    assert commit_figures(entry) == expected


def test_a_watcher_hangs_on_the_tables_one_asset(tmp_path: Path) -> None:
    uri = str(tmp_path / "orders")
    watcher = AssetWatcher(name="orders_new_versions", trigger=TxnLogVersionEventTrigger(table_uri=uri))
    watched = table_asset(uri, watchers=[watcher])
    assert watched.uri == table_asset_uri(uri) and watched.watchers == [watcher]
    # Airflow's identity of an asset (DB row, outlet events, triggering events): the same asset
    assert AssetUniqueKey.from_asset(watched) == AssetUniqueKey.from_asset(table_asset(uri))
    assert table_asset(uri).watchers == []
