"""Column defaults (allowColumnDefaults) on every Spark write path: `SparkTable.write`, MERGE inserts
(listed values and `*`) and the `txnlog` data source fill a defaulted column the data lacks with the
value the engine's writer fills; an explicit NULL is kept; delta-rs reads the rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("n", pa.int64()),
        pa.field("s", pa.string(), nullable=False),
    ]
)


def _rows(path: Path) -> list[tuple[int, int | None, str]]:
    table = DeltaTable(str(path)).to_pyarrow_table()  # read back by delta-rs
    cols = [table.column(c).to_pylist() for c in ("id", "n", "s")]
    return sorted(zip(*cols, strict=True))


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> tuple[SparkTable, Path]:
    path = tmp_path / "t"
    t = Table.create(str(path), schema=SCHEMA)
    t.set_column_default("n", "40 + 2")
    t.set_column_default("s", "'none'")
    t.write(pa.table({"id": [1]}))  # (the engine's writer: 42, 'none')
    return SparkTable(spark, str(path)), path


def test_spark_writes_fill_what_the_data_lacks(spark, table) -> None:
    st, path = table
    st.write(spark.createDataFrame([(2,)], "id long"))
    st.write(spark.createDataFrame([(3, None, "x")], "id long, n long, s string"))  # (NULL kept)
    spark.createDataFrame([(4, 7)], "id long, n long").write.format("txnlog").mode("append").save(str(path))
    assert _rows(path) == [(1, 42, "none"), (2, 42, "none"), (3, None, "x"), (4, 7, "none")]


def test_merge_inserts_fill_the_defaults(spark, table) -> None:
    st, path = table
    source = spark.createDataFrame([(1, 5), (6, 6), (7, 7)], "id long, k long")
    (
        st.merge(source, "t.id = s.id")
        .when_matched_update(set={"n": "s.k"})
        .when_not_matched_insert(values={"id": "s.id"}, condition="s.id = 6")
        .execute()
    )
    star = spark.createDataFrame([(8,)], "id long")
    st.merge(star, "t.id = s.id").when_not_matched_insert_all().execute()
    assert _rows(path) == [(1, 5, "none"), (6, 42, "none"), (8, 42, "none")]


def test_the_default_keyword_in_update_and_merge(spark, table) -> None:
    """`DEFAULT` as a value is the column's default, or NULL for a column without one (as in Spark)."""
    st, path = table
    st.write(spark.createDataFrame([(2, 5, "x")], "id long, n long, s string"))
    st.update("id = 2", set={"n": "DEFAULT", "s": "default"})
    source = spark.createDataFrame([(1,), (3,)], "id long")
    (
        st.merge(source, "t.id = s.id")
        .when_matched_update(set={"s": "'seen'", "n": "DEFAULT"})
        .when_not_matched_insert(values={"id": "s.id", "n": "DEFAULT", "s": "DEFAULT"})
        .execute()
    )
    assert _rows(path) == [(1, 42, "seen"), (2, 42, "none"), (3, 42, "none")]
