"""Spark DML on the engine: write, read, delete, update, merge and optimize through PySpark.

Spark is the data plane (reading, filtering, joining and writing parquet on executors); the engine
(`airflow_txnlog.engine`) is the control plane (snapshots, pruning by partition values and stats,
one atomic commit with Delta's conflict checks). Imports only the engine's two doors (the users'
names of `airflow_txnlog.engine` and the layers' helpers of `airflow_txnlog.engine.spi`, never another
engine submodule), pyspark and pyarrow; never airflow, never deltalake (import-linter contracts in
pyproject.toml). Bad arguments are refused with `InvalidArgumentError` before any Spark job runs
(`_arguments.py`). `WriteMode` is the engine's.

The package's rooms, each importing only those below it (the "spark rooms" contract):

    table.py        SparkTable: every operation's entry point
    maintenance/    OPTIMIZE: compaction, Z-order and clustering
    dml/            WRITE, DELETE, UPDATE, MERGE and their results
    write/          staging data and change data files with Spark, one commit
    features/       table features on Spark: rules, generated and identity columns, deletion
                    vectors, expectations
    read/ source/   reading files as a DataFrame (scan, row ids, file planning, time travel); the
                    `txnlog` data source (format("txnlog"), its reader, writer and streams)
    context.py      what every operation knows of the table (TableHandle, TableContext)
    schemas.py, conditions.py, uris.py, _arguments.py, errors.py: schemas, users' SQL checked by
                    Spark, URIs, argument checks, and our errors with every marker and decoder of
                    a failed Spark job

    from airflow_txnlog.spark import SparkTable
    st = SparkTable(spark, "s3://bucket/sales")
    st.write(df, mode="append", txn=("ingest", 42))
    st.delete("day < DATE '2024-01-01'")
    st.merge(updates, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()

See docs/spark.md.
"""

from __future__ import annotations

from airflow_txnlog.engine import WriteMode
from airflow_txnlog.spark.dml.merge import MergeBuilder
from airflow_txnlog.spark.dml.results import DmlResult, WriteResult
from airflow_txnlog.spark.errors import (
    ConstraintViolationError,
    MultipleSourceRowsMatchedError,
    SparkJobError,
    SparkWorkersError,
    txnlog_errors,
)
from airflow_txnlog.spark.features.expectations import Expectation
from airflow_txnlog.spark.features.expectations import check as check_expectations
from airflow_txnlog.spark.source.data_source import register
from airflow_txnlog.spark.source.workers import WorkersCannotImportWarning
from airflow_txnlog.spark.table import SparkTable
from airflow_txnlog.spark.uris import DEFAULT_SCHEME_MAP, to_hadoop_uri

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
