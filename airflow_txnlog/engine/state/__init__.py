"""A table at one version: the snapshot and everything read from it.

What lives here: `Snapshot` and loading one (`snapshot`), its add actions as Arrow columns
(`add_actions`), the data skipping that predicates (engine.sql) drive over them (`skipping`),
reading the rows of data files (`scan`), checkpoints of a state, classic and multi-part, read and
written (`checkpoint`), paged history (`history`) and the change data feed (`change_data`).

May import: features, sql, log and the root's storage, schema, properties, validate and errors. Never
write or maintenance: a snapshot is read-only; committing is write's job.
"""
