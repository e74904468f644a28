"""OPTIMIZE: bin-packing per partition, dataChange=false, rows unchanged (as deltalake's compact)."""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import AddFile, InvalidArgumentError, Table
from airflow_txnlog.spark import SparkTable
from airflow_txnlog.spark.maintenance.optimize import bin_pack
from tests.spark.helpers import assert_same_as_deltalake, commit_actions

pytestmark = [pytest.mark.spark]


def _add(path: str, size: int, part: str = "a") -> AddFile:
    return AddFile(path=path, partition_values={"p": part}, size=size, modification_time=0)


def test_bin_pack_groups_small_files_per_partition() -> None:
    files = [_add("a1", 10), _add("a2", 60), _add("a3", 50), _add("big", 500), _add("b1", 5, "b")]
    bins = bin_pack(files, 100)
    assert [[f.path for f in b] for b in bins] == [["a1", "a3"]]  # a2 alone; big too large; b1 alone
    assert [[f.path for f in b] for b in bin_pack(files, 1000)] == [["a1", "a3", "a2", "big"]]


def test_bin_pack_purges_files_with_many_deleted_rows() -> None:
    def dv(path: str, size: int, rows: int, deleted: int, part: str = "a") -> AddFile:
        stats = json.dumps({"numRecords": rows})
        vector = {"storageType": "u", "pathOrInlineDv": "x" * 20, "offset": 1, "sizeInBytes": 34,
                  "cardinality": deleted}  # fmt: skip
        return AddFile(path=path, partition_values={"p": part}, size=size, modification_time=0,
                       stats=stats, deletion_vector=vector)  # fmt: skip

    files = [dv("big-many", 500, 100, 6), dv("big-few", 500, 100, 5), dv("small-few", 10, 100, 1, "b")]
    # 6% deleted > Delta's 5% ratio: rewritten alone, though large; 5% is not; a small file alone stays
    assert [[f.path for f in b] for b in bin_pack(files, 100)] == [["big-many"]]


@pytest.mark.parametrize("partitioned", [True, False])
def test_optimize_compacts_like_deltalake(spark, pair, partitioned: bool) -> None:
    ours, theirs = pair(partitioned)
    result = SparkTable(spark, str(ours)).optimize()
    theirs_metrics = DeltaTable(str(theirs)).optimize.compact()
    assert_same_as_deltalake(ours, theirs)
    expected_files = 4 if partitioned else 1
    assert result.metrics["numRemovedFiles"] == theirs_metrics["numFilesRemoved"] == 24
    assert result.metrics["numAddedFiles"] == theirs_metrics["numFilesAdded"] == expected_files
    assert len(Table.open(str(ours)).snapshot().files()) == expected_files
    actions = commit_actions(ours, result.version)
    assert all(a[k]["dataChange"] is False for a in actions for k in ("add", "remove") if k in a)
    info = actions[0]["commitInfo"]
    assert info["operation"] == "OPTIMIZE" and info["isolationLevel"] == "SnapshotIsolation"
    assert SparkTable(spark, str(ours)).optimize().version is None  # nothing left to compact


def test_optimize_where_and_target_size(spark, copy_table) -> None:
    path = copy_table(True, "t")
    st = SparkTable(spark, str(path))
    sizes = [f.size for f in Table.open(str(path)).snapshot().files() if f.partition_values["part"] == "c"]
    result = st.optimize(where="part = 'c'", target_file_size=sum(sizes) // 2)
    assert set(f.split("/")[0] for f in result.removed_files) == {"part=c"}
    assert 2 <= result.metrics["numAddedFiles"] <= 3 and result.metrics["numBatches"] >= 2
    with pytest.raises(InvalidArgumentError, match="partition columns"):
        st.optimize(where="id > 5")
