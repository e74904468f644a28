"""The change data feed written by our Spark DML (`delta.enableChangeDataFeed=true`): DELETE, UPDATE,
MERGE and replace_where that rewrite part of a file write `cdc` files; appends and whole-file
removes need none. Each operation's feed is checked row by row (from what the operation did), and
delta-rs's `load_cdf` must read exactly what `Table.changes` reads from the same table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable

pytestmark = [pytest.mark.spark]
deltalake = pytest.importorskip("deltalake")

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])


def _feed(t: pa.Table, version: int) -> list[tuple[Any, ...]]:
    rows = [r for r in t.to_pylist() if r["_commit_version"] == version]
    return sorted((r["_change_type"], r["id"], r["p"], r["v"]) for r in rows)


@pytest.fixture
def cdf_table(spark, tmp_path: Path) -> Path:
    root = tmp_path / "cdf"
    Table.create(
        str(root), schema=SCHEMA, partition_by=["p"], properties={"delta.enableChangeDataFeed": "true"}
    )
    df = spark.createDataFrame(
        [(i, "a" if i % 2 else "b", i * 10) for i in range(1, 9)], "id long, p string, v long"
    )
    SparkTable(spark, str(root)).write(df.repartition(1))  # version 1: an append, no change files
    return root


def test_each_dml_writes_its_change_data(spark, cdf_table: Path) -> None:
    t = SparkTable(spark, str(cdf_table))
    v_del = t.delete("id = 3").version  # part of a file: its other rows are copied
    v_upd = t.update("id IN (4, 5)", {"v": "v + 1"}).version
    src = spark.createDataFrame([(6, "b", -6), (99, "a", 990), (7, "a", 0)], "id long, p string, v long")
    v_mrg = (
        t.merge(src, "t.id = s.id")
        .when_matched_delete(condition="s.v = 0")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
        .version
    )
    new = spark.createDataFrame([(100, "b", 1)], "id long, p string, v long")
    v_rw = t.write(new, mode="overwrite", replace_where="id = 8 OR id = 100").version
    feed = Table.open(str(cdf_table)).changes(1)
    assert _feed(feed, 1) == sorted(("insert", i, "a" if i % 2 else "b", i * 10) for i in range(1, 9))
    assert _feed(feed, v_del) == [("delete", 3, "a", 30)]
    assert _feed(feed, v_upd) == sorted(
        [
            ("update_preimage", 4, "b", 40),
            ("update_postimage", 4, "b", 41),
            ("update_preimage", 5, "a", 50),
            ("update_postimage", 5, "a", 51),
        ]
    )
    assert _feed(feed, v_mrg) == sorted(
        [
            ("update_preimage", 6, "b", 60),
            ("update_postimage", 6, "b", -6),
            ("delete", 7, "a", 70),
            ("insert", 99, "a", 990),
        ]
    )
    assert _feed(feed, v_rw) == [("delete", 8, "b", 80), ("insert", 100, "b", 1)]
    theirs = pa.table(deltalake.DeltaTable(str(cdf_table)).load_cdf(starting_version=1))
    for v in (1, v_del, v_upd, v_mrg, v_rw):
        assert _feed(theirs, v) == _feed(feed, v), v


def test_whole_file_deletes_write_no_change_files(spark, cdf_table: Path) -> None:
    t = SparkTable(spark, str(cdf_table))
    v = t.delete("p = 'b'").version  # partition predicate: whole files, the feed is inferred
    assert not (cdf_table / "_change_data").exists()
    feed = Table.open(str(cdf_table)).changes(v)
    assert _feed(feed, v) == sorted(("delete", i, "b", i * 10) for i in range(2, 9, 2))
    assert t.changes(v).count() == 4


def test_vacuum_reclaims_old_change_files(spark, cdf_table: Path) -> None:
    SparkTable(spark, str(cdf_table)).delete("id = 3")
    files = list((cdf_table / "_change_data").rglob("*.parquet"))
    assert files
    t = Table.open(str(cdf_table))
    plan = t.vacuum(dry_run=True, retention_hours=0, enforce_retention=False)
    assert {Path(f).name for f in plan.files} >= {f.name for f in files}
    assert not t.vacuum(dry_run=True).files  # within the 7-day retention they stay


def test_a_delete_matched_by_several_source_rows_is_one_change(spark, cdf_table: Path) -> None:
    src = spark.createDataFrame([(2, "b", 0), (2, "b", 1)], "id long, p string, v long")  # id 2 twice
    v = SparkTable(spark, str(cdf_table)).merge(src, "t.id = s.id").when_matched_delete().execute().version
    feed = Table.open(str(cdf_table)).changes(v)
    assert _feed(feed, v) == [("delete", 2, "b", 20)]
