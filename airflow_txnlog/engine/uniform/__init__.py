"""UniForm: Iceberg v2 metadata for a Delta table, so Iceberg engines read it.

What lives here: where the metadata lives (layout, no pyiceberg), the Iceberg view of the table's
schema and files (iceberg_schema), pyiceberg's FileIO over the table's storage (iceberg_io),
pyiceberg's manifest writers with their per-schema parts made once (avro_writers), which manifests
may list a removed file (manifest_pruning), manifests read back exactly (manifest_reads), the sync
that writes the metadata (iceberg_sync) and the deletion of what it no longer needs (iceberg_expiry).
Only layout may be imported eagerly by the rooms above: the others load pyiceberg.

May import: state, features, log, storage, schema, properties, errors (and pyiceberg).
"""
