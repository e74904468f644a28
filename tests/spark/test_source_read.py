"""`spark.read.format("txnlog")`: the Python data source (airflow_txnlog.spark.source).

Expected rows are the engine's own read of the same version (checked elsewhere against Delta's
answers and delta-rs); what is tested here is that Spark gets exactly them through the data source:
latest, `versionAsOf`, `timestampAsOf`, pushed filters (files read shrink, partition filters are
decided by the source), deletion vectors and column mapping, and clear errors for bad options."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from pyspark.sql.datasource import EqualNullSafe, EqualTo, GreaterThan, In, IsNull, Not, StringStartsWith

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.spark import SparkTable, register
from airflow_txnlog.spark.source.filters import plan
from airflow_txnlog.spark.source.options import ReadOptions
from airflow_txnlog.spark.source.reader import TxnlogReader
from tests.spark.conftest import SCHEMA, make_rows
from tests.spark.helpers import engine_rows, spark_rows

pytestmark = [pytest.mark.spark]

GOLDEN = Path(__file__).parents[1] / "compat" / "golden"


def _read(spark, path: Path, **options: object):
    register(spark)
    reader = spark.read.format("txnlog")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load(str(path))


def test_reads_every_version_and_timestamp(spark, copy_table) -> None:
    path = copy_table(True, "t")
    st = SparkTable(spark, str(path))
    st.delete("part = 'a'")
    st.write(spark.createDataFrame(make_rows(range(5000, 5010))))
    table = Table.open(str(path))
    assert spark_rows(_read(spark, path)) == engine_rows(path)
    for v in range(table.latest_version() + 1):
        assert spark_rows(_read(spark, path, versionAsOf=v)) == engine_rows(path, v), v
    for entry in table.history():
        at = dt.datetime.fromtimestamp(entry["timestamp"] / 1000, dt.UTC).isoformat()
        got = _read(spark, path, timestampAsOf=at)
        assert spark_rows(got) == engine_rows(path, entry["version"])
    assert _read(spark, path).schema == SparkTable(spark, str(path)).to_df().schema


def test_pushed_filters_shrink_the_files_read(spark, copy_table) -> None:
    path = copy_table(True, "t")
    snap = Table.open(str(path)).snapshot()
    every = _read(spark, path, maxPartitionBytes=1)  # one file per input partition
    assert every.rdd.getNumPartitions() == len(snap.files())
    by_part = every.filter("part = 'b'")
    assert by_part.rdd.getNumPartitions() == len(snap.files("part = 'b'")) < len(snap.files())
    by_stats = every.filter("id >= 2300")
    assert by_stats.rdd.getNumPartitions() == len(snap.files("id >= 2300")) < len(snap.files())
    assert spark_rows(by_stats) == [r for r in engine_rows(path) if r["id"] >= 2300]
    assert spark_rows(by_part) == [r for r in engine_rows(path) if r["part"] == "b"]


def test_partition_filters_are_decided_by_the_source() -> None:
    schema = SCHEMA
    filters = [
        EqualTo(("part",), "b"),
        GreaterThan(("id",), 10),
        In(("part",), ("a", "b")),
        Not(IsNull(("part",))),
        StringStartsWith(("name",), "x"),
        EqualTo(("part",), "it's \\ odd"),
        Not(EqualNullSafe(("part",), "c")),
        Not(In(("part",), ("a", None))),  # NOT IN with a NULL: NULL for every other value
        GreaterThan(("value",), 1.0),  # a double: pruned with Spark's NaN order, handed back
        GreaterThan(("name",), 5),  # a number against a string column: Spark compares numbers
    ]
    predicate, back = plan(filters, schema, ["part"])
    # partition-only filters are decided here and not handed back; everything else is
    assert back == [filters[1], filters[4], filters[7], filters[8], filters[9]]
    assert predicate == (
        "(`part` = 'b') AND (`id` > 10) AND (`part` IN ('a', 'b')) AND (NOT (`part` IS NULL)) "
        "AND (`part` = 'it\\'s \\\\ odd') AND (NOT ((`part` IS NOT NULL AND `part` = 'c'))) "
        "AND (`value` > 1.0)"
    )


def test_deletion_vectors_and_column_mapping(spark, tmp_path: Path) -> None:
    root = tmp_path / "dv"
    shutil.copytree(GOLDEN / "dv-with-columnmapping", root)
    got = _read(spark, root)
    assert got.columns == ["part", "col1", "col2"]
    rows = sorted((r["part"], r["col1"], r["col2"]) for r in got.collect())
    # Kernel's expected answer for this table (tests/spark/test_column_mapping.py)
    assert rows == sorted((x % 10, x, f"foo{x % 5}") for x in range(50) if not (x % 2 == 0 and x < 30))
    assert sorted(r["col1"] for r in got.filter("part = 7").collect()) == [7, 17, 27, 37, 47]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"versionAsOf": "-1"}, "versionAsOf must be an integer >= 0"),
        ({"versionAsOf": "x"}, "versionAsOf must be an integer"),
        ({"versionAsOf": "1", "timestampAsOf": "2024-01-01"}, "not both"),
        ({"maxPartitionBytes": "0"}, "maxPartitionBytes"),
        ({"startingVersion": "3"}, "unknown read options \\['startingversion'\\]"),
        ({"storageOptions": "[1]"}, "storageOptions must be a JSON object"),
    ],
)
def test_bad_options_are_refused_by_name(options: dict[str, str], match: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        ReadOptions.parse({"path": str(tmp_path), **options})


def test_bad_options_fail_the_spark_read_before_any_job(spark, copy_table) -> None:
    path = copy_table(False, "t")
    with pytest.raises(Exception, match="versionAsOf must be an integer"):
        _read(spark, path, versionAsOf="nope").count()
    with pytest.raises(Exception, match="no table path"):
        register(spark)
        spark.read.format("txnlog").load().count()


def test_reader_is_pinned_to_one_version(copy_table) -> None:
    """Planning and every task read the version the reader was created for, whatever commits next."""
    path = copy_table(False, "t")
    options = ReadOptions.parse({"path": str(path)})
    reader = TxnlogReader(options.__class__(**{**options.__dict__, "version": 1}))
    Table.open(str(path)).write(make_rows(range(9000, 9001)))
    files = [f for p in reader.partitions() for f in p.files]  # type: ignore[attr-defined]
    assert {f.path for f in files} == {f.path for f in Table.open(str(path)).snapshot(1).files()}
