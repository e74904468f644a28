"""The `txnlog` Spark data source: `format("txnlog")` for batch and streaming reads and writes.

What lives here: `data_source` (TxnlogDataSource, `register`), the batch `reader` with its `filters`
(Spark's pushed filters -> the engine's pruning), the batch `writer` (executors write the files, the
driver commits; also SparkTable's files-only mode), the `stream` reader and writer, the `options`
parsing, and `workers` (can Spark's Python workers import this package?). This code runs in Spark's
Python workers: every method Spark calls carries a TxnLogError back with its fields
(`spark.errors.carrying`).

May import: the engine's two doors, pyspark, pyarrow, `spark.schemas` and `spark.errors`; never the
other rooms of spark (they call the data source, not the other way round).
"""
