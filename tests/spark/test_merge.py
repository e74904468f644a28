"""MERGE: equal to deltalake's on identical copies; ambiguous matches refused; touched files only."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import InvalidArgumentError
from airflow_txnlog.spark import MultipleSourceRowsMatchedError, SparkTable
from tests.spark.helpers import assert_same_as_deltalake, engine_rows, merge_source

pytestmark = [pytest.mark.spark]


@pytest.mark.parametrize("partitioned", [True, False])
def test_upsert_matches_deltalake(spark, pair, partitioned: bool) -> None:
    ours, theirs = pair(partitioned)
    source = merge_source(range(2300, 2500))  # 100 existing ids, 100 new
    st = SparkTable(spark, str(ours))
    result = (
        st.merge(spark.createDataFrame(source), "t.id = s.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    m = (
        DeltaTable(str(theirs))
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert_same_as_deltalake(ours, theirs)
    assert result.metrics["numSourceRows"] == m["num_source_rows"] == 200
    assert result.metrics["numTargetRowsUpdated"] == m["num_target_rows_updated"] == 100
    assert result.metrics["numTargetRowsInserted"] == m["num_target_rows_inserted"] == 100
    assert result.metrics["numTargetRowsCopied"] == m["num_target_rows_copied"]
    # The ON keys bound the target: only files whose id range reaches 2300..2499 were read.
    assert len(result.scanned_files) < 24 and result.metrics["numTargetFilesRemoved"] >= 1


@pytest.mark.slow
def test_conditional_clauses_match_deltalake(spark, pair) -> None:
    ours, theirs = pair(True)
    source = merge_source(list(range(0, 400, 3)) + list(range(2400, 2440)))
    st = SparkTable(spark, str(ours))
    (
        st.merge(spark.createDataFrame(source), "t.id = s.id AND t.part = s.part", source_alias="s")
        .when_matched_delete(condition="s.value < -2")
        .when_matched_update(set={"value": "s.value + t.value", "name": "upper(t.name)"})
        .when_not_matched_insert(
            values={"id": "s.id", "part": "s.part", "value": "1.5"}, condition="s.id % 2 = 0"
        )
        .execute()
    )
    (
        DeltaTable(str(theirs))
        .merge(source, "t.id = s.id AND t.part = s.part", source_alias="s", target_alias="t")
        .when_matched_delete(predicate="s.value < -2")
        .when_matched_update(updates={"value": "s.value + t.value", "name": "upper(t.name)"})
        .when_not_matched_insert(
            updates={"id": "s.id", "part": "s.part", "value": "1.5"}, predicate="s.id % 2 = 0"
        )
        .execute()
    )
    assert_same_as_deltalake(ours, theirs)


def test_insert_only_merge_appends_without_rewriting(spark, pair) -> None:
    ours, theirs = pair(False)
    source = merge_source(range(2390, 2410))
    result = (
        SparkTable(spark, str(ours))
        .merge(spark.createDataFrame(source), "s.id = t.id")
        .when_not_matched_insert_all()
        .execute()
    )
    DeltaTable(str(theirs)).merge(
        source, "s.id = t.id", source_alias="s", target_alias="t"
    ).when_not_matched_insert_all().execute()
    assert_same_as_deltalake(ours, theirs)
    assert result.removed_files == () and result.metrics["numTargetRowsInserted"] == 10


def test_several_source_rows_for_one_target_row_is_an_error(spark, copy_table) -> None:
    path = copy_table(False, "t")
    st = SparkTable(spark, str(path))
    before = st.version()
    dup = spark.createDataFrame(merge_source([5, 5, 6]))
    with pytest.raises(MultipleSourceRowsMatchedError, match="more than one source row"):
        st.merge(dup, "t.id = s.id").when_matched_update(set={"value": "s.value"}).execute()
    assert st.version() == before
    # ... unless the only matched clause is an unconditional delete (not ambiguous, as in Delta).
    result = st.merge(dup, "t.id = s.id").when_matched_delete().execute()
    assert result.metrics["numTargetRowsDeleted"] == 2
    assert [r["id"] for r in engine_rows(path)][:6] == [0, 1, 2, 3, 4, 7]


def test_merge_that_changes_nothing_does_not_commit(spark, copy_table) -> None:
    path = copy_table(True, "t")
    st = SparkTable(spark, str(path))
    source = spark.createDataFrame(merge_source(range(10)))
    result = (
        st.merge(source, "t.id = s.id")
        .when_matched_update(set={"value": "0"}, condition="s.id > 100")
        .execute()
    )
    assert result.version is None and st.version() == 1
    with pytest.raises(InvalidArgumentError):
        st.merge(source, "t.id = s.id").execute()
    with pytest.raises(InvalidArgumentError, match="unconditional"):
        st.merge(source, "t.id = s.id").when_matched_delete().when_matched_update_all()
