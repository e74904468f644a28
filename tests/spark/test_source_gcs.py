"""The `txnlog` data source on Google Cloud Storage (fake-gcs-server): Spark writes and reads `gs://`
through the engine's storage (gcsfs on the executors, no Hadoop GCS connector), commits are the
engine's exclusive creates, and what Spark wrote is what the engine reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import register
from tests.gcs import GcsBucket

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_spark_writes_and_reads_gs_through_the_engine(spark: Any, gcs_bucket: GcsBucket) -> None:
    register(spark)
    uri = gcs_bucket.uri("spark/events")
    options = {"storageOptions": json.dumps(gcs_bucket.options)}
    first = spark.createDataFrame([(1, "a"), (2, "b")], "id long, part string")
    first.write.format("txnlog").options(**options, partitionBy="part").mode("append").save(uri)
    spark.createDataFrame([(3, "a")], "id long, part string").write.format("txnlog").options(**options).mode(
        "append"
    ).save(uri)
    table = Table.open(uri, storage_options=gcs_bucket.options)
    assert table.latest_version() == 1
    assert sorted(table.snapshot().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    read = spark.read.format("txnlog").options(**options).load(uri)
    assert sorted(r["id"] for r in read.filter("part = 'a'").collect()) == [1, 3]
    old = spark.read.format("txnlog").options(**options, versionAsOf="0").load(uri)
    assert old.count() == 2
    over = spark.createDataFrame([(9, "z")], "id long, part string")
    over.write.format("txnlog").options(**options).mode("overwrite").save(uri)
    assert [r["id"] for r in spark.read.format("txnlog").options(**options).load(uri).collect()] == [9]
    assert Table.open(uri, storage_options=gcs_bucket.options).history(1)[0]["operation"] == "WRITE"
