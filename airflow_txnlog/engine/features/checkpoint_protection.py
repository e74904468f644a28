"""checkpointProtection: the writer feature Delta 4's DROP FEATURE adds (protocol RFC
`checkpoint-protection.md`), so that the checkpoints it writes at the drop boundary outlive the
commits they hide from older readers.

With the feature in the protocol and V = `delta.requireCheckpointProtectionBeforeVersion`:
    (a) no checkpoint of a version below V is cleaned up,
    (b) no checkpoint of a version below V is created unless the writer supports that version's
        protocol,
    (c) no history below V is cleaned up for versions whose protocol the writer does not support,
        unless one cleanup removes all of it at once,
    (d) a cleanup removes commits before the checkpoints of the same versions.

This engine keeps the strict reading: its log cleanup removes nothing below V until it can remove
everything below V in one go (its cleanup checkpoint C is at or past V, `cleanup_allowed`), and then
deletes the commits, checksums and compactions before the checkpoints (`deletion_waves`). Every
checkpoint it writes, of any version, needs that version's protocol to be one its checkpoints carry
(`table_features.require_checkpoint_supported`), which is (b). A V that is not a whole number
protects everything: a cleanup waits rather than guessing. Readers need nothing.
"""

from __future__ import annotations

import sys

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine.log.actions import Metadata, Protocol
from airflow_txnlog.engine.properties import CHECKPOINT_PROTECTION_VERSION

FEATURE = registry.CHECKPOINT_PROTECTION.name
EVERYTHING = sys.maxsize  # (V when the property is not a whole number: all history protected)


def protected_before(protocol: Protocol, metadata: Metadata) -> int:
    """V: the version below which checkpoints are protected (0: nothing is)."""
    if FEATURE not in (protocol.writer_features or ()):
        return 0
    raw = metadata.configuration.get(CHECKPOINT_PROTECTION_VERSION)
    if raw is None:
        return 0
    try:
        return max(0, int(str(raw).strip()))
    except ValueError:
        return EVERYTHING


def cleanup_allowed(protected: int, cleanup_checkpoint: int) -> bool:
    """May a cleanup remove every version below `cleanup_checkpoint`? Only if that removes all
    history below the protected version too (or nothing is protected)."""
    return cleanup_checkpoint >= protected


def deletion_waves(protected: int, doomed: list[tuple[int, str, bool]]) -> list[list[tuple[int, str]]]:
    """(version, name) of the files to delete, in waves, each deleted whole before the next starts
    (an object store deletes a batch in any order), each oldest first: one wave, or when checkpoints
    are protected, every other file before any checkpoint (rule d).

    :param doomed: (version, file name, is a checkpoint file) of each file to delete.
    """
    ordered = sorted(doomed)
    if protected == 0:
        return [[(v, n) for v, n, _ in ordered]]
    return [[(v, n) for v, n, cp in ordered if cp == last] for last in (False, True)]
