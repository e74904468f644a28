"""`TxnLogCatalogHook`: the tables Airflow knows, as a task sees them.

An Airflow 3 task has no metadata-database access, so "every table Airflow knows" (the Tables view's
catalog: asset URIs that are table locations, and the `table_uri` of the provider's tasks) is asked
of the api-server, where the Tables view computes it: `GET <base>/txnlog/api/catalog` (the plugin's
route; no table is opened to answer it). The caller sees only the tables its user may read.

Connection (default id `txnlog_airflow_api`, any type, e.g. `http://user:pass@api-server:8080`):
- host (with a scheme, or `schema` as the scheme) and port: the api-server's base URL;
- login / password: a user of the auth manager, exchanged for a token at `POST /auth/token`;
- extra `{"token": "..."}`: a ready-made token instead; with neither, `GET /auth/token` (the simple
  auth manager's all-admins mode); extra `{"verify": false}` skips TLS verification.
"""

from __future__ import annotations

from typing import Any

import httpx
from airflow.sdk import BaseHook, Connection

from airflow_txnlog.arguments import invalid

CATALOG_PATH = "/txnlog/api/catalog"
TIMEOUT = 30.0


class TxnLogCatalogHook(BaseHook):
    """Reads the Tables view's catalog from the api-server (see the module docstring)."""

    conn_name_attr = "catalog_conn_id"
    default_conn_name = "txnlog_airflow_api"
    hook_name = "txnlog catalog (Airflow api-server)"

    def __init__(self, catalog_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.catalog_conn_id = catalog_conn_id

    def base_url(self, conn: Connection | None = None) -> str:
        conn = conn or self.get_connection(self.catalog_conn_id)
        host = (conn.host or "").rstrip("/")
        if not host:
            raise invalid(f"connection {self.catalog_conn_id!r} has no host (the api-server's URL)")
        if "://" not in host:
            # (an `https://user:pass@host` connection URI gives conn_type "https"; a form-made HTTP
            # connection has the scheme in `schema`, as Airflow's HttpHook reads it)
            schemes = [v for v in (conn.schema, conn.conn_type) if v in ("http", "https")]
            host = f"{schemes[0] if schemes else 'http'}://{host}"
        return f"{host}:{conn.port}" if conn.port else host

    def _token(self, client: httpx.Client, conn: Connection) -> str:
        extra = conn.extra_dejson
        if extra.get("token"):
            return str(extra["token"])
        if conn.login:
            resp = client.post("/auth/token", json={"username": conn.login, "password": conn.password or ""})
        else:
            resp = client.get("/auth/token")
        resp.raise_for_status()
        return str(resp.json()["access_token"])

    def tables(self) -> list[dict[str, str]]:
        """[{"uri", "conn_id"}] of every table the connection's user may read."""
        conn = self.get_connection(self.catalog_conn_id)  # (once: in a task, each lookup is an API call)
        verify = bool(conn.extra_dejson.get("verify", True))
        with httpx.Client(base_url=self.base_url(conn), timeout=TIMEOUT, verify=verify) as client:
            token = self._token(client, conn)
            resp = client.get(CATALOG_PATH, headers={"Authorization": f"Bearer {token}"})
            resp.raise_for_status()
            rows = resp.json().get("tables")
        if not isinstance(rows, list):
            raise invalid(f"{CATALOG_PATH} answered without a 'tables' list")
        return [{"uri": str(r["uri"]), "conn_id": str(r["conn_id"])} for r in rows]
