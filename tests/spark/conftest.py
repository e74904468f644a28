"""Fixtures of the Spark suite: ONE local SparkSession per test session, and starting tables.

The session is `local[2]` with 2 shuffle partitions and no UI (a session costs ~10 s to start, so
every test shares it). The starting tables (partitioned by `part`, and unpartitioned; 24 files each,
ids range-partitioned so min/max stats are selective) are written once per session by `SparkTable`
and copied for each test: `pair()` gives two identical copies, one for us and one for `deltalake`
(the oracle that runs the same operation).
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from airflow_txnlog.spark import SparkTable

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Python workers (the txnlog data source, Python UDFs) run this interpreter, with the package on it
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("value", pa.float64()),
        ("name", pa.string()),
        ("part", pa.string()),
        ("day", pa.date32()),
        ("amount", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)
NUM_ROWS = 2400
PARTS = ("a", "b", "c", "d")


def make_rows(ids: range | list[int], *, part: str | None = None) -> pa.Table:
    ids = list(ids)
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": ids,
            "value": [i * 0.5 for i in ids],
            "name": [None if i % 97 == 0 else f"name-{i % 50:03d}" for i in ids],
            "part": [part or PARTS[i % 4] for i in ids],
            "day": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 30) for i in ids],
            "amount": [decimal.Decimal(i % 1000) / 4 for i in ids],
            "ts": [base + dt.timedelta(minutes=i) for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = (
        SparkSession.builder.master("local[2]")
        .appName("airflow-txnlog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _build(spark: Any, root: Path, partitioned: bool) -> Path:
    path = root / ("partitioned" if partitioned else "flat")
    st = SparkTable.create(spark, str(path), SCHEMA, partition_by=["part"] if partitioned else [])
    df = spark.createDataFrame(make_rows(range(NUM_ROWS)))
    df = df.repartitionByRange(6 if partitioned else 24, "id")
    st.write(df)
    return path


@pytest.fixture(scope="session")
def templates(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    """The two starting tables (version 1), built once: {partitioned: path}."""
    root = tmp_path_factory.mktemp("templates")
    return {flag: _build(spark, root, flag) for flag in (True, False)}


@pytest.fixture
def copy_table(templates: dict[bool, Path], tmp_path: Path) -> Callable[[bool, str], Path]:
    """A private copy of a starting table: `copy_table(partitioned, name)`."""

    def _copy(partitioned: bool, name: str) -> Path:
        dst = tmp_path / name
        shutil.copytree(templates[partitioned], dst)
        return dst

    return _copy


@pytest.fixture
def pair(copy_table: Callable[[bool, str], Path]) -> Callable[[bool], tuple[Path, Path]]:
    """Two identical copies of a starting table: (ours, deltalake's)."""

    def _pair(partitioned: bool) -> tuple[Path, Path]:
        return copy_table(partitioned, "ours"), copy_table(partitioned, "theirs")

    return _pair
