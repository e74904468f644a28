"""Spark DML plans with the engine's pruning and filters: they must select Spark's rows (issue 39).

On a table of one-row files, each DELETE removes exactly the rows Spark's own filter selects on the
same data; before the SQL room, `d < TIMESTAMP '2023-12-31 10:00:00'` pruned the file of the row
`d = 2023-12-31` (the literal was cut to a date) and deleted nothing, and `f > 100` kept NaN rows."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SCHEMA = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("f", pa.float64()), ("r", pa.float32())])
ROWS = [
    (1, dt.date(2023, 12, 31), math.nan, 0.1),
    (2, dt.date(2024, 1, 1), 150.0, 1.0),
    (3, dt.date(2023, 12, 30), 1.5, -1.0),
    (4, None, None, None),
]


def _table(root: Path) -> str:
    t = Table.create(str(root), schema=SCHEMA)
    for row in ROWS:  # (one file each: a wrongly pruned file loses its row)
        t.write(pa.table([[v] for v in row], schema=SCHEMA))
    return str(root)


@pytest.mark.parametrize(
    "predicate",
    [
        "d < TIMESTAMP '2023-12-31 10:00:00'",
        "d = TIMESTAMP '2023-12-31 00:00:00'",
        "f > 100",
        "NOT (f > 1)",
        "f = CAST('NaN' AS DOUBLE)",
        "r = 0.1",
        "r > 0.1",
    ],
)
def test_delete_removes_exactly_the_rows_spark_selects(spark: Any, tmp_path: Path, predicate: str) -> None:
    uri = _table(tmp_path / "t")
    st = SparkTable(spark, uri)
    before = st.to_df()
    expected = sorted(r["id"] for r in before.filter(predicate).collect())
    kept = sorted(r["id"] for r in before.filter(f"NOT coalesce({predicate}, FALSE)").collect())
    result = st.delete(predicate)
    assert result.metrics.get("numDeletedRows", 0) == len(expected)
    assert sorted(Table.open(uri).snapshot().to_arrow().column("id").to_pylist()) == kept
    assert sorted(set(range(1, 5)) - set(kept)) == expected
