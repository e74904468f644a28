"""Reading the table's files with Spark: the read side of every operation.

What lives here: `scan` (a set of files as one DataFrame: partition values from the log, deletion
vectors dropped, column mapping renamed), `row_ids` (row tracking's stable ids and commit versions,
read with the rows and carried through rewrites), `planning` (which files an operation looks at and
which of them hold matching rows) and `time_travel` (which snapshot `SparkTable.to_df` reads).

May import: `spark.context`, `spark.schemas`, `spark.errors` and the root modules below them, the
engine's two doors, pyspark, pyarrow.
"""
