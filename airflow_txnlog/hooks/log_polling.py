"""Cheap polling of a table's log, behind `TxnLogHook`'s polling methods (the version sensor calls the
sync ones, the version triggers the async ones, as a provider's trigger calls its hook).

A poll never loads a snapshot, and never names a log file: it reads the log through the engine's
`log_reader`, which lists the log *from the cursor* (one listing that starts after the cursor's
commit) and reads only the commit files newer than it, parsing each only up to its commitInfo::

    _delta_log/ 0 1 2 ... 997 998 [999 1000 1001]      cursor = 998
                                   \\____________/
               list_after(storage, 998), then one read_commit_infos of the new commits

With nothing new a poll is exactly one listing call; with k new commits it adds one `read_many` (one
call on object stores, k file reads locally), at most `MAX_COMMITS_PER_POLL` commits at a time. The
number of storage calls therefore depends on how many commits are *new*, never on how long the table
is (a test counts them at 10 and at 1,000 commits). How much a listing costs inside the backend is the
engine storage's business: a local listing scans the directory; on S3 the server starts the listing
at the cursor (`StartAfter`); other fsspec object stores page through the keys of `_delta_log/` (log
cleanup keeps that folder short).

Following a publication channel (write-audit-publish, `channel=`) a poll lists the channel's
records `_published/<channel>/<version>.json` after the cursor instead (the same one listing; one read
per new record for its publication time); the "commits" it returns are publications, operation
"PUBLISH". A channel holds a few dozen records at most (`publish` prunes older ones).

Each commit of a poll says whether it `matched` the operations asked for (case-insensitive; always
for publications), so a caller walks the commits, moves its cursor past each and acts on the matched
ones without a helper of its own. Error messages that may reach trigger events or logs go through
`hooks.masking.safe_message`, which replaces the connection's secret values with `***`.

This module imports only the engine's light modules (`log_reader`, `storage`, `publication_records`
through `airflow_txnlog.engine.spi`: pure Python + fsspec), never pyarrow, numpy or sqlglot. The hook
imports it inside its methods (a triggerer runs them in a worker thread), so DAG parsing and the
triggerer's event loop never import it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from airflow_txnlog.engine import StorageError
from airflow_txnlog.engine.spi import Storage, log_reader, publication_records, storage_for
from airflow_txnlog.hooks.masking import safe_message

log = logging.getLogger(__name__)

MAX_COMMITS_PER_POLL = 100


@dataclass(frozen=True, slots=True)
class Commit:
    """What a poll learns about one new commit (or publication)."""

    version: int
    operation: str | None
    timestamp: int | None  # commitInfo.timestamp (a publication's time), epoch milliseconds
    matched: bool = True  # its operation is one of those the poll was asked for


@dataclass(frozen=True, slots=True)
class LogPoll:
    """One poll: the new commits, oldest first, and whether they were all there is for now."""

    commits: list[Commit]
    caught_up: bool  # fewer than the limit: nothing more to read before the next poll


@dataclass(frozen=True, slots=True)
class OpenedLog:
    """A table's storage plus the secret values that must never appear in messages."""

    storage: Storage
    secrets: tuple[str, ...]


def open_log(
    table_uri: str, uri: str, options: dict[str, Any], secrets: tuple[str, ...], *, single_writer: bool
) -> OpenedLog:
    """The storage of `uri` (the resolved `table_uri`); touches no table file. A backend that fails
    may echo its options: the error is re-raised with the secrets masked."""
    try:
        storage = storage_for(uri, options or None, single_writer=single_writer)
    except Exception as exc:
        raise StorageError(f"cannot open {table_uri!r}: {safe_message(exc, secrets)}") from None
    return OpenedLog(storage, secrets)


def latest_version(storage: Storage, *, channel: str | None = None) -> int:
    """The newest commit version (with `channel`: the channel's published version), or -1 when there
    is none yet.

    Lists from the `_last_checkpoint` hint when there is one (two calls), else the whole log once.
    Used only to fix a baseline, never on every poll.
    """
    if channel is not None:
        published = publication_records.published_version_list(storage, channel)
        return published[-1] if published else -1
    return log_reader.latest_commit_version(storage)


def new_commits(storage: Storage, after: int) -> log_reader.CommitFiles:
    """The commits newer than `after`, from one listing that starts at the cursor.

    The result is contiguous: a gap means a commit not visible yet, so the versions after it wait for
    the next poll. A gap right after the cursor (commits removed by log cleanup while nobody polled)
    is logged and skipped, since those commits cannot be read any more.
    """
    listing = log_reader.list_after(storage, after)
    if not listing.commits:
        return []
    first = min(listing.commits)
    if first > after + 1 and after >= 0:
        log.warning(
            "commits %s..%s are no longer in the log (log cleanup?); continuing at %s",
            after + 1,
            first - 1,
            first,
        )
    return listing.run_from(first)


def poll(
    storage: Storage,
    after: int,
    *,
    operations: Collection[str] | None = None,
    channel: str | None = None,
    limit: int = MAX_COMMITS_PER_POLL,
) -> LogPoll:
    """The next (at most `limit`) commits after version `after`, oldest first (one `read_many`), each
    `matched` when `operations` is None or holds its operation; with `channel`, the publications."""
    if channel is not None:
        commits = poll_publications(storage, channel, after, limit=limit)
        return LogPoll(commits, len(commits) < limit)
    wanted = normalize_operations(operations)
    infos = log_reader.read_commit_infos(storage, new_commits(storage, after)[:limit], batch=max(1, limit))
    out = []
    for version, info in infos:
        op, ts = info.get("operation"), info.get("timestamp")
        operation, timestamp = str(op) if op is not None else None, int(ts) if ts is not None else None
        out.append(Commit(version, operation, timestamp, matches(operation, wanted)))
    return LogPoll(out, len(out) < limit)


def poll_publications(storage: Storage, channel: str, after: int, *, limit: int) -> list[Commit]:
    """The publications on `channel` of versions after `after`, oldest first, as `Commit`s whose
    operation is "PUBLISH" and timestamp the publication time."""
    out = []
    for version in publication_records.published_version_list(storage, channel, after=after)[:limit]:
        try:
            published_at = publication_records.read_publication(storage, channel, version).published_at
        except FileNotFoundError:  # pruned meanwhile: a newer record exists, which this poll also sees
            continue
        out.append(Commit(version, "PUBLISH", published_at))
    return out


def normalize_operations(operations: Collection[str] | None) -> frozenset[str] | None:
    """Operation names compared case-insensitively (`"merge"` matches Spark's `"MERGE"`)."""
    if operations is None:
        return None
    if isinstance(operations, str):
        operations = [operations]
    return frozenset(op.strip().upper() for op in operations)


def matches(operation: str | None, wanted: frozenset[str] | None) -> bool:
    """True when `wanted` is None or holds the operation."""
    if wanted is None:
        return True
    return operation is not None and operation.upper() in wanted
