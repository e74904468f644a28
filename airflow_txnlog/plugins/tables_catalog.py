"""Which tables Airflow knows, and through what: the catalog behind the Tables view.

A table is known when
- an asset's URI is a table location (what `table_asset_uri` makes: `file:///...`, `s3://...`,
  `gs://...`, `abfs[s]://...`, `az://...`), or
- a task of the provider (its class lives in `airflow_txnlog.operators` / `.sensors`) names it in
  `table_uri`; relative URIs are resolved against the task's `txnlog` connection, templated ones
  (`{{ ... }}`) cannot be known before a run and are left out.

Each `KnownTable` records the asset ids and DAG ids that name it, which is what access is decided
on (`tables_access`), and the connection to open it with (a task's, else `txnlog_default`).
Nothing here reads a table: only Airflow's metadata database (the latest serialized DAGs, the
assets), so listing costs no storage call. `cached_catalog` reuses a catalog for 10 s in the
api-server process: a DAG or asset added since shows up within that time. When several DAGs name a
table through different connections, the first DAG by id gives the connection.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from airflow_txnlog.assets import table_asset_uri
from airflow_txnlog.hooks.txnlog import TxnLogHook

TABLE_SCHEMES = ("file", "s3", "gs", "abfs", "abfss", "az")
_TASK_MODULES = ("airflow_txnlog.operators.", "airflow_txnlog.sensors.")


@dataclass(frozen=True)
class KnownTable:
    """A table Airflow knows. `table_id` is an opaque, stable id for URLs (never the path)."""

    uri: str
    table_id: str
    asset_ids: tuple[str, ...]
    dag_ids: tuple[str, ...]
    conn_id: str


def table_id_of(uri: str) -> str:
    return hashlib.sha256(uri.encode()).hexdigest()[:20]


def is_table_uri(uri: str) -> bool:
    scheme, sep, _ = uri.partition("://")
    return bool(sep) and scheme.lower() in TABLE_SCHEMES


def task_tables(serialized_dag: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(table_uri as written, connection id) of each provider task in one serialized DAG."""
    for task in (serialized_dag.get("dag") or {}).get("tasks") or []:
        fields = task.get("__var", task) if isinstance(task, dict) else {}
        module = str(fields.get("_task_module") or "")
        uri = fields.get("table_uri")
        if not module.startswith(_TASK_MODULES) or not isinstance(uri, str) or "{{" in uri:
            continue
        conn_id = fields.get("txnlog_conn_id")
        yield uri, conn_id if isinstance(conn_id, str) and conn_id else TxnLogHook.default_conn_name


def _resolved(uri: str, hook: TxnLogHook) -> str | None:
    """The asset-form URI of a task's `table_uri` (None when its connection cannot resolve it)."""
    try:
        return table_asset_uri(hook.resolve_uri(uri))
    except Exception:  # a connection that does not exist: the task's table is unknown to the view
        return None


def build_catalog(
    assets: Iterable[tuple[str, str]], dags: Iterable[tuple[str, dict[str, Any]]]
) -> list[KnownTable]:
    """Known tables from (asset id, asset URI) pairs and (dag id, serialized DAG) pairs."""
    asset_ids: dict[str, set[str]] = defaultdict(set)
    dag_ids: dict[str, set[str]] = defaultdict(set)
    conns: dict[str, str] = {}
    hooks: dict[str, TxnLogHook] = {}
    for asset_id, uri in assets:
        if is_table_uri(uri):
            asset_ids[uri.rstrip("/")].add(str(asset_id))
    for dag_id, data in sorted(dags, key=lambda d: d[0]):  # the first DAG's connection, by dag id
        for uri, conn_id in task_tables(data):
            if conn_id not in hooks:  # one hook per connection: it looks the connection up once
                hooks[conn_id] = TxnLogHook(txnlog_conn_id=conn_id)
            resolved = _resolved(uri, hooks[conn_id])
            if resolved is None or not is_table_uri(resolved):
                continue
            dag_ids[resolved].add(dag_id)
            conns.setdefault(resolved, conn_id)
    uris = sorted(set(asset_ids) | set(dag_ids))
    return [
        KnownTable(
            uri=u,
            table_id=table_id_of(u),
            asset_ids=tuple(sorted(asset_ids[u])),
            dag_ids=tuple(sorted(dag_ids[u])),
            conn_id=conns.get(u, TxnLogHook.default_conn_name),
        )
        for u in uris
    ]


_CACHE: dict[str, tuple[float, list[KnownTable]]] = {}
CACHE_SECONDS = 10.0


def cached_catalog(session_factory: Any) -> list[KnownTable]:
    """`load_catalog`, reused for `CACHE_SECONDS` in this process (a page opens several routes)."""
    now = time.monotonic()
    hit = _CACHE.get("catalog")
    if hit is not None and now - hit[0] < CACHE_SECONDS:
        return hit[1]
    with session_factory() as session:
        catalog = load_catalog(session)
    _CACHE["catalog"] = (now, catalog)
    return catalog


def load_catalog(session: Any) -> list[KnownTable]:
    """The catalog from Airflow's metadata database (active assets, latest serialized DAGs)."""
    from airflow.models.asset import AssetActive, AssetModel  # noqa: PLC0415 - api-server only
    from airflow.models.dag import DagModel  # noqa: PLC0415
    from airflow.models.serialized_dag import SerializedDagModel  # noqa: PLC0415
    from sqlalchemy import select  # noqa: PLC0415

    active = select(AssetActive.uri)
    rows = session.execute(select(AssetModel.id, AssetModel.uri).where(AssetModel.uri.in_(active))).all()
    dag_ids = list(session.scalars(select(DagModel.dag_id).where(DagModel.is_stale.is_(False))))
    serialized = SerializedDagModel.get_latest_serialized_dags(dag_ids=dag_ids, session=session)
    return build_catalog(
        ((str(r[0]), str(r[1])) for r in rows), ((s.dag_id, s.data or {}) for s in serialized)
    )
