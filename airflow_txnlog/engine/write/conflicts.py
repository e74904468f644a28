"""Conflict detection between our transaction and a commit that won the race (pure functions).

The checks run in Delta's order for each winning commit, oldest first:
1. ProtocolChanged   - the winner wrote a protocol and so do we (or we cannot write the new one);
2. MetadataChanged   - the winner wrote metaData (schema, partitioning or properties changed);
3. ConcurrentTransaction - the winner wrote a txn for an application id we read or write;
4. ConcurrentAppend  - the winner added data files that match what we read (a read predicate, or
   the whole table). Skipped for blind appends and for dataChange=false-only transactions
   (snapshot isolation). Under WriteSerializable only adds of non-blind commits count.
   "Match" is `predicates.may_match` on the added file's stats, the same test (literals in the
   column's type, NaN-blind float stats) that decides whether a read would have kept the file: an
   add is skipped only when a re-read could not see any of its rows;
5. ConcurrentDeleteRead - the winner removed (dataChange=true) a file we read;
6. ConcurrentDeleteDelete - the winner removed a file we remove too.
If none applies, our actions are still valid on top of the winner and the commit is retried at the
next version with the same content.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from airflow_txnlog.engine.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentDomainMetadataError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
)
from airflow_txnlog.engine.log.actions import (
    ADD,
    COMMIT_INFO,
    DOMAIN_METADATA,
    METADATA,
    PROTOCOL,
    REMOVE,
    TXN,
    decode_path,
)
from airflow_txnlog.engine.log.replay import file_key
from airflow_txnlog.engine.sql.predicates import Predicate, Range, may_match

IsolationLevel = Literal["Serializable", "WriteSerializable"]
"""The isolation levels a caller may ask for (Delta's; WriteSerializable ignores blind appends)."""
SERIALIZABLE: Final = "Serializable"
WRITE_SERIALIZABLE: Final = "WriteSerializable"
# Not for callers: the level of a commit whose actions are all dataChange=false (compaction).
SNAPSHOT_ISOLATION: Final = "SnapshotIsolation"

RangesFn = Callable[[Mapping[str, Any], frozenset[str]], Mapping[str, Range]]


@dataclass(frozen=True)
class ReadSet:
    """What our transaction read and what it writes, as far as conflicts are concerned."""

    isolation_level: str
    is_blind_append: bool
    read_whole_table: bool
    read_predicates: tuple[Predicate, ...]
    read_file_keys: frozenset[str]
    app_ids: frozenset[str]
    removed_keys: frozenset[str]
    writes_protocol: bool
    domains: frozenset[str] = frozenset()  # the domains whose metadata we write


def _key(d: Mapping[str, Any]) -> str:
    return file_key(decode_path(d["path"]), d.get("deletionVector"))


def _matches_read(ours: ReadSet, add: Mapping[str, Any], ranges: RangesFn) -> bool:
    if ours.read_whole_table:
        return True
    return any(may_match(p.tree, ranges(add, p.columns)) for p in ours.read_predicates)


def check_winner(
    ours: ReadSet,
    version: int,
    actions: list[dict[str, Any]],
    *,
    ranges: RangesFn,
    protocol_supported: Callable[[Mapping[str, Any]], bool],
) -> None:
    """Raise the first conflict (in Delta's order) between `ours` and winning commit `version`."""
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for a in actions:
        for kind, body in a.items():
            by_kind.setdefault(kind, []).append(body)
    if PROTOCOL in by_kind and (ours.writes_protocol or not all(map(protocol_supported, by_kind[PROTOCOL]))):
        raise ProtocolChangedError(
            "the table protocol was changed by a concurrent commit", winning_version=version
        )
    # (before metadata, unlike Delta's order: a winner that is another run of the same idempotent
    # writer must be told apart from a mere metadata change, or a writer that retries on the latter,
    # as identity writers do, would commit the same batch twice)
    clash = sorted({t["appId"] for t in by_kind.get(TXN, [])} & ours.app_ids)
    if clash:
        raise ConcurrentTransactionError(
            f"a concurrent commit wrote transaction ids for application {clash[0]!r}", winning_version=version
        )
    touched = sorted({str(d.get("domain")) for d in by_kind.get(DOMAIN_METADATA, [])} & ours.domains)
    if touched:  # (Delta's rule; the row tracking domain, which merges, is not written here yet)
        raise ConcurrentDomainMetadataError(
            f"a concurrent commit changed the metadata of domain {touched[0]!r}, which this commit "
            "also changes",
            winning_version=version,
        )
    if METADATA in by_kind:
        raise MetadataChangedError(
            "the table metadata was changed by a concurrent commit", winning_version=version
        )
    winner_blind = bool((by_kind.get(COMMIT_INFO) or [{}])[0].get("isBlindAppend", False))
    check_appends = not ours.is_blind_append and ours.isolation_level != SNAPSHOT_ISOLATION
    if ours.isolation_level == WRITE_SERIALIZABLE and winner_blind:
        check_appends = False
    if check_appends:
        for add in by_kind.get(ADD, []):
            if add.get("dataChange", True) and _matches_read(ours, add, ranges):
                raise ConcurrentAppendError(
                    f"a concurrent commit added {decode_path(add['path'])!r} to data this operation read",
                    winning_version=version,
                )
    removes = by_kind.get(REMOVE, [])
    for rm in removes:
        if rm.get("dataChange", True) and _key(rm) in ours.read_file_keys:
            raise ConcurrentDeleteReadError(
                f"a concurrent commit removed file {decode_path(rm['path'])!r}, which this operation read",
                winning_version=version,
            )
    for rm in removes:
        if _key(rm) in ours.removed_keys:
            raise ConcurrentDeleteDeleteError(
                f"a concurrent commit also removed file {decode_path(rm['path'])!r}", winning_version=version
            )
