"""A table at one version: the snapshot and everything read from it.

What lives here: `Snapshot` and loading one (`snapshot`), its add actions as Arrow columns
(`add_actions`), SQL predicates parsed with sqlglot (`predicates`, `literals`;
`literal_help` words the error for a literal written without quotes) and the data skipping
they drive (`skipping`; `generated_filters` adds the partition filters a filter on a generated
partition column's source implies), reading the rows of data files (`scan`), checkpoints of a
state, classic and multi-part, read and written (`checkpoint`), paged history (`history`) and the
change data feed (`change_data`).

May import: features, log and the root's storage, schema, properties, validate and errors. Never
write or maintenance: a snapshot is read-only; committing is write's job.
"""
