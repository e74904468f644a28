"""The log: Delta's wire format and reading `_delta_log/`.

What lives here: the actions (`actions`: frozen dataclasses and their wire names), the names of log
files (`log_paths`), listing the log into the commits and checkpoint a version needs (`log_segment`),
reading commits after a version (`log_reader`: the one way to do it), replaying actions into a
`LogState` (`replay`, and `bulk_replay` for long logs), the columns of checkpoint files
(`checkpoint_columns`, `stats_struct`, V2 checkpoints and sidecars in `checkpoint_v2`), the stats
JSON format (`stats`), Spark's hash for multi-part checkpoints (`spark_hash`), and the files commits
add and remove (`commit_files`, for streams).

May import: the root's storage, schema, properties, validate and errors. Nothing else of the engine:
features, state, write and maintenance are built on this room, never the other way round. This room
holds no pyarrow-free promise as a whole, but `log_reader`, `log_segment`, `log_paths` and `actions`
load without pyarrow (the Airflow triggers poll the log with them).
"""
