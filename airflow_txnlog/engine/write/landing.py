"""Putting a commit file, and knowing whose commit a version holds.

A commit is put with the store's exclusive create, with three outcomes: it landed; another writer's
commit was there (`VersionAlreadyExistsError`: check it, try the next version); or the outcome is
unknown (`CommitOutcomeUnknownError`: the object may have landed before the error).

A store client that retries a create whose first try landed (gcsfs and botocore do, when the
response was lost) gets the precondition failure for our own object. Every payload carries a fresh
commitInfo.txnId, so our commit is told from another writer's in two places:

- after a precondition failure the object is read back: our exact bytes mean our commit landed. A
  read-back that fails leaves the outcome unknown, never "another writer won": checking that
  "winner" would find our own commit, and a blind append would pass and commit a second time;
- a winning commit whose txnId is one this transaction sent is ours (`sent_by`), should a landed
  commit ever reach the conflict check anyway.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from airflow_txnlog.engine.errors import CommitOutcomeUnknownError, VersionAlreadyExistsError
from airflow_txnlog.engine.log.log_paths import commit_name
from airflow_txnlog.engine.log.log_reader import commit_info
from airflow_txnlog.engine.storage import LOG_DIR, Storage


def put_commit(storage: Storage, version: int, payload: bytes) -> None:
    """Create commit `version` with `payload`, or raise as the module docstring says."""
    key = f"{LOG_DIR}/{commit_name(version)}"
    try:
        storage.put_if_absent(key, payload)
    except FileExistsError as exc:
        try:
            there = storage.read(key)
        except OSError as read_error:  # ours or another's: we cannot tell
            raise CommitOutcomeUnknownError(version, read_error) from exc
        if there != payload:
            raise VersionAlreadyExistsError(version) from exc
    except OSError as exc:  # the object may have landed before the failure: we cannot tell
        raise CommitOutcomeUnknownError(version, exc) from exc


def sent_by(actions: Iterable[dict[str, Any]], txn_ids: Collection[str]) -> bool:
    """True when a commit's commitInfo.txnId is one of `txn_ids` (a commit we sent)."""
    txn_id = commit_info(actions).get("txnId")
    return isinstance(txn_id, str) and txn_id in txn_ids
