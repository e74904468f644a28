"""What the Tables view shows of one table, as JSON-ready dicts (read-only; nothing is written).

Each route opens the table once (`TxnLogHook.get_table(lazy=True)`: nothing is read yet) and asks the
engine one question, `Table.overview` (engine.overview): the latest version's history page, its
savepoints and, unless the route is a history page, its facts (health, checkpoint interval, schema,
protocol, properties, layout), from ONE log listing and ONE read of the savepoints, all of one
version. This module only turns that overview into the JSON the page reads:

- `summary`: latest version, last commit (time, operation, writer from the commit's provenance),
  file count, size and health badges;
- `detail`: the summary plus schema, protocol and table features, layout (clustering keys, the
  share the engine clustered, row tracking), the health report and savepoints;
- `history`: a page of the timeline (only that page's commits are read, no snapshot), each entry
  with its operation, figures, writer, a link to the DAG run, and marks for restores, schema changes
  and savepoints; `chart_data`: the latest page and the size after it, for the chart.

The facts need the snapshot (the expensive part). The latest facts of each table are kept in this
process (`_FACTS`, the 64 tables used last) and handed back to the next overview, which uses them
when they are still of the listed version: a list refreshed without new commits loads no snapshot.
Errors never carry storage options: a failure is reported by its class name and the table's id.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow_txnlog.engine.spi import job_provenance  # light: no pyarrow
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.plugins.tables_catalog import KnownTable

if TYPE_CHECKING:  # the engine (pyarrow) loads on the first request, not when Airflow loads plugins
    from airflow_txnlog.engine import TableHealth, TableOverview, VersionFacts

_FACTS: OrderedDict[str, VersionFacts] = OrderedDict()  # table URI -> its latest facts seen
_CACHE_SIZE = 64
_LOCK = threading.Lock()
NEAR_EXPIRY_MS = 24 * 3600 * 1000
SCHEMA_OPERATIONS = ("CREATE TABLE", "ADD COLUMNS", "CHANGE COLUMN", "RENAME COLUMN", "DROP COLUMNS")


def _history_only(known: KnownTable, *, before: int | None, limit: int) -> TableOverview:
    """The overview without facts: one listing, the savepoints, the page's commit files."""
    table = TxnLogHook(txnlog_conn_id=known.conn_id).get_table(known.uri, lazy=True)
    return table.overview(limit=limit, before=before, with_facts=False)


def _with_facts(known: KnownTable, *, limit: int) -> tuple[TableOverview, VersionFacts]:
    """The overview of the latest `limit` commits with its facts (the cached ones when still current)."""
    with _LOCK:
        cached = _FACTS.get(known.uri)
    table = TxnLogHook(txnlog_conn_id=known.conn_id).get_table(known.uri, lazy=True)
    overview = table.overview(limit=limit, known=cached)
    facts = overview.facts
    assert facts is not None  # (asked for)
    with _LOCK:
        _FACTS[known.uri] = facts
        _FACTS.move_to_end(known.uri)
        while len(_FACTS) > _CACHE_SIZE:
            _FACTS.popitem(last=False)
    return overview, facts


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
    """Short health warnings: small files, tombstones to vacuum, checkpoint lag, savepoint expiry, a
    version checksum (`.crc`) that contradicts the log."""
    out = []
    if health.num_files >= 10 and health.small_files * 2 > health.num_files:
        out.append(f"small files: {health.small_files} of {health.num_files}")
    if health.reclaimable_bytes > 0:
        out.append(f"tombstones: {health.tombstones} ({health.reclaimable_bytes} bytes to vacuum)")
    if health.commits_since_checkpoint > interval:
        out.append(f"checkpoint lag: {health.commits_since_checkpoint} commits")
    if health.expired_savepoints:
        out.append(f"expired savepoints: {len(health.expired_savepoints)}")
    if health.checksum_problems:
        out.append(f"version checksum disagrees with the log: {health.checksum_problems[0]}")
    soon = [e for e in savepoint_expiries if now_ms <= e <= now_ms + NEAR_EXPIRY_MS]
    if soon:
        out.append(f"savepoints expiring within a day: {len(soon)}")
    return out


def summary(known: KnownTable) -> dict[str, Any]:
    return _summary(known, *_with_facts(known, limit=1))


def _summary(known: KnownTable, overview: TableOverview, facts: VersionFacts) -> dict[str, Any]:
    last = overview.history.entries[0]
    expiries = [s.expires_at for s in overview.savepoints if s.expires_at is not None]
    return {
        "id": known.table_id,
        "uri": known.uri,
        "version": last["version"],
        "lastCommit": {
            "timestamp": last["timestamp"],
            "operation": last.get("operation"),
            "writer": writer(last),
        },
        "numFiles": facts.health.num_files,
        "sizeBytes": facts.health.size_bytes,
        "badges": badges(facts.health, facts.checkpoint_interval, int(time.time() * 1000), expiries),
        "assets": list(known.asset_ids),
        "dags": list(known.dag_ids),
    }


def detail(known: KnownTable) -> dict[str, Any]:
    overview, facts = _with_facts(known, limit=1)
    out = _summary(known, overview, facts)
    out["schema"] = [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in facts.schema]
    out["partitionColumns"] = list(facts.partition_columns)
    out["protocol"] = None if facts.protocol is None else dict(facts.protocol)
    out["properties"] = dict(facts.properties)
    out["layout"] = dict(facts.layout)
    out["health"] = facts.health.to_dict()
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
        for s in overview.savepoints
    ]
    return out


def history(known: KnownTable, *, before: int | None, limit: int) -> dict[str, Any]:
    """A page of the timeline: one listing and the page's commit files; no snapshot is loaded."""
    overview = _history_only(known, before=before, limit=limit)
    page = overview.history
    return {
        "entries": _entries(overview),
        "latestVersion": page.latest_version,
        "oldestVersion": page.oldest_version,
        "nextBefore": page.next_before,
    }


def chart_data(known: KnownTable, *, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The latest `limit` timeline entries and the table's size in bytes after the newest of them
    (both of the overview's one version)."""
    overview, facts = _with_facts(known, limit=limit)
    return _entries(overview), facts.health.size_bytes


def _entries(overview: TableOverview) -> list[dict[str, Any]]:
    entries = []
    for e in overview.history.entries:
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
                "savepoints": overview.savepoints_at(e["version"]),
            }
        )
    return entries
