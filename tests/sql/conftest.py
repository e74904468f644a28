"""Fixtures of the SQL conformance suite: the Spark session (the one the Spark suite started, when
it runs in the same process; otherwise one like it, stopped at the end of the test session)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession  # noqa: PLC0415 - only for the Spark suites

    existing = SparkSession.getActiveSession()
    session = existing or (
        SparkSession.builder.master("local[2]")
        .appName("airflow-txnlog-sql-conformance")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    if existing is None:
        session.sparkContext.setLogLevel("ERROR")
    yield session
    if existing is None:  # another suite's shared session is not ours to stop
        session.stop()
