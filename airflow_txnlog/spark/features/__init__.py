"""Table features on Spark paths: what a write or DML must add to or check in the rows it writes.

What lives here: `rules` (CHECK constraints and invariants guarded inside the write job; ADD
CONSTRAINT's check of the existing rows), `generated` (generated columns' expressions for UPDATE and
MERGE), `identity` (identity columns numbered by Spark), `deletion_vectors` (DML marking rows
deleted instead of rewriting) and `expectations` (rules a write declares on its source). The
modules are independent of each other.

May import: `spark.read` (a feature's job reads the files), the root modules (`context`, `schemas`,
`conditions`, `errors`, ...), the engine's two doors, pyspark, pyarrow.
"""
