"""UPDATE: equal to deltalake's on identical copies; only files holding matches are rewritten."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.spark import SparkTable
from tests.spark.helpers import assert_same_as_deltalake, files_with_matches

pytestmark = [pytest.mark.spark]


@pytest.mark.parametrize("partitioned", [True, False])
def test_update_matches_deltalake(spark, pair, partitioned: bool) -> None:
    ours, theirs = pair(partitioned)
    predicate = "id >= 300 AND id < 420"
    sets = {"value": "value * 2 + 1", "name": "name || '-x'", "amount": "amount + 1"}
    holding = files_with_matches(ours, predicate)
    result = SparkTable(spark, str(ours)).update(predicate, sets)
    theirs_metrics = DeltaTable(str(theirs)).update(updates=sets, predicate=predicate)
    assert_same_as_deltalake(ours, theirs)
    assert result.metrics["numUpdatedRows"] == theirs_metrics["num_updated_rows"] == 120
    assert result.metrics["numCopiedRows"] == theirs_metrics["num_copied_rows"]
    assert set(result.removed_files) == holding


def test_update_of_a_partition_column_moves_rows(spark, pair) -> None:
    ours, theirs = pair(True)
    # `%` is outside the engine's predicate subset: no pruning, Spark still evaluates it.
    result = SparkTable(spark, str(ours)).update("id % 10 = 0", {"part": "'z'"})
    DeltaTable(str(theirs)).update(updates={"part": "'z'"}, predicate="id % 10 = 0")
    assert_same_as_deltalake(ours, theirs)
    assert len(result.scanned_files) == 24 and result.metrics["numUpdatedRows"] == 240
    moved = [f for f in Table.open(str(ours)).snapshot().files() if f.partition_values["part"] == "z"]
    assert moved and all(f.path.startswith("part=z/") for f in moved)


def test_update_everything_and_nothing(spark, pair) -> None:
    ours, theirs = pair(False)
    st = SparkTable(spark, str(ours))
    assert st.update("id > 99999", {"value": "0"}).version is None
    result = st.update(None, {"VALUE": "-value"})
    DeltaTable(str(theirs)).update(updates={"value": "-value"})
    assert result.metrics["numUpdatedRows"] == 2400 and result.metrics["numRemovedFiles"] == 24
    assert_same_as_deltalake(ours, theirs)
    with pytest.raises(InvalidArgumentError, match="unknown column"):
        st.update(None, {"nope": "1"})
