"""MERGE ... WHEN NOT MATCHED BY SOURCE: equal to deltalake's on identical copies; the target rows
no source row matches are updated or deleted, with deletion vectors and the change data feed too;
clauses that read the source are refused before any Spark job."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.spark import MultipleSourceRowsMatchedError, SparkTable
from tests.spark.helpers import assert_same_as_deltalake, engine_rows, merge_source

pytestmark = [pytest.mark.spark]


@pytest.mark.parametrize("partitioned", [True, False])
def test_sync_upserts_and_deletes_what_the_source_lacks(spark, pair, partitioned: bool) -> None:
    """The full-sync merge: update matches, insert new rows, delete target rows the source lacks."""
    ours, theirs = pair(partitioned)
    before = len(engine_rows(ours))
    source = merge_source(range(2300, 2500))  # 100 existing ids (2300..2399), 100 new
    result = (
        SparkTable(spark, str(ours))
        .merge(spark.createDataFrame(source), "t.id = s.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete()
        .execute()
    )
    m = (
        DeltaTable(str(theirs))
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete()
        .execute()
    )
    assert_same_as_deltalake(ours, theirs)
    assert sorted(r["id"] for r in engine_rows(ours)) == list(range(2300, 2500))
    metrics = result.metrics
    assert metrics["numTargetRowsNotMatchedBySourceDeleted"] == before - 100 == m["num_target_rows_deleted"]
    assert metrics["numTargetRowsDeleted"] == before - 100 and metrics["numTargetRowsMatchedDeleted"] == 0
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (100, 100)
    assert metrics["numTargetRowsCopied"] == m["num_target_rows_copied"] == 0
    assert len(result.scanned_files) == metrics["numTargetFilesRemoved"]  # every file: none pruned


@pytest.mark.slow
def test_conditional_by_source_clauses_match_deltalake(spark, pair) -> None:
    ours, theirs = pair(True)
    source = merge_source(list(range(0, 600, 2)))
    (
        SparkTable(spark, str(ours))
        .merge(spark.createDataFrame(source), "t.id = s.id AND t.part = s.part")
        .when_matched_update(set={"value": "s.value"})
        .when_not_matched_by_source_delete(condition="t.id < 100")
        .when_not_matched_by_source_update(
            set={"name": "'stale'", "value": "t.value * 2"}, condition="t.id < 900"
        )
        .execute()
    )
    (
        DeltaTable(str(theirs))
        .merge(source, "t.id = s.id AND t.part = s.part", source_alias="s", target_alias="t")
        .when_matched_update(updates={"value": "s.value"})
        .when_not_matched_by_source_delete(predicate="t.id < 100")
        .when_not_matched_by_source_update(
            updates={"name": "'stale'", "value": "t.value * 2"}, predicate="t.id < 900"
        )
        .execute()
    )
    assert_same_as_deltalake(ours, theirs)
    rows = {r["id"]: r for r in engine_rows(ours)}
    assert 1 not in rows and rows[101]["name"] == "stale" and rows[901]["name"] != "stale"
    assert rows[2]["value"] == -(2 % 3) * 1.5  # matched: updated from the source


def test_an_empty_source_deletes_every_target_row_the_clause_takes(spark, copy_table) -> None:
    path = copy_table(False, "t")
    st = SparkTable(spark, str(path))
    empty = spark.createDataFrame(merge_source([1])).limit(0)
    kept = [r["id"] for r in engine_rows(path) if r["id"] < 2000]
    gone = len(engine_rows(path)) - len(kept)
    merge = st.merge(empty, "t.id = s.id").when_not_matched_by_source_delete(condition="t.id >= 2000")
    result = merge.execute()
    assert result.version == st.version() and result.metrics["numSourceRows"] == 0
    assert gone > 0 and result.metrics["numTargetRowsNotMatchedBySourceDeleted"] == gone
    assert sorted(r["id"] for r in engine_rows(path)) == sorted(kept)


def test_by_source_delete_with_deletion_vectors_and_change_data(spark, tmp_path: Path) -> None:
    root = tmp_path / "dvcdf"
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
    props = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
    Table.create(str(root), schema=schema, partition_by=["p"], properties=props)
    df = spark.createDataFrame(
        [(i, "a" if i < 5 else "b", i) for i in range(10)], "id long, p string, v long"
    )
    st = SparkTable(spark, str(root))
    st.write(df.repartition(1))
    before = {f.path for f in Table.open(str(root)).snapshot().files()}
    src = spark.createDataFrame([(1, "a", 10), (7, "b", 70)], "id long, p string, v long")
    result = (
        st.merge(src, "t.id = s.id")
        .when_matched_update(set={"v": "s.v"})
        .when_not_matched_by_source_delete(condition="t.id % 2 = 0")
        .when_not_matched_by_source_update(set={"v": "-t.v"})
        .execute()
    )
    rows = sorted((r["id"], r["v"]) for r in st.to_df().collect())
    assert rows == [(1, 10), (3, -3), (5, -5), (7, 70), (9, -9)]
    assert result.metrics["numDeletionVectorsAdded"] == 2 and result.metrics["numTargetRowsCopied"] == 0
    assert before < {f.path for f in Table.open(str(root)).snapshot().files()}  # marked in place
    feed = Table.open(str(root)).changes(result.version, result.version).to_pylist()
    got = sorted((r["_change_type"], r["id"], r["v"]) for r in feed)
    deleted = [("delete", i, i) for i in (0, 2, 4, 6, 8)]
    updated = [
        (k, i, v)
        for i, old, new in ((1, 1, 10), (3, 3, -3), (5, 5, -5), (7, 7, 70), (9, 9, -9))
        for k, v in (("update_preimage", old), ("update_postimage", new))
    ]
    assert got == sorted(deleted + updated)
    theirs = pa.table(DeltaTable(str(root)).load_cdf(starting_version=result.version))
    assert sorted((r["_change_type"], r["id"], r["v"]) for r in theirs.to_pylist()) == got


def test_by_source_clauses_must_not_read_themerge_source(spark, copy_table) -> None:
    path = copy_table(False, "t")
    st = SparkTable(spark, str(path))
    before = st.version()
    source = spark.createDataFrame(merge_source(range(10)))
    with pytest.raises(InvalidArgumentError, match=r"NOT MATCHED BY SOURCE delete: 's.id > 3' must use only"):
        st.merge(source, "t.id = s.id").when_not_matched_by_source_delete(condition="s.id > 3").execute()
    with pytest.raises(InvalidArgumentError, match="must use only the target's columns"):
        st.merge(source, "t.id = s.id").when_not_matched_by_source_update(set={"value": "s.value"}).execute()
    with pytest.raises(InvalidArgumentError, match=r"cannot be '\*'"):
        st.merge(source, "t.id = s.id").when_not_matched_by_source_update(set="*")
    with pytest.raises(
        InvalidArgumentError, match="WHEN NOT MATCHED BY SOURCE clause after an unconditional"
    ):
        st.merge(source, "t.id = s.id").when_not_matched_by_source_delete().when_not_matched_by_source_delete(
            condition="t.id > 1"
        )
    # an unconditional clause of another scope does not end this one
    st.merge(source, "t.id = s.id").when_matched_delete().when_not_matched_by_source_delete(
        condition="t.id > 1"
    )
    assert st.version() == before


def test_a_target_row_two_source_rows_match_is_ambiguous_with_by_source_clauses(spark, copy_table) -> None:
    """With a NOT MATCHED BY SOURCE clause every matched pair counts, as in Delta: row 5 matched
    twice sits in a file the delete rewrites, and would otherwise be copied twice."""
    path = copy_table(False, "t")
    st = SparkTable(spark, str(path))
    before = st.version()
    dup = spark.createDataFrame(merge_source([5, 5, 6]))
    with pytest.raises(MultipleSourceRowsMatchedError, match="more than one source row"):
        st.merge(dup, "t.id = s.id").when_not_matched_by_source_delete(condition="t.id < 20").execute()
    assert st.version() == before
