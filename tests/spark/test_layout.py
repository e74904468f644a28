"""Z-order and liquid clustering on Spark (issue 28, items 3-4): the engine plans the files and
the key, Spark sorts; the files read by a two-column 1 % query drop, rows are unchanged, the
commit carries Delta's parameters, clusteringProvider marks clustered files, and delta-rs and
polars-deltalake read the result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.spark import SparkTable

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("p", pa.string())])
QUERY = "a >= 100 AND a <= 199 AND b >= 300 AND b <= 399"


def _rows(n: int, seed: int, part: str = "x") -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {"a": rng.integers(0, 1000, n), "b": rng.integers(0, 1000, n), "p": [part] * n}, schema=SCHEMA
    )


def _sorted(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted(zip(*(t.column(c).to_pylist() for c in ("a", "b", "p")), strict=True))


def test_spark_zorder_cuts_the_files_a_two_column_query_reads(spark, tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["p"])
    for i in range(6):
        t.write(_rows(5000, i, "x" if i < 4 else "y"))
    before = _sorted(t.snapshot().to_arrow())
    size = sum(f.size for f in t.snapshot().files("p = 'x'"))
    result = SparkTable(spark, t.uri).optimize(
        zorder_by=["a", "b"], where="p = 'x'", target_file_size=size // 16
    )
    snap = t.snapshot()
    xs = snap.files("p = 'x'")
    assert result.metrics["numRemovedFiles"] == 4 and len(xs) >= 12
    assert len(snap.files(f"p = 'x' AND {QUERY}")) <= 0.3 * len(xs)
    assert len(snap.files("p = 'y'")) == 2  # outside `where`: untouched
    assert _sorted(snap.to_arrow()) == before
    info = t.history(1)[0]
    assert info["operation"] == "OPTIMIZE" and json.loads(info["operationParameters"]["zOrderBy"]) == [
        "a",
        "b",
    ]
    assert {f.clustering_provider for f in snap.files()} == {None}
    assert _sorted(DeltaTable(t.uri).to_pyarrow_table()) == before


def test_spark_clusters_a_clustered_table_along_its_keys(spark, tmp_path: Path) -> None:
    st = SparkTable.create(spark, str(tmp_path / "c"), SCHEMA, cluster_by=["a", "b"])
    for i in range(4):
        st.table.write(_rows(5000, i))
    before = _sorted(st.table.snapshot().to_arrow())
    size = sum(f.size for f in st.table.snapshot().files())
    result = st.optimize(target_file_size=size // 16)
    snap = st.table.snapshot()
    assert result.metrics["numRemovedFiles"] == 4
    assert {f.clustering_provider for f in snap.files()} == {"liquid"}
    assert len(snap.files(QUERY)) <= 0.3 * len(snap.files())
    assert _sorted(snap.to_arrow()) == before
    assert _sorted(pl.read_delta(st.table.uri).to_arrow()) == before
    params = st.table.history(1)[0]["operationParameters"]
    assert json.loads(params["clusterBy"]) == ["a", "b"] and params["isFull"] == "false"
    assert st.optimize().metrics["numRemovedFiles"] == 0  # every file clustered already


def test_spark_zorder_bad_input_is_refused_before_any_job(spark, tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["p"])
    t.write(_rows(10, 0))
    st = SparkTable(spark, t.uri)
    with pytest.raises(InvalidArgumentError, match="is a partition column"):
        st.optimize(zorder_by=["p"])
    with pytest.raises(InvalidArgumentError, match="list of column names"):
        st.optimize(zorder_by="a")
    with pytest.raises(InvalidArgumentError, match="no column 'zz'"):
        st.optimize(zorder_by=["zz"])
    assert t.latest_version() == 1
