"""Spark SQL in the engine: the one room every predicate and expression goes through.

Users write Spark SQL everywhere (row filters, `files(filter=)`, replaceWhere, OPTIMIZE's where,
CHECK constraints, invariants, generated columns, expectations, the CLI); this room gives it Spark's
meaning. What lives here: the one parse (`parse`: sqlglot, Spark dialect, Spark's reading of
quotes and comparison order; `spark_rules`) and the typed compile of a scalar
expression into Arrow kernels with Spark 4's ANSI semantics (`expressions`; its types in `types`,
casts in `casts` with Spark's text forms in `time_text`, `zones` and `float_text`, arithmetic in
`arithmetic`, functions in `functions`, `number_functions`, `datetime_functions`, `hash_function`,
the declaration-time trial in `trial_rows`), predicates over a table (`predicates`: the rows back
end and the pruning tree derived from the same parse), reading literals into a column's type
(`literals`), words for a literal written without quotes (`hints`), Spark SQL literals for showing
values (`literal_text`), and the partition filters a filter on a generated column's source implies
(`generated_pruning`).

May import: the log room and the root's storage, schema, properties, validate and errors. Never
features, state, write or maintenance: they are the users of SQL.
"""
