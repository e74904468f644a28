"""Spark reads of column-mapped tables (Spark-written reference tables): the files hold physical
names, users see logical ones. Expected rows: the engine's read, itself checked against Delta's
expected answers in tests/compat/test_golden.py, and Delta Kernel's answer for dv-with-columnmapping."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable

pytestmark = [pytest.mark.spark]

GOLDEN = Path(__file__).parents[1] / "compat" / "golden"


def _naive_utc(v: object) -> object:
    """Spark (session zone UTC) gives timestamps as naive UTC datetimes."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC).replace(tzinfo=None)
    return v


def _copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(GOLDEN / name, root, ignore=shutil.ignore_patterns("*.crc"))
    return root


@pytest.mark.parametrize(
    "name",
    [
        "table-with-columnmapping-mode-name",
        "table-with-columnmapping-mode-id",
        "data-reader-timestamp_ntz-name-mode",
    ],
)
def test_to_df_uses_logical_names(spark, tmp_path: Path, name: str) -> None:
    root = _copy(tmp_path, name)
    df = SparkTable(spark, str(root)).to_df()
    engine = Table.open(str(root)).snapshot().to_arrow()
    assert df.columns == engine.column_names
    key = engine.column_names[0] if name.startswith("data-reader") else "IntegerType"
    simple = [f.name for f in engine.schema if not pa.types.is_nested(f.type)]
    # (PySpark cannot collect a map whose keys are arrays: compare the other columns)
    got = sorted((tuple(r[c] for c in simple) for r in df.select(*simple).collect()), key=repr)
    want = sorted((tuple(_naive_utc(r[c]) for c in simple) for r in engine.to_pylist()), key=repr)
    assert got == want and any(v is not None for row in got for v in row)
    if name.startswith("table-with"):
        nested = {
            r[key]: r["nested_struct"]
            for r in df.select(key, "nested_struct").collect()
            if r[key] is not None
        }
        assert nested[3].asDict(recursive=True) == {"aa": "3", "ac": {"aca": 3}}


def test_deletion_vectors_and_column_mapping(spark, tmp_path: Path) -> None:
    # Kernel: the rows of dv-partitioned-with-checkpoint, read through column mapping mode name
    root = _copy(tmp_path, "dv-with-columnmapping")
    rows = SparkTable(spark, str(root)).to_df().collect()
    assert sorted((r["part"], r["col1"], r["col2"]) for r in rows) == sorted(
        (x % 10, x, f"foo{x % 5}") for x in range(50) if not (x % 2 == 0 and x < 30)
    )
