"""Footer stats choose leaves and write bounds exactly as the engine's compute_stats (issue 10)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine.stats import compute_stats
from airflow_txnlog.spark.footers import footer_stats

pytestmark = [pytest.mark.spark]


def test_footer_stats_honor_stats_columns_and_formats(tmp_path: Path) -> None:
    st = pa.struct([("x", pa.int64()), ("y", pa.string())])
    data = pa.table(
        {
            "a": [1, 2],
            "S": pa.array([{"x": 1, "y": "q"}, None], st),
            "d": [decimal.Decimal("0E-10"), decimal.Decimal("1.5")],
        }
    )
    path = tmp_path / "x.parquet"
    pq.write_table(data, path)
    for chosen, keys in (([("s", "x")], {"S"}), ([("s",), ("D",)], {"S", "d"}), ([("nope",)], set())):
        mine = json.loads(compute_stats(data, stats_columns=chosen))
        assert set(mine["nullCount"]) == keys
        assert mine == json.loads(footer_stats(pq.read_metadata(path), data.schema, stats_columns=chosen))
    assert json.loads(compute_stats(data, stats_columns=[("s", "x")]))["nullCount"] == {"S": {"x": 1}}
    assert '"d":0.0000000000' in compute_stats(data)
    old = pa.table({"ts": pa.array([dt.datetime(999, 1, 1)], pa.timestamp("us", "UTC"))})
    pq.write_table(old, path)
    assert footer_stats(pq.read_metadata(path), old.schema) == compute_stats(old)
    assert "0999-01-01T00:00:00.000Z" in compute_stats(old)
