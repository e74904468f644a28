"""MERGE's in-process lever (spark.merge_local): the touched files found on the driver, taken only
for equality-only ON conditions and an unconditional WHEN MATCHED clause; results equal delta-rs's
MERGE on an identical copy, and the ambiguity rule holds."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.spark import MultipleSourceRowsMatchedError, SparkTable
from airflow_txnlog.spark.dml import merge, merge_local
from tests.spark.conftest import make_rows
from tests.spark.helpers import assert_same_as_deltalake

pytestmark = [pytest.mark.spark]


def _spark_path(*_: object, **__: object) -> object:
    raise AssertionError("the Spark touched-files job ran")


def _local_path(*_: object, **__: object) -> object:
    raise AssertionError("the in-process path ran")


@pytest.mark.parametrize(
    ("on", "delete"), [("t.id = s.id", False), ("t.id = s.id AND t.part = s.part", True)]
)
def test_in_process_merge_equals_deltalake(spark, pair, monkeypatch, on: str, delete: bool) -> None:
    ours, theirs = pair(True)
    source = make_rows(list(range(2300, 2500)))
    source = source.set_column(1, "value", pa.array([-1.0] * source.num_rows))
    monkeypatch.setattr(merge, "_find_touched", _spark_path)
    builder = SparkTable(spark, str(ours)).merge(spark.createDataFrame(source), on)
    builder = builder.when_matched_delete() if delete else builder.when_matched_update_all()
    result = builder.when_not_matched_insert_all().execute()
    theirs_builder = DeltaTable(str(theirs)).merge(source, on, source_alias="s", target_alias="t")
    theirs_builder = (
        theirs_builder.when_matched_delete() if delete else theirs_builder.when_matched_update_all()
    )
    m = theirs_builder.when_not_matched_insert_all().execute()
    assert_same_as_deltalake(ours, theirs)
    for ours_key, theirs_key in [
        ("numTargetRowsUpdated", "num_target_rows_updated"),
        ("numTargetRowsDeleted", "num_target_rows_deleted"),
        ("numTargetRowsInserted", "num_target_rows_inserted"),
        ("numTargetRowsCopied", "num_target_rows_copied"),
        ("numSourceRows", "num_source_rows"),
    ]:
        assert result.metrics[ours_key] == m[theirs_key], ours_key


def test_ambiguous_matches_are_refused_in_process(spark, copy_table, monkeypatch) -> None:
    path = copy_table(False, "t")
    monkeypatch.setattr(merge, "_find_touched", _spark_path)
    dup = make_rows([5, 5, 6])
    with pytest.raises(MultipleSourceRowsMatchedError, match="1 target row"):
        SparkTable(spark, str(path)).merge(
            spark.createDataFrame(dup), "t.id = s.id"
        ).when_matched_update_all().execute()
    # a lone unconditional DELETE may match several source rows (Delta's rule)
    r = (
        SparkTable(spark, str(path))
        .merge(spark.createDataFrame(dup), "t.id = s.id")
        .when_matched_delete()
        .execute()
    )
    assert r.metrics["numTargetRowsDeleted"] == 2


@pytest.mark.parametrize(
    ("on", "condition"),
    [("t.id = s.id", "s.value < 0"), ("t.id = s.id AND t.value > 3", None), ("t.value = s.value", None)],
)
def test_other_shapes_run_on_spark(spark, copy_table, monkeypatch, on: str, condition: str | None) -> None:
    path = copy_table(False, "t")
    monkeypatch.setattr(merge_local, "touched", _local_path)
    source = spark.createDataFrame(make_rows([1, 2, 3000]))
    r = SparkTable(spark, str(path)).merge(source, on).when_matched_update_all(condition=condition).execute()
    assert r.metrics["numSourceRows"] == 3
