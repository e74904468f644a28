"""Keeping a table with Spark: OPTIMIZE (dataChange=false rewrites).

What lives here: `optimize` (bin-packing small files per partition; the entry point) and `layout`
(Z-order and liquid clustering, planned by the engine, sorted by Spark).

May import: `spark.dml` (the commit-or-nothing tail and DmlResult), `spark.write`, `spark.read`, the
root modules, the engine's two doors, pyspark, pyarrow.
"""
