"""Log compaction files: `_delta_log/<x>.<y>.compacted.json` (PROTOCOL.md "Log Compaction Files").

A compaction holds the reconciled actions of commits x..y, so a reader replays one file instead of
y - x + 1 (one request instead of many on an object store). Between two checkpoints the planner
proposes one (`compact_log`) when enough commits after the newest checkpoint are not covered yet.

Reconciliation, as Delta's "Action Reconciliation" over the range only:
- file actions: the last `add` or `remove` per file key (path + deletion vector id) wins; a winning
  remove stays (a tombstone the base state's add must meet), in the order of each key's last action;
- the last `protocol` and `metaData`, the last `txn` per appId, the last `domainMetadata` per domain
  (a `removed` one stays: it must delete the domain from the base);
- `commitInfo` and `cdc` are left out (history and the change feed read the commits themselves).

Invariants: the range is commits after the newest checkpoint and before the latest commit, so a reader
always reads the latest commit itself (its commitInfo: in-commit timestamp, row tracking marks); the
commits stay (a compaction is an extra file, never a replacement: log cleanup deletes it with the
commits below a checkpoint); the file is created with put-if-absent and never rewritten, and only for
tables whose every action this engine knows (an unknown action would be lost) and whose features a
checkpoint of ours can carry. Readers that do not know compactions ignore the file.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import orjson

from airflow_txnlog.engine.errors import InvalidArgumentError, UnsupportedFeatureError
from airflow_txnlog.engine.features.table_features import require_checkpoint_supported
from airflow_txnlog.engine.log.actions import (
    ADD,
    DOMAIN_METADATA,
    KNOWN_ACTIONS,
    METADATA,
    PROTOCOL,
    REMOVE,
    TXN,
    decode_path,
)
from airflow_txnlog.engine.log.log_paths import compacted_name
from airflow_txnlog.engine.log.log_reader import list_after, read_commits
from airflow_txnlog.engine.log.replay import file_key
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.storage import LOG_DIR
from airflow_txnlog.engine.validate import number

MIN_COMMITS = 2  # a compaction of one commit saves nothing


@dataclass(frozen=True)
class LogCompactionResult:
    first: int
    last: int
    file: str | None  # the name inside `_delta_log/`; None when it existed already
    actions: int  # reconciled actions written

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compact_log(
    table: MaintenanceTable, *, first: int | None = None, last: int | None = None
) -> LogCompactionResult:
    """Write the compaction of commits `first`..`last` (default: after the newest checkpoint up to the
    commit before the latest)."""
    number("first", first, minimum=0, integer=True, none_means="the commit after the newest checkpoint")
    number("last", last, minimum=0, integer=True, none_means="the commit before the latest")
    snap = table.snapshot()
    require_checkpoint_supported(snap.protocol, "write a log compaction")
    first = (snap.checkpoint_version or -1) + 1 if first is None else first
    last = snap.version - 1 if last is None else last
    if last - first + 1 < MIN_COMMITS or last >= snap.version:
        raise InvalidArgumentError(
            f"a log compaction covers at least {MIN_COMMITS} commits before the latest version "
            f"({snap.version}); {first}..{last} does not. Help: compact after more commits"
        )
    run = list_after(table.storage, first - 1).run_from(first, last)
    if len(run) != last - first + 1:
        raise InvalidArgumentError(
            f"commits {first}..{last} are not all in the log (log cleanup removed some)"
        )
    lines = reconcile([c.actions for c in read_commits(table.storage, run)], name=f"{first}..{last}")
    name = compacted_name(first, last)
    if not lines:  # commits of commitInfo only: nothing to replay
        return LogCompactionResult(first, last, None, 0)
    try:
        table.storage.put_if_absent(f"{LOG_DIR}/{name}", b"\n".join(orjson.dumps(a) for a in lines) + b"\n")
    except FileExistsError:
        return LogCompactionResult(first, last, None, len(lines))
    return LogCompactionResult(first, last, name, len(lines))


def reconcile(commits: list[list[dict[str, Any]]], *, name: str) -> list[dict[str, Any]]:
    """The reconciled actions of consecutive commits (module docstring), protocol and metadata first."""
    files: dict[str, dict[str, Any]] = {}
    txns: dict[str, dict[str, Any]] = {}
    domains: dict[str, dict[str, Any]] = {}
    tops: dict[str, dict[str, Any]] = {}
    for actions in commits:
        for action in actions:
            kind = next(iter(action)) if len(action) == 1 else None
            if kind not in KNOWN_ACTIONS:
                raise UnsupportedFeatureError(
                    f"commits {name} hold an action this engine does not know, which a log compaction "
                    f"would lose; nothing was written: {action!r:.120}",
                    feature=str(kind or next(iter(action), "")),
                )
            body = action[kind]
            if kind in (ADD, REMOVE):
                key = file_key(decode_path(body["path"]), body.get("deletionVector"))
                files.pop(key, None)  # (re-inserted: the order of the last action's appearance)
                files[key] = action
            elif kind == TXN:
                txns[body["appId"]] = action
            elif kind == DOMAIN_METADATA:
                domains[body["domain"]] = action
            elif kind in (PROTOCOL, METADATA):
                tops[kind] = action
            # commitInfo and cdc: not part of the state
    return [
        *(tops[k] for k in (PROTOCOL, METADATA) if k in tops),
        *txns.values(),
        *domains.values(),
        *files.values(),
    ]
