"""The Spark operators' asset events on a real local table: none for a re-run, an empty write or a
DML that matched nothing; every field, checked against the table's history, for a real commit.

Operators run `execute` with a plain dict context (no Airflow DB); they reuse the module's Spark
session (the operators take the active session rather than starting their own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.assets import table_asset
from airflow_txnlog.engine import Table, TableCreatedConcurrentlyError
from airflow_txnlog.operators.spark import (
    TxnLogSparkDeleteOperator,
    TxnLogSparkMergeOperator,
    TxnLogSparkWriteOperator,
)
from tests.airflow.spark_operators import plain_context

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SCHEMA = "id long, part string"


def _context(day: int = 1) -> dict[str, Any]:
    return plain_context(day)


def _write(uri: str, ids: list[int], context: dict[str, Any]) -> tuple[TxnLogSparkWriteOperator, Any]:
    def source(spark: Any, _: Any) -> Any:
        return spark.createDataFrame([(i, "a") for i in ids], SCHEMA)

    op = TxnLogSparkWriteOperator(
        task_id="append_orders", table_uri=uri, source=source, partition_by=["part"], spark_conn_id=None
    )
    return op, op.execute(context)


def test_write_events_only_for_new_data(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "orders")
    asset = table_asset(uri)
    _, out = _write(uri, [1, 2, 3], ctx := _context(1))
    extra = ctx["outlet_events"][asset].extra
    entry = next(h for h in Table.open(uri).history() if h["version"] == out["version"])
    assert out["version"] == entry["version"] == 0 and "readVersion" not in entry
    assert extra == {
        "version": entry["version"],
        "previous_version": None,  # the write created the table: version 0, as Delta's first write
        "read_version": None,
        "operation": entry["operation"],
        "num_added_rows": 3,
        "num_removed_rows": 0,
        "num_added_files": int(entry["operationMetrics"]["numFiles"]),
        "num_removed_files": 0,
        "dag_id": "orders_dag",
        "task_id": "append_orders",
        "run_id": "scheduled__2024-06-01",
    }

    rerun, again = _write(uri, [1, 2, 3], ctx := _context(1))  # the same date again: skipped
    assert again["skipped"] and asset not in rerun.outlets and not ctx["outlet_events"]

    empty, nothing = _write(uri, [], ctx := _context(2))  # commits its txn id only
    assert nothing["num_rows"] == 0 and asset not in empty.outlets and not ctx["outlet_events"]
    assert Table.open(uri).snapshot().to_arrow().num_rows == 3


def test_delete_events_only_when_rows_matched(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "orders")
    _write(uri, [1, 2, 3], _context(1))
    asset = table_asset(uri)

    miss = TxnLogSparkDeleteOperator(task_id="purge", table_uri=uri, predicate="id > 100", spark_conn_id=None)
    assert miss.execute(ctx := _context(3))["version"] is None
    assert asset not in miss.outlets and not ctx["outlet_events"]

    hit = TxnLogSparkDeleteOperator(task_id="purge", table_uri=uri, predicate="id = 2", spark_conn_id=None)
    version = hit.execute(ctx := _context(3))["version"]
    extra = ctx["outlet_events"][asset].extra
    entry = next(h for h in Table.open(uri).history() if h["version"] == version)
    assert (extra["version"], extra["previous_version"], extra["operation"]) == (
        version,
        entry["readVersion"],
        "DELETE",
    )
    assert extra["num_removed_rows"] == 1 and extra["num_added_rows"] == 0
    assert extra["num_removed_files"] == int(entry["operationMetrics"]["numRemovedFiles"]) >= 1
    assert extra["num_added_files"] == int(entry["operationMetrics"]["numAddedFiles"])
    assert (extra["task_id"], extra["run_id"]) == ("purge", "scheduled__2024-06-03")


def test_a_sync_merge_deletes_what_the_source_no_longer_has(spark: Any, tmp_path: Path) -> None:
    """The merge operator's WHEN NOT MATCHED BY SOURCE clauses: a full sync of the table to a source."""
    uri = str(tmp_path / "orders")
    _write(uri, [1, 2, 3, 4], _context(1))

    def source(spark: Any, _: Any) -> Any:
        return spark.createDataFrame([(2, "b"), (5, "a")], SCHEMA)

    op = TxnLogSparkMergeOperator(
        task_id="sync",
        table_uri=uri,
        source=source,
        on="t.id = s.id",
        when_matched_update="*",
        when_not_matched_insert="*",
        when_not_matched_by_source_delete="t.id < 4",
        when_not_matched_by_source_update={"part": "'stale'"},
        spark_conn_id=None,
    )
    out = op.execute(ctx := _context(4))
    rows = Table.open(uri).snapshot().to_arrow().to_pylist()
    assert sorted((r["id"], r["part"]) for r in rows) == [(2, "b"), (4, "stale"), (5, "a")]
    m = out["metrics"]
    by_source = (m["numTargetRowsNotMatchedBySourceDeleted"], m["numTargetRowsNotMatchedBySourceUpdated"])
    assert by_source == (2, 1)
    assert (m["numTargetRowsMatchedUpdated"], m["numTargetRowsInserted"]) == (1, 1)
    extra = ctx["outlet_events"][table_asset(uri)].extra
    assert (extra["operation"], extra["version"]) == ("MERGE", out["version"])
    # rows: 1 inserted, 2 updated (one matched, one not matched by source), 2 deleted by source
    assert (extra["num_added_rows"], extra["num_updated_rows"], extra["num_removed_rows"]) == (1, 2, 2)


def test_two_first_writes_racing_both_land(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table is missing, so the write creates it with its own commit (version 0); another writer
    creates it first, between this task's check and its commit: the write runs again into that
    table (version 1) instead of failing the task."""
    from airflow_txnlog.hooks.txnlog import TxnLogHook  # noqa: PLC0415

    uri = str(tmp_path / "orders")
    real = TxnLogHook.create_table

    def create_then_lose_the_race(self: TxnLogHook, table_uri: str, **kwargs: Any) -> Table:
        deferred = real(self, table_uri, **kwargs)
        schema = deferred.snapshot().schema
        other = Table.create(uri, schema=schema, partition_by=["part"])
        other.write(pa.table({"id": [100], "part": ["z"]}, schema=schema))
        return deferred

    monkeypatch.setattr(TxnLogHook, "create_table", create_then_lose_the_race)
    _, out = _write(uri, [1, 2], ctx := _context(5))
    t = Table.open(uri)
    assert out["version"] == t.latest_version() == 2  # the other writer's 0 and 1, then ours
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == [1, 2, 100]
    assert ctx["outlet_events"][table_asset(uri)].extra["version"] == 2

    # An overwrite that loses the race fails rather than replace what the other writer just wrote.
    lost = str(tmp_path / "lost")
    uri = lost  # (what create_then_lose_the_race creates)
    op = TxnLogSparkWriteOperator(
        task_id="reload",
        table_uri=lost,
        source=lambda spark, _: spark.createDataFrame([(7, "a")], SCHEMA),
        mode="overwrite",
        partition_by=["part"],
        spark_conn_id=None,
    )
    with pytest.raises(TableCreatedConcurrentlyError):
        op.execute(_context(6))
    assert Table.open(lost).snapshot().to_arrow().column("id").to_pylist() == [100]
