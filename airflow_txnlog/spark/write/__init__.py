"""Writing with Spark: data files and change data files staged by a job, then one commit.

What lives here: `stage` (a DataFrame guarded by the table's rules and written by the `txnlog` data
source in its files-only mode; the commit of adds and removes, deleting the new files when it
certainly failed) and `change_data` (change data files for the change data feed, written the same
way under `_change_data/`).

May import: `spark.features` (the rules' guard), `spark.read`, `spark.source` (the data source that
writes the files), the root modules, the engine's two doors, pyspark, pyarrow.
"""
