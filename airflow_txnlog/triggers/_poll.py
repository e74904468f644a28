"""Cheap polling of a table's log, shared by the version sensor and the version triggers.

A poll never loads a snapshot. It lists `_delta_log/` *from the cursor* (`start_after=<cursor>.json`)
and reads only the commit files newer than the cursor, taking `commitInfo.operation` from each::

    _delta_log/ 0 1 2 ... 997 998 [999 1000 1001]      cursor = 998
                                   \\____________/
                     one listing from 998.json, then one read of the new commit files

With nothing new a poll is exactly one listing call; with k new commits it adds one `read_many` (one
call on object stores, k file reads locally), at most `MAX_COMMITS_PER_POLL` commits at a time. The
number of storage calls therefore depends on how many commits are *new*, never on how long the table
is (a test counts them at 10 and at 1,000 commits). How much a listing costs inside the backend is the
engine storage's business: a local listing scans the directory; fsspec object stores page through the
keys of `_delta_log/` (log cleanup keeps that folder short).

Error messages that may reach trigger events or logs go through `safe_message`, which replaces the
connection's secret values with `***`.

This module imports the engine (pyarrow), so DAG-facing modules import it only inside functions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import orjson

from airflow_txnlog.engine.errors import StorageError
from airflow_txnlog.engine.log_paths import LAST_CHECKPOINT, LOG_DIR, LogFile, commit_name, parse_name
from airflow_txnlog.engine.storage import Storage, storage_for
from airflow_txnlog.hooks.txnlog import SECRET_KEYS, TxnLogHook

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
    options = hook.storage_options
    secrets = tuple(
        str(v) for k, v in options.items() if k in SECRET_KEYS and isinstance(v, str) and len(v) >= 4
    )
    try:
        storage = storage_for(hook.resolve_uri(table_uri), options or None, single_writer=hook.single_writer)
    except Exception as exc:  # a backend may echo its options: re-raise with the secrets masked
        raise StorageError(f"cannot open {table_uri!r}: {safe_message(exc, secrets)}") from None
    return OpenedTable(storage, secrets)


def safe_message(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """`Type: message` with every secret value masked, cut to a length fit for an event payload."""
    text = f"{type(exc).__name__}: {exc}"
    for secret in secrets:
        text = text.replace(secret, "***")
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 3] + "..."


def _commit_versions(files: list[LogFile], after: int) -> list[int]:
    parsed = (parse_name(f.name) for f in files)
    return sorted(p.version for p in parsed if p is not None and p.kind == "commit" and p.version > after)


def _checkpoint_hint(storage: Storage) -> int | None:
    try:
        return int(orjson.loads(storage.read(f"{LOG_DIR}/{LAST_CHECKPOINT}"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a missing or unreadable hint only means a full listing


def latest_version(storage: Storage) -> int:
    """The newest commit version, or -1 when there is no table yet.

    Lists from the `_last_checkpoint` hint when there is one (two calls), else the whole log once.
    Used only to fix a baseline, never on every poll.
    """
    hint = _checkpoint_hint(storage)
    if hint is not None:
        found = _commit_versions(storage.list_log(f"{hint:020d}"), hint - 1)
        if found:
            return found[-1]
    return max(_commit_versions(storage.list_log(), -1), default=-1)


def new_versions(storage: Storage, after: int) -> list[int]:
    """Versions of the commits newer than `after`, from one listing that starts at the cursor.

    The result is contiguous: a gap means a commit not visible yet, so the versions after it wait for
    the next poll. A gap right after the cursor (commits removed by log cleanup while nobody polled)
    is logged and skipped, since those commits cannot be read any more.
    """
    versions = _commit_versions(storage.list_log(commit_name(after) if after >= 0 else None), after)
    if not versions:
        return []
    if versions[0] > after + 1 and after >= 0:
        log.warning(
            "commits %s..%s are no longer in the log (log cleanup?); continuing at %s",
            after + 1,
            versions[0] - 1,
            versions[0],
        )
    run = [versions[0]]
    for v in versions[1:]:
        if v != run[-1] + 1:
            break
        run.append(v)
    return run


def _commit_info(data: bytes) -> dict[str, Any]:
    for line in data.splitlines():
        if not line.strip():
            continue
        action = orjson.loads(line)
        if isinstance(action, dict) and isinstance(action.get("commitInfo"), dict):
            return dict(action["commitInfo"])
    return {}  # commitInfo is optional in the protocol: such a commit has no operation


def read_commits(storage: Storage, versions: list[int]) -> list[Commit]:
    """`Commit`s for the given versions, read together (one `read_many`)."""
    if not versions:
        return []
    blobs = storage.read_many([f"{LOG_DIR}/{commit_name(v)}" for v in versions])
    out = []
    for version, data in zip(versions, blobs, strict=True):
        info = _commit_info(data)
        op, ts = info.get("operation"), info.get("timestamp")
        out.append(Commit(version, str(op) if op is not None else None, int(ts) if ts is not None else None))
    return out


def poll(storage: Storage, after: int, *, limit: int = MAX_COMMITS_PER_POLL) -> list[Commit]:
    """The next (at most `limit`) commits after version `after`, oldest first."""
    return read_commits(storage, new_versions(storage, after)[:limit])


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
