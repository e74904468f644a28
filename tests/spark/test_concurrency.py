"""Conflicts between Spark operations and concurrent commits, injected right before our commit.

`Transaction.commit` is wrapped so that another writer commits first (once), exactly in the window
between our Spark jobs and our log write: the engine's conflict checks then decide.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import ConcurrentAppendError, ConcurrentDeleteReadError, Table, Transaction
from airflow_txnlog.spark import SparkTable
from tests.spark.conftest import make_rows
from tests.spark.helpers import engine_rows

pytestmark = [pytest.mark.spark]


def _before_our_commit(monkeypatch: pytest.MonkeyPatch, action: Callable[[], object]) -> None:
    original = Transaction.commit
    fired: list[bool] = []

    def commit(self: Transaction, **kw: object) -> int:
        if not fired:
            fired.append(True)
            action()  # its own commit goes straight through (fired is set)
        return original(self, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Transaction, "commit", commit)


def _append(path: Path, ids: range, part: str) -> Callable[[], object]:
    return lambda: Table.open(str(path)).write(make_rows(ids, part=part))


def _remove_file_holding(path: Path, row_id: int) -> Callable[[], object]:
    def run() -> None:
        t = Table.open(str(path))
        with t.transaction("DELETE") as txn:
            (f,) = [f for f in txn.read_files(f"id = {row_id}") if _holds(path, f.path, row_id)]
            txn.remove(f)
            txn.commit()

    return run


def _holds(path: Path, rel: str, row_id: int) -> bool:
    return row_id in pq.read_table(path / rel, columns=["id"]).column("id").to_pylist()


def _orphans(path: Path) -> set[str]:
    live = {f.path for f in Table.open(str(path)).snapshot().files()}
    ever = {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}
    return ever - live


def test_delete_and_an_append_into_another_partition_both_succeed(spark, copy_table, monkeypatch) -> None:
    path = copy_table(True, "t")
    _before_our_commit(monkeypatch, _append(path, range(9000, 9010), "b"))
    result = SparkTable(spark, str(path)).delete("part = 'a' AND id < 400")
    assert result.version == 3  # the append took 2; our delete retried on top of it
    ids = {r["id"] for r in engine_rows(path)}
    assert set(range(9000, 9010)) <= ids and not any(i < 400 and i % 4 == 0 for i in ids)


def test_delete_and_an_append_into_what_it_read_conflict(spark, copy_table, monkeypatch) -> None:
    path = copy_table(True, "t")
    _before_our_commit(monkeypatch, _append(path, range(10), "a"))
    before = _orphans(path)
    with pytest.raises(ConcurrentAppendError, match="Help:"):
        SparkTable(spark, str(path)).delete("part = 'a' AND id < 400")
    assert _orphans(path) == before  # our rewritten files were removed again


def test_delete_and_a_concurrent_delete_of_the_same_file(spark, copy_table, monkeypatch) -> None:
    """Delta checks "deleted a file we read" before "deleted a file we delete", and a DELETE reads
    every file it removes: so Delta (and we) raise ConcurrentDeleteRead here."""
    path = copy_table(False, "t")
    _before_our_commit(monkeypatch, _remove_file_holding(path, 150))
    with pytest.raises(ConcurrentDeleteReadError):
        SparkTable(spark, str(path)).delete("id >= 140 AND id <= 160")
    assert Table.open(str(path)).latest_version() == 2


def test_merge_and_a_concurrent_delete_of_a_file_it_read(spark, copy_table, monkeypatch) -> None:
    path = copy_table(False, "t")
    st = SparkTable(spark, str(path))
    source = spark.createDataFrame(make_rows(range(500, 520)))
    _before_our_commit(monkeypatch, _remove_file_holding(path, 510))
    with pytest.raises(ConcurrentDeleteReadError):
        st.merge(source, "t.id = s.id").when_matched_update(set={"value": "0"}).execute()
    assert not any(r["value"] == 0 and r["id"] >= 500 for r in engine_rows(path))


@pytest.mark.slow
def test_optimize_and_an_append_both_succeed(spark, copy_table, monkeypatch) -> None:
    path = copy_table(True, "t")
    rows_before = engine_rows(path)
    _before_our_commit(monkeypatch, _append(path, range(7000, 7100), "a"))
    result = SparkTable(spark, str(path)).optimize()
    assert result.version == 3
    after = engine_rows(path)
    assert len(after) == len(rows_before) + 100
    assert sorted(r["id"] for r in after) == sorted([r["id"] for r in rows_before] + list(range(7000, 7100)))
