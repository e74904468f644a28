"""Keeping a table: savepoints, restore, vacuum, log cleanup, publications and health.

What lives here: the small view of a table these operations need (`maintenance_table`), vacuum
fences (`fence`), savepoints and their manifests (`savepoints`), restore (`restore`), vacuum
(`vacuum`), log cleanup (`log_cleanup`), write-audit-publish channels (`publications`,
`publication_records`), health (`health`), OPTIMIZE with a layout (`layout`, `curves`) and the
planner with what it runs (`planner`, `plan_settings`, `rewrite_plan`, `compaction_plan`,
`cluster_plan`, `file_overhead`, `rewrite_layout`, `compaction`). Every destructive operation here
defaults to safe and never deletes a file a live version or a savepoint needs; every planned
rewrite keeps the table's layout (clustering, Z-order) or is not done.

May import: every room below (write, state, features, log) and the root's storage, schema,
properties, validate and errors. Inside the engine only `table` imports this room (the
Airflow layer uses a few of its modules directly).
"""
