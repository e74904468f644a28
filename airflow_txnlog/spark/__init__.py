"""Spark DML on the engine: write, read, delete, update, merge and optimize through PySpark.

Spark is the data plane (reading, filtering, joining and writing parquet on executors); the engine
(`airflow_txnlog.engine`) is the control plane (snapshots, pruning by partition values and stats,
one atomic commit with Delta's conflict checks). Imports only the engine's public names (those of
`airflow_txnlog.engine.__all__`, never an engine submodule), pyspark and pyarrow; never airflow,
never deltalake (import-linter contracts in pyproject.toml). Bad arguments are refused with
`InvalidArgumentError` before any Spark job runs (`_arguments.py`). `WriteMode` is the engine's.

    from airflow_txnlog.spark import SparkTable
    st = SparkTable(spark, "s3://bucket/sales")
    st.write(df, mode="append", txn=("ingest", 42))
    st.delete("day < DATE '2024-01-01'")
    st.merge(updates, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()

See docs/spark.md.
"""

from __future__ import annotations

from airflow_txnlog.engine import WriteMode
from airflow_txnlog.spark.errors import (
    ConstraintViolationError,
    MultipleSourceRowsMatchedError,
    SparkJobError,
    SparkWorkersError,
)
from airflow_txnlog.spark.expectations import Expectation
from airflow_txnlog.spark.expectations import check as check_expectations
from airflow_txnlog.spark.merge import MergeBuilder
from airflow_txnlog.spark.results import DmlResult, WriteResult
from airflow_txnlog.spark.source import register
from airflow_txnlog.spark.source_errors import txnlog_errors
from airflow_txnlog.spark.table import SparkTable
from airflow_txnlog.spark.uris import DEFAULT_SCHEME_MAP, to_hadoop_uri
from airflow_txnlog.spark.workers import WorkersCannotImportWarning

__all__ = [
    "DEFAULT_SCHEME_MAP",
    "ConstraintViolationError",
    "DmlResult",
    "Expectation",
    "MergeBuilder",
    "MultipleSourceRowsMatchedError",
    "SparkJobError",
    "SparkTable",
    "SparkWorkersError",
    "WorkersCannotImportWarning",
    "WriteMode",
    "WriteResult",
    "check_expectations",
    "register",
    "to_hadoop_uri",
    "txnlog_errors",
]
