"""Stats from parquet footers (footers.py) and partition values from Spark's folders (partitions.py)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.stats import compute_stats
from airflow_txnlog.spark import SparkTable
from airflow_txnlog.spark.footers import footer_stats
from airflow_txnlog.spark.partitions import hive_unescape, partition_values_from_dir

pytestmark = [pytest.mark.spark]


def _parsed(stats: str) -> dict:
    return json.loads(stats, parse_float=decimal.Decimal)


def test_footer_stats_equal_engine_stats_for_every_file(spark, templates) -> None:
    """Each file Spark wrote carries exactly the stats the engine computes from its rows."""
    for path in templates.values():
        snap = Table.open(str(path)).snapshot()
        assert len(snap.files()) >= 20
        for f in snap.files():
            data = pq.read_table(path / f.path)
            assert _parsed(f.stats) == _parsed(compute_stats(data)), f.path


def test_footer_stats_rules(tmp_path: Path) -> None:
    """Truncation with a successor, exact decimals, nested structs, arrays skipped, column budget."""
    long = "é" * 40
    data = pa.table(
        {
            "s": ["b", long, None],
            "f": [1.0, None, 2.0],
            "st": pa.array([{"a": 1}, None, {"a": 3}], pa.struct([("a", pa.int64())])),
            "arr": [[1], None, [2, 3]],
            "d": pa.array([decimal.Decimal("12345678901234567890.12"), None, decimal.Decimal("-1.00")]),
            "ts": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 456789), None, None], pa.timestamp("us")),
        }
    )
    path = tmp_path / "x.parquet"
    pq.write_table(data, path, row_group_size=2)
    stats = _parsed(footer_stats(pq.read_metadata(path), data.schema))
    assert stats == _parsed(compute_stats(data))
    assert stats["maxValues"]["s"] == "é" * 32 + "\U0010ffff"
    assert stats["minValues"]["f"] == 1 and stats["nullCount"]["f"] == 1
    assert stats["maxValues"]["d"] == decimal.Decimal("12345678901234567890.12")
    assert stats["maxValues"]["ts"] == "2024-01-01T01:02:03.456"
    budget = _parsed(footer_stats(pq.read_metadata(path), data.schema, num_indexed_cols=2))
    assert set(budget["nullCount"]) == {"s", "f"}


def test_hive_unescape_inverts_spark_escaping() -> None:
    assert hive_unescape("a%25b c+d%3D%2Fx%2A") == "a%b c+d=/x*"
    t = pa.schema([("p", pa.string()), ("n", pa.int32())])
    assert partition_values_from_dir("p=a%3Ab/n=__HIVE_DEFAULT_PARTITION__", t, ["p", "n"], "UTC") == {
        "p": "a:b",
        "n": None,
    }


def test_timestamp_partition_values_are_utc_whatever_the_session_zone(spark, tmp_path: Path) -> None:
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")), ("v", pa.int64())])
    st = SparkTable.create(spark, str(tmp_path / "t"), schema, partition_by=["ts", "ntz"])
    instant = dt.datetime(2024, 3, 1, 12, 30, tzinfo=dt.UTC)
    rows = pa.table({"ts": [instant], "ntz": [dt.datetime(2024, 3, 1, 8, 0)], "v": [1]}, schema=schema)
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = spark.createDataFrame(
            [(instant, dt.datetime(2024, 3, 1, 8, 0), 1)], "ts timestamp, ntz timestamp_ntz, v long"
        )
        st.write(df)
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    (add,) = Table.open(str(tmp_path / "t")).snapshot().files()
    assert add.partition_values["ts"] == "2024-03-01 12:30:00.000000"
    assert add.partition_values["ntz"] == "2024-03-01 08:00:00.000000"
    assert Table.open(str(tmp_path / "t")).snapshot().to_arrow().to_pylist() == rows.to_pylist()


def test_nan_leaves_no_bounds(spark, tmp_path: Path) -> None:
    """Spark's parquet writer orders NaN last, so the file's max is NaN: no usable bounds (Spark SQL
    says NaN > 5 is true, so bounds without the NaN would prune a file wrongly)."""
    schema = pa.schema([("id", pa.int64()), ("f", pa.float64())])
    st = SparkTable.create(spark, str(tmp_path / "t"), schema)
    st.write(spark.createDataFrame(pa.table({"id": [1, 2, 3], "f": [1.0, float("nan"), 2.0]})).coalesce(1))
    (add,) = Table.open(str(tmp_path / "t")).snapshot().files()
    stats = json.loads(add.stats)
    assert "f" not in stats["minValues"] and "f" not in stats["maxValues"]
    assert stats["nullCount"]["f"] == 0 and stats["minValues"]["id"] == 1
    assert st.delete("f > 5").metrics["numDeletedRows"] == 1  # the NaN row, as Spark SQL decides
