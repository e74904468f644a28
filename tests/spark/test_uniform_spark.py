"""UniForm under Spark: SparkTable writes, MERGE, DELETE, UPDATE and OPTIMIZE on an icebergCompatV2
table keep its data files Iceberg-ready, and the Iceberg metadata each commit writes reads (pyiceberg,
DuckDB) exactly as delta-rs reads the Delta log at the version the metadata reflects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyiceberg.table import StaticTable

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable
from tests.compat.test_uniform import UNIFORM, _duckdb

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("tags", pa.list_(pa.string()))])


def _canon(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["region"], tuple(r["tags"] or ())) for r in rows)


def _readers_agree(path: Path) -> list[tuple[Any, ...]]:
    hint = (path / "metadata" / "version-hint.text").read_text()
    location = path / "metadata" / f"v{hint}.metadata.json"
    version = int(json.loads(location.read_text())["properties"]["delta-version"])
    assert version == Table.open(str(path)).latest_version()  # the commit synced it
    delta = pa.table(DeltaTable(str(path), version=version).scan().read_all()).select(SCHEMA.names)
    want = _canon(delta.cast(SCHEMA).to_pylist())
    iceberg = StaticTable.from_metadata(str(location)).scan().to_arrow().select(SCHEMA.names)
    assert _canon(iceberg.to_pylist()) == want
    duck = _duckdb().execute(f"SELECT id, region, tags FROM iceberg_scan('{location}')").fetch_arrow_table()
    assert _canon(duck.to_pylist()) == want
    return want


def _df(spark: Any, rows: list[tuple[int, str, list[str]]]) -> Any:
    return spark.createDataFrame(rows, "id long, region string, tags array<string>")


def test_spark_writes_merge_delete_update_and_optimize_keep_iceberg_readers_in_step(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    Table.create(str(path), schema=SCHEMA, partition_by=["region"], properties=UNIFORM)
    st = SparkTable(spark, str(path))
    st.write(_df(spark, [(i, "eu" if i % 2 else "us", [f"t{i}"]) for i in range(20)]))
    assert len(_readers_agree(path)) == 20
    source = _df(spark, [(i, "eu" if i % 2 else "us", ["merged"]) for i in range(15, 30)])
    st.merge(source, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    rows = _readers_agree(path)
    assert len(rows) == 30 and sum(r[2] == ("merged",) for r in rows) == 15
    st.delete("id < 5")
    st.update("id = 7", {"tags": "array('seven')"})
    rows = _readers_agree(path)
    assert len(rows) == 25 and (7, "eu", ("seven",)) in rows
    st.optimize()
    assert len(_readers_agree(path)) == 25
    snap = Table.open(str(path)).snapshot()
    region = json.loads(snap.metadata.schema_string)["fields"][1]["metadata"][
        "delta.columnMapping.physicalName"
    ]
    for add in snap.files():  # every file Spark's tasks wrote is Iceberg-ready
        assert add.tags == {"ICEBERG_COMPAT_VERSION": "2"} and add.deletion_vector is None
        assert region in pq.read_schema(str(path / add.path)).names
