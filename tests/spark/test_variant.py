"""Variant columns through Spark: the Spark-written reference table read with `SparkTable.to_df`
comes back as Spark's own VariantType (Spark 4 reads the parquet group natively), so Spark's
variant functions work on it. Expected rows: Delta's generator of the table (v0 = 100 rows of
parse_json('{"key": id}'), then one row each for ids 0 and 1, as tests/compat/test_golden.py has)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars_deltalake
import pytest
from deltalake import DeltaTable
from pyspark.sql.types import LongType, StructField, StructType, VariantType

from airflow_txnlog.engine import ConstraintViolationError, Table
from airflow_txnlog.spark import SparkTable, register

pytestmark = [pytest.mark.spark]

GOLDEN = Path(__file__).parents[1] / "compat" / "golden"


def test_variant_columns_are_spark_variants(spark) -> None:
    df = SparkTable(spark, str(GOLDEN / "spark-variant-checkpoint")).to_df()
    assert isinstance(df.schema["v"].dataType, VariantType)
    df.createOrReplaceTempView("variant_golden")
    rows = spark.sql(
        "SELECT id, to_json(v) AS j, variant_get(v, '$.key', 'int') AS k, "
        "to_json(map_of_variants) AS m FROM variant_golden"
    ).collect()
    ids = sorted(r["id"] for r in rows)
    assert ids == sorted([*range(100), 0, 1])
    for r in rows:
        assert r["j"] == f'{{"key":{r["id"]}}}' and r["k"] == r["id"]
        assert r["m"] == f'{{"{r["id"]}":{{"key":{r["id"]}}},"nullKey":null}}'


# --------------------------------------------------------------------------- writes (issue 26, item 6)
def _json_rows(st: SparkTable) -> list[tuple[int, str | None]]:
    return sorted((r["id"], r["j"]) for r in st.to_df().selectExpr("id", "to_json(v) AS j").collect())


def _docs(spark: Any, ids: range | list[int], *, prefix: str = "") -> Any:
    docs = [(i, f'{{"key": {i}, "tag": "{prefix}{i}", "a": [1, 2.5]}}') for i in ids]
    return spark.createDataFrame(docs, "id long, s string").selectExpr("id", "parse_json(s) AS v")


def test_spark_writes_variants_and_every_reader_reads_them(spark, tmp_path: Path) -> None:
    path = tmp_path / "v"
    schema = StructType([StructField("id", LongType()), StructField("v", VariantType())])
    st = SparkTable.create(spark, str(path), schema)
    protocol = DeltaTable(str(path)).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert "variantType" in protocol.reader_features and "variantType" in protocol.writer_features
    st.write(_docs(spark, range(10)).repartition(2))
    expected = [(i, f'{{"a":[1,2.5],"key":{i},"tag":"{i}"}}') for i in range(10)]
    assert _json_rows(st) == expected
    # delta-rs and polars-deltalake (delta-kernel-rs) read the same rows; Spark's bytes round-trip
    ours = Table.open(str(path)).snapshot().to_arrow()
    theirs = DeltaTable(str(path)).to_pyarrow_table()
    kernel = polars_deltalake.read_delta(str(path))
    assert sorted(theirs.column("id").to_pylist()) == list(range(10)) == sorted(kernel["id"].to_list())
    by_id = {r["id"]: r["v"] for r in theirs.to_pylist()}
    assert all(by_id[r["id"]] == r["v"] for r in ours.to_pylist())


def test_dml_and_optimize_on_a_variant_table(spark, tmp_path: Path) -> None:
    path = tmp_path / "v"
    schema = StructType([StructField("id", LongType()), StructField("v", VariantType())])
    st = SparkTable.create(spark, str(path), schema)
    st.write(_docs(spark, range(6)))
    st.write(_docs(spark, range(6, 9)))
    st.delete("variant_get(v, '$.key', 'int') = 1")
    st.update("id = 2", {"v": "parse_json('{\"key\": 200}')"})
    src = _docs(spark, [3, 20], prefix="m")
    st.merge(src, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    st.optimize()
    rows = dict(_json_rows(st))
    assert sorted(rows) == [0, 2, 3, 4, 5, 6, 7, 8, 20]
    assert rows[2] == '{"key":200}' and rows[3] == '{"a":[1,2.5],"key":3,"tag":"m3"}'
    assert json.loads(rows[20])["tag"] == "m20"
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist()) == sorted(rows)
    st.add_constraint("has_key", "variant_get(v, '$.key', 'int') IS NOT NULL")
    with pytest.raises(ConstraintViolationError, match="has_key"):
        st.write(spark.sql("SELECT 50L AS id, parse_json('{\"nokey\": 1}') AS v"))


def test_merge_schema_adds_a_variant_column_and_the_data_source_writes_it(spark, tmp_path: Path) -> None:
    path = tmp_path / "v"
    st = SparkTable.create(spark, str(path), StructType([StructField("id", LongType())]))
    st.write(spark.range(3))
    st.write(_docs(spark, range(3, 5)), merge_schema=True)
    protocol = DeltaTable(str(path)).protocol()
    assert "variantType" in protocol.writer_features and protocol.min_reader_version == 3
    register(spark)
    _docs(spark, range(5, 7)).write.format("txnlog").mode("append").save(str(path))
    rows = _json_rows(st)
    assert [i for i, _ in rows] == list(range(7))
    assert [j is None for _, j in rows] == [True] * 3 + [False] * 4


def test_the_spark_written_reference_table_takes_spark_appends(spark, tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(GOLDEN / "spark-variant-checkpoint", root)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    st = SparkTable(spark, str(root))
    st.write(st.to_df().filter("id < 3"))  # ids 0 and 1 twice, 2 once (see the module docstring)
    df = st.to_df()
    assert df.count() == 102 + 5
    again = df.filter("id = 0").selectExpr("to_json(v) AS j", "to_json(array_of_variants) AS a").collect()
    assert {(r["j"], r["a"]) for r in again} == {('{"key":0}', '[{"key":0},null,{"key":0},null,{"key":0}]')}
    assert sorted(DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist()) == sorted(
        r["id"] for r in df.select("id").collect()
    )


def test_the_data_source_reads_variants_as_spark_variants(spark) -> None:
    register(spark)
    df = spark.read.format("txnlog").load(str(GOLDEN / "spark-variant-checkpoint"))
    assert isinstance(df.schema["v"].dataType, VariantType)
    cols = [
        "id",
        "to_json(v) AS j",
        "to_json(map_of_variants) AS m",
        "to_json(struct_of_array_of_variants) AS s",
    ]
    ours = sorted(tuple(r) for r in df.selectExpr(*cols).collect())
    spark_own = SparkTable(spark, str(GOLDEN / "spark-variant-checkpoint")).to_df()  # Spark's parquet reader
    assert ours == sorted(tuple(r) for r in spark_own.selectExpr(*cols).collect())
    assert len(ours) == 102 and ours[0][1] == '{"key":0}'


def test_the_data_source_checks_variant_bytes_that_spark_did_not_encode(spark, tmp_path: Path) -> None:
    """A plain struct<value: binary, metadata: binary> written into a variant column through the data
    source is taken as a variant only after its bytes are checked; bad ones fail, nothing written."""
    path = tmp_path / "v"
    st = SparkTable.create(
        spark, str(path), StructType([StructField("id", LongType()), StructField("v", VariantType())])
    )
    good = spark.sql("SELECT 1L AS id, parse_json('{\"a\": 1}') AS v").toArrow().column("v")[0].as_py()
    register(spark)
    shape = "id long, v struct<value: binary, metadata: binary>"
    bad = spark.createDataFrame([(2, (good["value"], b"\x02\x00\x00"))], shape)
    with pytest.raises(Exception, match="not a valid Variant"):
        bad.write.format("txnlog").mode("append").save(str(path))
    assert st.version() == 0 and not list(path.rglob("*.parquet"))
    ok = spark.createDataFrame([(1, (good["value"], good["metadata"]))], shape)
    ok.write.format("txnlog").mode("append").save(str(path))
    assert _json_rows(st) == [(1, '{"a":1}')]
