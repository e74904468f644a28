"""What the Tables view shows of one table, as JSON-ready dicts (read-only; nothing is written).

- `summary`: latest version, last commit (time, operation, writer from the commit's provenance),
  file count, size and health badges. What needs the latest snapshot (health, schema, protocol,
  properties) is cached per (table, version) in this process; everything else reads the table's
  storage only (one listing, one commit file, the savepoint records), so a list refreshed without
  new commits loads no snapshot.
- `detail`: the summary plus schema, protocol and table features, layout (clustering keys, the
  share the engine clustered, row tracking), the health report and savepoints.
- `history`: a page of the timeline (`engine.state.history.history_page`: only that page's commits are
  read, no snapshot), each entry with its operation, figures, writer, a link to the DAG run, and
  marks for restores, schema changes and savepoints; `chart_data`: the latest page and the size
  after it, for the chart.
Errors never carry storage options: a failure is reported by its class name and the table's id.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow_txnlog.engine.write.provenance import job_provenance  # light: no pyarrow
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.plugins.tables_catalog import KnownTable

if TYPE_CHECKING:  # the engine (pyarrow) loads on the first request, not when Airflow loads plugins
    from airflow_txnlog.engine.maintenance.health import TableHealth
    from airflow_txnlog.engine.maintenance.savepoints import Savepoint
    from airflow_txnlog.engine.state.history import HistoryPage
    from airflow_txnlog.engine.storage import Storage

_FACTS: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()
_CACHE_SIZE = 64
_LOCK = threading.Lock()
NEAR_EXPIRY_MS = 24 * 3600 * 1000
SCHEMA_OPERATIONS = ("CREATE TABLE", "ADD COLUMNS", "CHANGE COLUMN", "RENAME COLUMN", "DROP COLUMNS")


def _storage(known: KnownTable) -> Storage:
    """The table's files only: no snapshot is loaded."""
    return TxnLogHook(txnlog_conn_id=known.conn_id).get_storage(known.uri)


def _page(storage: Storage, *, before: int | None, limit: int) -> HistoryPage:
    from airflow_txnlog.engine.state.history import history_page  # noqa: PLC0415 - see TYPE_CHECKING

    return history_page(storage, before=before, limit=limit)


def _savepoints(storage: Storage) -> list[Savepoint]:
    from airflow_txnlog.engine.maintenance.savepoints import list_savepoints  # noqa: PLC0415

    return list_savepoints(storage)


def _load_facts(known: KnownTable) -> dict[str, Any]:
    """What needs the latest snapshot (the expensive part), all of one version: `version`."""
    from airflow_txnlog.engine import layout_summary  # noqa: PLC0415 (the engine loads on first use)

    table = TxnLogHook(txnlog_conn_id=known.conn_id).get_table(known.uri)
    health = table.health()  # of the latest snapshot, which may be newer than the caller's listing
    snap = table.snapshot(version=health.version)  # the one health loaded: no second listing
    protocol = snap.state.protocol
    return {
        "version": health.version,
        "health": health,
        "interval": int(snap.properties.get("delta.checkpointInterval", "10")),
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in snap.schema],
        "partitionColumns": snap.partition_columns,
        "protocol": None if protocol is None else protocol.to_wire()["protocol"],
        "properties": snap.properties,
        "layout": layout_summary(snap),
    }


def _facts(known: KnownTable, version: int) -> dict[str, Any]:
    """`_load_facts`, cached per (table, version) in this process: unchanged tables cost nothing.
    On a miss the facts are of the latest version, which is `version` or newer (`facts["version"]`);
    callers that show other figures of a version align them with it."""
    key = (known.uri, version)
    with _LOCK:
        if key in _FACTS:
            _FACTS.move_to_end(key)
            return _FACTS[key]
    facts = _load_facts(known)
    with _LOCK:
        _FACTS[(known.uri, facts["version"])] = facts
        while len(_FACTS) > _CACHE_SIZE:
            _FACTS.popitem(last=False)
    return facts


def writer(entry: dict[str, Any]) -> dict[str, str] | None:
    """The Airflow DAG / task / run that made a commit (None when it was not an Airflow task)."""
    job = job_provenance(entry.get("job"), airflow_only=True)
    if job is None:
        return None
    return {"dagId": job.dag_id, "taskId": job.task_id or "", "runId": job.run_id}


def run_link(who: dict[str, str] | None) -> str | None:
    """The Airflow UI page of the DAG run that wrote a commit, relative to the view's page. Its parts
    come from the commit (anyone who can write the table can put anything there): each is quoted,
    so the link can only ever be a path under `dags/`."""
    if not who or not who["dagId"] or not who["runId"]:
        return None
    if {who["dagId"], who["runId"]} & {".", ".."}:  # quote() keeps dots: "../dags/.." would climb
        return None
    return f"../dags/{quote(who['dagId'], safe='')}/runs/{quote(who['runId'], safe='')}"


def badges(health: TableHealth, interval: int, now_ms: int, savepoint_expiries: list[int]) -> list[str]:
    """Short health warnings: small files, tombstones to vacuum, checkpoint lag, savepoint expiry."""
    out = []
    if health.num_files >= 10 and health.small_files * 2 > health.num_files:
        out.append(f"small files: {health.small_files} of {health.num_files}")
    if health.reclaimable_bytes > 0:
        out.append(f"tombstones: {health.tombstones} ({health.reclaimable_bytes} bytes to vacuum)")
    if health.commits_since_checkpoint > interval:
        out.append(f"checkpoint lag: {health.commits_since_checkpoint} commits")
    if health.expired_savepoints:
        out.append(f"expired savepoints: {len(health.expired_savepoints)}")
    soon = [e for e in savepoint_expiries if now_ms <= e <= now_ms + NEAR_EXPIRY_MS]
    if soon:
        out.append(f"savepoints expiring within a day: {len(soon)}")
    return out


def summary(known: KnownTable) -> dict[str, Any]:
    storage = _storage(known)
    return _summary(known, storage, _savepoints(storage))


def _summary(known: KnownTable, storage: Storage, savepoints: list[Savepoint]) -> dict[str, Any]:
    last = _page(storage, before=None, limit=1).entries[0]
    facts = _facts(known, last["version"])
    if facts["version"] != last["version"]:  # committed meanwhile: show the facts' version
        last = _page(storage, before=facts["version"] + 1, limit=1).entries[0]
    health: TableHealth = facts["health"]
    expiries = [s.expires_at for s in savepoints if s.expires_at is not None]
    return {
        "id": known.table_id,
        "uri": known.uri,
        "version": last["version"],
        "lastCommit": {
            "timestamp": last["timestamp"],
            "operation": last.get("operation"),
            "writer": writer(last),
        },
        "numFiles": health.num_files,
        "sizeBytes": health.size_bytes,
        "badges": badges(health, facts["interval"], int(time.time() * 1000), expiries),
        "assets": list(known.asset_ids),
        "dags": list(known.dag_ids),
    }


def detail(known: KnownTable) -> dict[str, Any]:
    storage = _storage(known)
    savepoints = _savepoints(storage)
    out = _summary(known, storage, savepoints)
    facts = _facts(known, out["version"])
    out.update({k: facts[k] for k in ("schema", "partitionColumns", "protocol", "properties", "layout")})
    out["health"] = facts["health"].to_dict()
    now = int(time.time() * 1000)
    out["savepoints"] = [
        {
            "name": s.name,
            "version": s.version,
            "createdAt": s.created_at,
            "expiresAt": s.expires_at,
            "expired": s.expired(now),
            "createdBy": s.created_by,
            "reason": s.reason,
        }
        for s in savepoints
    ]
    return out


def history(known: KnownTable, *, before: int | None, limit: int) -> dict[str, Any]:
    """A page of the timeline: one listing and the page's commit files; no snapshot is loaded."""
    storage = _storage(known)
    page = _page(storage, before=before, limit=limit)
    return {
        "entries": _entries(page, _savepoints(storage)),
        "latestVersion": page.latest_version,
        "oldestVersion": page.oldest_version,
        "nextBefore": page.next_before,
    }


def chart_data(known: KnownTable, *, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The latest `limit` timeline entries and the table's size in bytes after the newest of them
    (from the snapshot facts, aligned: the page starts at the facts' version)."""
    storage = _storage(known)
    page = _page(storage, before=None, limit=limit)
    facts = _facts(known, page.latest_version)
    if facts["version"] != page.latest_version:  # committed meanwhile: start at the facts' version
        page = _page(storage, before=facts["version"] + 1, limit=limit)
    return _entries(page, _savepoints(storage)), facts["health"].size_bytes


def _entries(page: HistoryPage, savepoints: list[Savepoint]) -> list[dict[str, Any]]:
    pins: dict[int, list[str]] = {}
    for s in savepoints:
        pins.setdefault(s.version, []).append(s.name)
    entries = []
    for e in page.entries:
        who = writer(e)
        raw = e.get("operationMetrics")
        metrics: dict[str, Any] = raw if isinstance(raw, dict) else {}
        entries.append(
            {
                "version": e["version"],
                "timestamp": e["timestamp"],
                "operation": e.get("operation"),
                "filesAdded": e["filesAdded"],
                "filesRemoved": e["filesRemoved"],
                "bytesAdded": e["bytesAdded"],
                "bytesRemoved": e["bytesRemoved"],
                "rowsAdded": e["rowsAdded"],
                "rowsRemoved": e["rowsRemoved"],
                "metrics": {k: str(v) for k, v in metrics.items()},
                "writer": who,
                "runLink": run_link(who),
                "restore": e.get("operation") == "RESTORE",
                "schemaChange": e.get("operation") in SCHEMA_OPERATIONS,
                "savepoints": pins.get(e["version"], []),
            }
        )
    return entries
