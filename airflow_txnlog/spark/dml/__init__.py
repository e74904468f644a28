"""The data-changing operations on Spark: WRITE, DELETE, UPDATE and MERGE, and what they return.

What lives here: `write` (append / overwrite / replace_where), `delete` and `delete_local` (its
in-process lever), `update`, `merge` with `merge_clauses` (the WHEN clauses and action tags),
`merge_keys` (the source probe) and `merge_local` (its in-process lever), `_dml` (the
commit-or-nothing tail they share with OPTIMIZE) and `results` (WriteResult, DmlResult).

May import: `spark.write`, `spark.features`, `spark.read`, the root modules, the engine's two doors,
pyspark, pyarrow.
"""
