"""Keeping a table: savepoints, restore, vacuum, log cleanup, publications and health.

What lives here: the small view of a table these operations need (`maintenance_table`), vacuum
fences (`fence`), savepoints and their manifests (`savepoints`), restore (`restore`), vacuum
(`vacuum`), log cleanup (`log_cleanup`), write-audit-publish channels (`publications`,
`publication_records`) and health (`health`). Every destructive operation here defaults to safe
and never deletes a file a live version or a savepoint needs.

May import: every room below (write, state, features, log) and the root's storage, schema,
properties, validate and errors. Inside the engine only `table` imports this room (the
Airflow layer uses a few of its modules directly).
"""
