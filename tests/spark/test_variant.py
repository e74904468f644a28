"""Variant columns through Spark: the Spark-written reference table read with `SparkTable.to_df`
comes back as Spark's own VariantType (Spark 4 reads the parquet group natively), so Spark's
variant functions work on it. Expected rows: Delta's generator of the table (v0 = 100 rows of
parse_json('{"key": id}'), then one row each for ids 0 and 1, as tests/compat/test_golden.py has)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql.types import VariantType

from airflow_txnlog.spark import SparkTable

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
