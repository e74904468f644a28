"""Fixtures of the Airflow suites: the Spark session of the tests that run the Spark operators'
`execute` (the operators take the active session rather than starting their own)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the txnlog data source runs in the workers


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession  # noqa: PLC0415 - only for the Spark suites

    existing = SparkSession.getActiveSession()
    session = existing or (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    yield session
    if existing is None:  # another suite's shared session is not ours to stop
        session.stop()
