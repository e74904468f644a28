"""Generated columns on every Spark write path (issue 26, item 3): Spark SQL fills what the data
leaves out (appends, MERGE inserts, UPDATE and MERGE updates of a source column) and every supplied
value is checked; the `txnlog` data source fills them on the executors with the engine's evaluator."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import ConstraintViolationError, Table
from airflow_txnlog.spark import SparkTable, txnlog_errors

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("d", pa.date32())])
GENERATED = {"d": "CAST(ts AS DATE)"}


def _df(spark: Any, rows: list[tuple[int, str]]) -> Any:
    return (  # (one task: see tests/spark/test_constraints.py's _df)
        spark.createDataFrame(rows, "id long, ts_text string")
        .selectExpr("id", "CAST(ts_text AS TIMESTAMP) AS ts")
        .coalesce(1)
    )


def _rows(path: Path) -> dict[int, dt.date | None]:
    table = DeltaTable(str(path)).to_pyarrow_table()  # read back by delta-rs
    return dict(zip(table.column("id").to_pylist(), table.column("d").to_pylist(), strict=True))


def _files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet")}


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> tuple[SparkTable, Path]:
    path = tmp_path / "t"
    st = SparkTable.create(spark, str(path), SCHEMA, partition_by=["d"], generated_columns=GENERATED)
    st.write(_df(spark, [(1, "2024-01-01 23:59:59"), (2, "2024-01-02 00:00:00")]))
    return st, path


def test_appends_fill_and_check(spark, table) -> None:
    st, path = table
    assert _rows(path) == {1: dt.date(2024, 1, 1), 2: dt.date(2024, 1, 2)}
    assert sorted(f.partition_values["d"] for f in Table.open(str(path)).snapshot().files()) == [
        "2024-01-01",
        "2024-01-02",
    ]
    good = _df(spark, [(3, "2024-02-03 04:05:06")]).selectExpr("*", "DATE'2024-02-03' AS d")
    st.write(good)
    bad = _df(spark, [(4, "2024-02-03 04:05:06")]).selectExpr("*", "DATE'2024-02-04' AS d")
    before = _files(path)
    with pytest.raises(
        ConstraintViolationError, match=r"generated column d = CAST\(ts AS DATE\) is violated by a row"
    ):
        st.write(bad)
    assert _files(path) == before and st.version() == 2


def test_update_of_the_source_recomputes_the_column(spark, table) -> None:
    st, path = table
    st.update("id = 1", {"ts": "ts + INTERVAL 2 DAYS"})
    assert _rows(path) == {1: dt.date(2024, 1, 3), 2: dt.date(2024, 1, 2)}
    with pytest.raises(ConstraintViolationError, match="generated column d"):
        st.update("id = 2", {"d": "DATE'1999-01-01'"})


def test_merge_fills_inserts_and_recomputes_updates(spark, table) -> None:
    st, path = table
    source = _df(spark, [(2, "2024-03-01 10:00:00"), (9, "2024-04-01 10:00:00")])
    st.merge(source, "t.id = s.id").when_matched_update(
        set={"ts": "s.ts"}
    ).when_not_matched_insert_all().execute()
    assert _rows(path) == {1: dt.date(2024, 1, 1), 2: dt.date(2024, 3, 1), 9: dt.date(2024, 4, 1)}


def test_the_data_source_fills_them_on_the_executors(spark, table) -> None:
    _, path = table
    with txnlog_errors():
        _df(spark, [(5, "2024-05-05 05:05:05")]).write.format("txnlog").mode("append").save(str(path))
    assert _rows(path)[5] == dt.date(2024, 5, 5)
    bad = _df(spark, [(6, "2024-05-05 05:05:05")]).selectExpr("*", "DATE'2020-01-01' AS d")
    with pytest.raises(ConstraintViolationError, match="generated column d"), txnlog_errors():
        bad.write.format("txnlog").mode("append").save(str(path))
    assert 6 not in _rows(path)


@pytest.mark.parametrize("generated", [GENERATED, None], ids=["generated", "plain"])
def test_a_filter_on_the_source_prunes_partitions_for_spark_dml(spark, tmp_path: Path, generated) -> None:
    """No column stats here, so only the derived partition filter can skip files."""
    path = tmp_path / "t"
    no_stats = {"delta.dataSkippingNumIndexedCols": "0"}
    st = SparkTable.create(
        spark, str(path), SCHEMA, partition_by=["d"], properties=no_stats, generated_columns=generated
    )
    rows = _df(spark, [(i, f"2024-01-{i:02d} 12:00:00") for i in range(1, 29)])
    st.write(rows if generated else rows.selectExpr("*", "CAST(ts AS DATE) AS d"))
    result = st.delete("ts >= '2024-01-25 00:00:00'")
    # generated: days 24 (the margin for a writer in another session time zone) to 28; plain: all 28
    assert len(result.scanned_files) == (5 if generated else 28)
    assert sorted(_rows(path)) == list(range(1, 25))


def test_update_recomputes_a_column_generated_from_a_nested_field(spark, tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())])), ("g", pa.int64())])
    st = SparkTable.create(spark, str(tmp_path / "n"), schema, generated_columns={"g": "s.a + 1"})
    st.write(spark.createDataFrame([(1, (10,))], "id long, s struct<a: long>"))
    st.update("id = 1", {"s": "named_struct('a', s.a * 2)"})
    assert DeltaTable(str(tmp_path / "n")).to_pyarrow_table().to_pylist() == [
        {"id": 1, "s": {"a": 20}, "g": 21}
    ]
