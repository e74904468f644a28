"""TxnLogOptimizeOperator with `zorder_by` and on a clustered table (issue 28): the operator's
Spark OPTIMIZE Z-orders or clusters, and the commit says so (Delta's zOrderBy / clusterBy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.operators.maintenance import TxnLogOptimizeOperator
from tests.airflow.spark_operators import plain_context

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64())])


def _fill(t: Table) -> Table:
    rng = np.random.default_rng(0)
    for _ in range(3):
        t.write(pa.table({"a": rng.integers(0, 100, 300), "b": rng.integers(0, 100, 300)}, schema=SCHEMA))
    return t


def test_the_operator_zorders_and_clusters(spark: Any, tmp_path: Path) -> None:
    z = _fill(Table.create(str(tmp_path / "z"), schema=SCHEMA))
    op = TxnLogOptimizeOperator(task_id="zorder", table_uri=z.uri, zorder_by=["b", "a"], spark_conn_id=None)
    assert "zorder_by" in op.template_fields
    out = op.execute(plain_context(1))
    assert out["metrics"]["numRemovedFiles"] == 3 and out["version"] == z.latest_version()
    assert json.loads(z.history(1)[0]["operationParameters"]["zOrderBy"]) == ["b", "a"]

    c = _fill(Table.create(str(tmp_path / "c"), schema=SCHEMA, cluster_by=["a"]))
    out = TxnLogOptimizeOperator(task_id="cluster", table_uri=c.uri, spark_conn_id=None).execute(
        plain_context(1)
    )
    assert out["metrics"]["numRemovedFiles"] == 3
    assert {f.clustering_provider for f in c.snapshot().files()} == {"liquid"}
    assert json.loads(c.history(1)[0]["operationParameters"]["clusterBy"]) == ["a"]
