"""Row tracking on Spark (issue 28, item 2): after appends, a MERGE, a DELETE, an UPDATE and an
OPTIMIZE every surviving row keeps its stable row id (compared per key before and after), no two
rows share one, copied rows keep their commit version and updated ones get the update's, and each
commit says `delta.rowTracking.preserved: true`. The engine and Spark read the same ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.spark import SparkTable

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("p", pa.string())])


def _ids(st: SparkTable) -> dict[int, tuple[int, int, str]]:
    """key -> (row id, row commit version, value), read by Spark."""
    rows = st.to_df(row_tracking=True).collect()
    return {r["k"]: (r["_row_id"], r["_row_commit_version"], r["v"]) for r in rows}


def _preserved(t: Table) -> str:
    return str(t.history(1)[0]["tags"]["delta.rowTracking.preserved"])


@pytest.mark.parametrize("dv", [False, True], ids=["rewrite", "deletion-vectors"])
def test_ids_survive_merge_delete_update_and_optimize(spark: Any, tmp_path: Path, dv: bool) -> None:
    props = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "true" if dv else "false"}
    st = SparkTable.create(spark, str(tmp_path / "t"), SCHEMA, partition_by=["p"], properties=props)
    for i in range(3):
        st.write(
            spark.createDataFrame(
                [(10 * i + j, f"a{10 * i + j}", "x" if j % 2 else "y") for j in range(6)],
                "k long, v string, p string",
            )
        )
    t = st.table
    start = _ids(st)
    assert sorted(i for i, _, _ in start.values()) == list(range(18))

    source = spark.createDataFrame(
        [(1, "merged", "x"), (2, "merged", "y"), (99, "new", "x")], "k long, v string, p string"
    )
    st.merge(
        source, "t.k = s.k", source_alias="s", target_alias="t"
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    merged_at = t.latest_version()
    assert _preserved(t) == "true"
    after_merge = _ids(st)
    for k, (rid, version, _) in start.items():
        assert after_merge[k][0] == rid  # every row keeps its id
        assert after_merge[k][1] == (merged_at if k in (1, 2) else version)  # updated: the merge's version
    assert after_merge[99][0] > 17 and after_merge[99][1] == merged_at  # an insert: a fresh id

    st.delete("k IN (3, 4)")
    assert _preserved(t) == "true"
    st.update("k = 5", {"v": "'updated'"})
    updated_at = t.latest_version()
    assert _preserved(t) == "true"
    st.optimize()
    assert _preserved(t) == "true"

    final = _ids(st)
    assert set(final) == set(after_merge) - {3, 4}
    for k, (rid, version, _) in after_merge.items():
        if k in final:
            assert final[k][0] == rid, k
            assert final[k][1] == (updated_at if k == 5 else version), k
    assert final[5][2] == "updated"
    assert len({rid for rid, _, _ in final.values()}) == len(final)  # no two rows share an id

    engine = t.snapshot().to_arrow(row_tracking=True)  # the engine reads the same ids
    assert dict(zip(engine["k"].to_pylist(), engine["_row_id"].to_pylist(), strict=True)) == {
        k: v[0] for k, v in final.items()
    }
    assert sorted(pl.read_delta(t.uri)["k"].to_list()) == sorted(final)  # (delta-kernel-rs reads DVs)


def test_spark_zorder_and_replace_where_keep_ids(spark: Any, tmp_path: Path) -> None:
    st = SparkTable.create(spark, str(tmp_path / "t"), SCHEMA, properties={"delta.enableRowTracking": "true"})
    for i in range(3):
        st.write(
            spark.createDataFrame([(10 * i + j, "a", "x") for j in range(5)], "k long, v string, p string")
        )
    before = _ids(st)
    st.optimize(zorder_by=["k", "v"])
    assert _preserved(st.table) == "true" and _ids(st) == before
    st.write(
        spark.createDataFrame([(1, "b", "x")], "k long, v string, p string"),
        mode="overwrite",
        replace_where="k < 3",
    )
    after = _ids(st)
    assert all(after[k][:2] == before[k][:2] for k in before if k >= 3)
    assert after[1][0] > max(i for i, _, _ in before.values())  # a new row: a fresh id
    assert set(after) == set(before) - {0, 2}


def test_row_ids_need_row_tracking(spark: Any, tmp_path: Path) -> None:
    st = SparkTable.create(spark, str(tmp_path / "t"), SCHEMA)
    with pytest.raises(InvalidArgumentError, match="row tracking enabled"):
        st.to_df(row_tracking=True)


def test_the_data_source_reads_row_ids(spark: Any, tmp_path: Path) -> None:
    st = SparkTable.create(spark, str(tmp_path / "t"), SCHEMA, properties={"delta.enableRowTracking": "true"})
    st.write(spark.createDataFrame([(1, "a", "x"), (2, "b", "x")], "k long, v string, p string"))
    st.write(spark.createDataFrame([(3, "c", "y")], "k long, v string, p string"))
    st.delete("k = 1")
    df = spark.read.format("txnlog").option("rowTracking", "true").load(st.table.uri)
    assert df.columns == ["k", "v", "p", "_row_id", "_row_commit_version"]
    got = {r["k"]: (r["_row_id"], r["_row_commit_version"]) for r in df.collect()}
    assert got == {k: v[:2] for k, v in _ids(st).items()}
    assert got[2][0] == 1 and got[3][0] == 2  # the delete kept row 2's id
    over = spark.createDataFrame([(7, "z", "x")], "k long, v string, p string")
    over.write.format("txnlog").mode("overwrite").save(st.table.uri)  # inserts only: nothing copied
    assert _preserved(st.table) == "true"
    plain = SparkTable.create(spark, str(tmp_path / "plain"), SCHEMA)
    with pytest.raises(Exception, match="rowTracking=true needs row tracking"):
        spark.read.format("txnlog").option("rowTracking", "true").load(plain.table.uri).collect()
