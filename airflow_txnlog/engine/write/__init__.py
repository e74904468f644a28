"""Committing: optimistic transactions and the operations that build them.

What lives here: `Transaction` and its commit loop (`transaction`), Delta's conflict checks against
winning commits (`conflicts`), who made a commit (`provenance`: commitInfo.job and the owner tag),
writing data files and the write / overwrite commit (`writer`), version 0 of a new table
(`create_table`), and metadata-only changes: properties with protocol upgrades, renaming and
dropping columns (`alter_table`).

May import: state, features, log and the root's storage, schema, properties, validate and errors.
Never maintenance: maintenance operations commit through `Transaction`, not the other way round.
"""
