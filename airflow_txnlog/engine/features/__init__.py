"""Delta table features: what each one means for readers and writers.

What lives here: which reader and writer features this engine supports, which its checkpoints carry
and how properties turn features on (`table_features`: the rules over the feature registry,
engine.feature_registry, where each feature's facts are written once), column mapping's logical /
physical names (`column_mapping`), deletion vectors (`deletion_vectors`: decode, write, apply), type
widening (`type_widening`), the row rules every write keeps: CHECK constraints and invariants
(`constraints`), generated columns (`generated`) and CHAR / VARCHAR lengths (`char_varchar`), with
their Spark SQL compiled for Arrow data by the sql room (engine.sql); a violating row's values are
shown as Spark SQL literals.
A new Delta feature (identity columns, row tracking, domain metadata, clustering) gets an entry in
engine.feature_registry and its module here: its wire names, how its configuration is parsed and
checked, and the pure functions state and write call to honor it.

May import: the sql and log rooms and the root's storage, schema, properties, feature_registry,
validate and errors. Never state, write or maintenance: a feature's rules are used by snapshots and
transactions alike, so the commit that changes a feature lives in write (engine.write.alter_table),
not here.
"""
