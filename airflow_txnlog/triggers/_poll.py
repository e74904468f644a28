"""Cheap polling of a table's log, shared by the version sensor and the version triggers.

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

Error messages that may reach trigger events or logs go through `safe_message`, which replaces the
connection's secret values with `***`.

This module imports the engine (pyarrow), so DAG-facing modules import it only inside functions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from airflow_txnlog.engine import log_reader
from airflow_txnlog.engine.errors import StorageError
from airflow_txnlog.engine.maintenance import publication_records as publications
from airflow_txnlog.engine.storage import Storage, storage_for
from airflow_txnlog.hooks.txnlog import TxnLogHook, secret_values

log = logging.getLogger(__name__)

MAX_COMMITS_PER_POLL = 100
_MAX_MESSAGE_CHARS = 500


@dataclass(frozen=True, slots=True)
class Commit:
    """What a poll learns about one new commit."""

    version: int
    operation: str | None
    timestamp: int | None  # commitInfo.timestamp, epoch milliseconds


@dataclass(frozen=True, slots=True)
class OpenedTable:
    """A table's storage plus the secret values that must never appear in messages."""

    storage: Storage
    secrets: tuple[str, ...]


def open_table(table_uri: str, txnlog_conn_id: str | None) -> OpenedTable:
    """The table's storage through `TxnLogHook` (reads the connection; touches no table file)."""
    hook = TxnLogHook(txnlog_conn_id=txnlog_conn_id)
    uri = hook.resolve_uri(table_uri)
    options = hook.storage_options_for(uri)
    secrets = secret_values(options)
    try:
        storage = storage_for(uri, options or None, single_writer=hook.single_writer)
    except Exception as exc:  # a backend may echo its options: re-raise with the secrets masked
        raise StorageError(f"cannot open {table_uri!r}: {safe_message(exc, secrets)}") from None
    return OpenedTable(storage, secrets)


def safe_message(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """`Type: message` with every secret value masked, cut to a length fit for an event payload."""
    text = f"{type(exc).__name__}: {exc}"
    for secret in secrets:
        text = text.replace(secret, "***")
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 3] + "..."


def latest_version(storage: Storage, *, channel: str | None = None) -> int:
    """The newest commit version (with `channel`: the channel's published version), or -1 when there
    is none yet.

    Lists from the `_last_checkpoint` hint when there is one (two calls), else the whole log once.
    Used only to fix a baseline, never on every poll.
    """
    if channel is not None:
        published = publications.published_version_list(storage, channel)
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
    storage: Storage, after: int, *, limit: int = MAX_COMMITS_PER_POLL, channel: str | None = None
) -> list[Commit]:
    """The next (at most `limit`) commits after version `after`, oldest first (one `read_many`); with
    `channel`, the publications after it."""
    if channel is not None:
        return poll_publications(storage, channel, after, limit=limit)
    infos = log_reader.read_commit_infos(storage, new_commits(storage, after)[:limit], batch=max(1, limit))
    out = []
    for version, info in infos:
        op, ts = info.get("operation"), info.get("timestamp")
        out.append(Commit(version, str(op) if op is not None else None, int(ts) if ts is not None else None))
    return out


def poll_publications(storage: Storage, channel: str, after: int, *, limit: int) -> list[Commit]:
    """The publications on `channel` of versions after `after`, oldest first, as `Commit`s whose
    operation is "PUBLISH" and timestamp the publication time."""
    out = []
    for version in publications.published_version_list(storage, channel, after=after)[:limit]:
        try:
            published_at = publications.read_publication(storage, channel, version).published_at
        except FileNotFoundError:  # pruned meanwhile: a newer record exists, which this poll also sees
            continue
        out.append(Commit(version, "PUBLISH", published_at))
    return out


def normalize_operations(operations: list[str] | tuple[str, ...] | None) -> frozenset[str] | None:
    """Operation names compared case-insensitively (`"merge"` matches Spark's `"MERGE"`)."""
    if operations is None:
        return None
    if isinstance(operations, str):
        operations = [operations]
    return frozenset(op.strip().upper() for op in operations)


def matches(commit: Commit, operations: frozenset[str] | None) -> bool:
    """True when `operations` is None or holds the commit's operation."""
    if operations is None:
        return True
    return commit.operation is not None and commit.operation.upper() in operations
