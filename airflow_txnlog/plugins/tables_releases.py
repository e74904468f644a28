"""What the Tables view shows of a table's releases (docs/releases.md): the release logs holding it.

A publisher writes a hold in every table it releases (`<table>/_releases/<log id>/<publish id>.json`,
naming the log's URI): `release_records.release_logs` finds the logs from them. For each log (at most
`MAX_LOGS`, by URI) the route shows
- its current release: sequence, kind (`publish` / `rollback`, and the sequence a rollback restored),
  when, by whom (the DAG / task / run that published it, linked to the run), the note, and this
  table's version in it;
- whether the table's latest version is ahead of that version (`unreleasedCommits`: commits since,
  of any kind, maintenance included), from ONE listing of the table's log that starts after the
  smallest released version (a short page on object stores, however long the log);
- its newest `limit` releases (sequence, kind, when, this table's version: null in a release made
  before the table joined the log), and how many it has.

Storage calls, whatever the length of the logs: one listing of `_releases/`, then per log one
listing of its holds' folder and one hold read (`release_logs`), one listing of the log's
`releases/` and `limit` record reads (the newest is the current release); then the one listing of
the table's log. Nothing here loads a snapshot or imports pyarrow.

A hold is written by whoever can write the table, so its log URI is not trusted more than a commit:
the log is read with the table's connection and its records are shown only when its current release
names this table (an orphan hold, left by a publisher that died before its record, or a URI pointing
elsewhere shows an explanation, no record), and only this table's version of each release (the other
tables of a release are not the user's to see). A log whose records say another log id is refused.
A log that cannot be read is one error line (the error's class name only: a store's message may echo
an endpoint), never a failed page; the DAG and run of a publisher are shown only to a user who may
read that DAG (`may_see_dag`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_txnlog.engine.spi import log_reader, release_records  # light: orjson + storage
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.plugins.tables_catalog import KnownTable
from airflow_txnlog.plugins.tables_report import run_link, writer

if TYPE_CHECKING:
    from airflow_txnlog.engine.spi import Storage

log = logging.getLogger(__name__)
MAX_LOGS = 10  # release logs opened per request (a table is usually released by one or two)
DEFAULT_RECENT = 5
MAX_RECENT = 20
HIDDEN = {"dagId": "", "taskId": "", "runId": ""}  # a publisher whose DAG the user may not read
NOT_NAMED = "not in the log's current release"


def releases(known: KnownTable, *, limit: int, may_see_dag: Callable[[str], bool]) -> dict[str, Any]:
    """The payload of the releases route: `{logs, moreLogs, latestVersion}`."""
    hook = TxnLogHook(txnlog_conn_id=known.conn_id)
    table = hook.get_storage(known.uri)
    found = sorted(release_records.release_logs(table).items(), key=lambda item: (item[1], item[0]))
    seen: dict[str, bool] = {}

    def allowed(dag_id: str) -> bool:
        if dag_id not in seen:
            seen[dag_id] = may_see_dag(dag_id)
        return seen[dag_id]

    logs = []
    for log_id, uri in found[:MAX_LOGS]:
        try:
            storage = hook.get_storage(uri)
            logs.append(release_log(storage, log_id, uri, known.uri, limit=limit, may_see_dag=allowed))
        except Exception as exc:  # one unreadable log must not hide the others
            log.warning(
                "Tables view: release log %s of table %s could not be read: %s",
                log_id,
                known.table_id,
                type(exc).__name__,
            )
            logs.append({"id": log_id, "uri": uri, "error": type(exc).__name__})
    released = [entry["tableVersion"] for entry in logs if entry.get("tableVersion") is not None]
    latest = latest_after(table, min(released)) if released else None
    for entry in logs:
        version = entry.get("tableVersion")
        if version is not None and latest is not None:
            entry["unreleasedCommits"] = max(latest - version, 0)
    return {"logs": logs, "moreLogs": max(len(found) - MAX_LOGS, 0), "latestVersion": latest}


def latest_after(table: Storage, version: int) -> int:
    """The table's latest version, from one listing of its log that starts after `version` (a
    version a release names exists, so nothing listed means it is the latest)."""
    newer = log_reader.list_after(table, version).latest()
    return version if newer is None else max(newer, version)


def release_log(
    storage: Storage,
    log_id: str,
    uri: str,
    table_uri: str,
    *,
    limit: int,
    may_see_dag: Callable[[str], bool],
) -> dict[str, Any]:
    """Release log `log_id` (at `uri`, opened as `storage`) as the page shows it, with `table_uri`'s
    versions (see the module docstring): one listing, at most `limit` record reads."""
    out: dict[str, Any] = {"id": log_id, "uri": uri, "count": 0, "current": None, "tableVersion": None}
    out["releases"] = []
    newest = release_records.sequences(storage)[::-1]
    if not newest:
        return {**out, "reason": "no release yet"}
    current: release_records.ReleaseRecord = release_records.read_release(storage, newest[0])
    if current.log_id and current.log_id != log_id:
        return {**out, "error": "another release log (its records name another log id)"}
    version = _version_in(current, table_uri)
    if version is None:  # an orphan hold, or a URI naming a log that does not release this table
        return {**out, "reason": NOT_NAMED}
    older: list[release_records.ReleaseRecord] = [
        release_records.read_release(storage, s) for s in newest[1:limit]
    ]
    out.update(count=len(newest), tableVersion=version)
    out["current"] = {**_entry(current, table_uri), "note": current.note, **_publisher(current, may_see_dag)}
    out["releases"] = [_entry(r, table_uri) for r in [current, *older]]
    return out


def _version_in(record: release_records.ReleaseRecord, table_uri: str) -> int | None:
    try:
        return int(record.version_of(table_uri))
    except KeyError:
        return None


def _entry(record: release_records.ReleaseRecord, table_uri: str) -> dict[str, Any]:
    return {
        "sequence": record.sequence,
        "kind": record.kind,
        "rollbackTo": record.rollback_to,
        "publishedAt": record.published_at,
        "tableVersion": _version_in(record, table_uri),
    }


def _publisher(record: release_records.ReleaseRecord, may_see_dag: Callable[[str], bool]) -> dict[str, Any]:
    """Who published it (the Airflow DAG / task / run; None outside Airflow) and the run's link;
    the DAG, task and run are left out ("") for a user who may not read the DAG."""
    who = writer({"job": record.published_by})
    if who is not None and not may_see_dag(who["dagId"]):
        return {"publishedBy": dict(HIDDEN), "runLink": None}
    return {"publishedBy": who, "runLink": run_link(who)}
