"""The Tables view's FastAPI app: the page, its static files and a read-only JSON API.

Mounted by the plugin under `/txnlog` on Airflow's api-server. Every route depends on `GetUserDep`
(the api-server's own authentication: 401 without a valid token) and every table route checks
`tables_access.may_read` (403 otherwise, with nothing of the table). A table is addressed by its
opaque id from the catalog (`tables_catalog`), never by a path: `/api/lookup?uri=` finds the id of a
URI the catalog knows and answers 404 for any other, so no URL makes the server open a location
Airflow does not name. All links the page makes are relative (it works behind a reverse proxy and
offline: every asset is served here).

Routes: `/` (the page), `/static/{name}`, `/api/tables`, `/api/tables/{id}`,
`/api/tables/{id}/history?before=&limit=`, `/api/tables/{id}/chart.svg`,
`/api/tables/{id}/maintenance?limit=` (the last plan, the maintenance history and the maintenance
state, `tables_maintenance`; runs in flight from the metadata database, `tables_maintenance_state`),
`/api/tables/{id}/releases?limit=` (the release logs holding the table, `tables_releases`),
`/api/lookup?uri=`, `/api/catalog` (the readable tables' URIs and connections, no table opened: what
`TxnLogCatalogHook` gives a planning task).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response

from airflow_txnlog.plugins import (
    tables_maintenance,
    tables_maintenance_state,
    tables_releases,
    tables_report,
)
from airflow_txnlog.plugins.tables_access import may_read, names_allow, readable_names
from airflow_txnlog.plugins.tables_catalog import KnownTable, cached_catalog
from airflow_txnlog.plugins.tables_chart import chart_svg

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent / "static"
STATIC_FILES = {"tables.js": "text/javascript", "tables.css": "text/css"}
MAX_PAGE = 200


def _user() -> Any:
    from airflow.api_fastapi.core_api.security import get_user  # noqa: PLC0415 - api-server only

    return Depends(get_user)


User = Annotated[Any, _user()]


def _auth_manager() -> Any:
    from airflow.api_fastapi.app import get_auth_manager  # noqa: PLC0415

    return get_auth_manager()


def _catalog() -> list[KnownTable]:
    from airflow.utils.session import create_session  # noqa: PLC0415

    return cached_catalog(create_session)


Names = tuple[list[str], list[str]]  # the asset ids and DAG ids of a table that the user may read


def _readable(user: Any) -> list[tuple[KnownTable, Names]]:
    manager = _auth_manager()
    named = [(t, readable_names(user, t, manager)) for t in _catalog()]
    return [(t, names) for t, names in named if names_allow(t, names)]


def _table(user: Any, table_id: str) -> tuple[KnownTable, Names]:
    known = next((t for t in _catalog() if t.table_id == table_id), None)
    if known is None:
        raise HTTPException(404, "no such table")
    names = readable_names(user, known, _auth_manager())
    if not names_allow(known, names):
        raise HTTPException(403, "not allowed to read this table")
    return known, names


def _only_visible_names(row: dict[str, Any], names: Names) -> dict[str, Any]:
    """The row with only the asset and DAG ids the user may read (the others are not theirs to see)."""
    assets, dags = names
    return {**row, "assets": assets, "dags": dags}


def _dag_check(user: Any) -> Callable[[str], bool]:
    """Whether `user` may read a DAG (to show a DAG id and run id a table's files or history name)."""
    manager = _auth_manager()

    def may_see_dag(dag_id: str) -> bool:
        from airflow.api_fastapi.auth.managers.models.resource_details import (  # noqa: PLC0415
            DagDetails,
        )

        return bool(manager.is_authorized_dag(method="GET", details=DagDetails(id=dag_id), user=user))

    return may_see_dag


def _failed(known: KnownTable, exc: Exception) -> JSONResponse:
    # The class name only: a store client's message may echo an endpoint or an option.
    log.warning("Tables view: table %s could not be read: %s", known.table_id, type(exc).__name__)
    return JSONResponse({"id": known.table_id, "error": type(exc).__name__}, status_code=502)


def create_app() -> FastAPI:
    app = FastAPI(title="txnlog Tables", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/", response_class=HTMLResponse)
    def page(user: User) -> HTMLResponse:
        return HTMLResponse((STATIC / "tables.html").read_text(encoding="utf-8"))

    @app.get("/static/{name}")
    def static(name: str, user: User) -> FileResponse:
        if name not in STATIC_FILES:
            raise HTTPException(404, "no such file")
        return FileResponse(STATIC / name, media_type=STATIC_FILES[name])

    @app.get("/api/tables")
    def tables(user: User) -> dict[str, Any]:
        rows: list[dict[str, Any]] = []
        for known, names in _readable(user):
            try:
                row = tables_report.summary(known)
            except Exception as exc:  # one unreadable table must not hide the others
                row = {"id": known.table_id, "uri": known.uri, "error": type(exc).__name__}
            rows.append(_only_visible_names(row, names))
        return {"tables": rows}

    @app.get("/api/tables/{table_id}", response_model=None)
    def table(table_id: str, user: User) -> dict[str, Any] | JSONResponse:
        known, names = _table(user, table_id)
        try:
            return _only_visible_names(tables_report.detail(known), names)
        except Exception as exc:
            return _failed(known, exc)

    @app.get("/api/tables/{table_id}/history", response_model=None)
    def history(
        table_id: str,
        user: User,
        before: Annotated[int | None, Query(ge=0)] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    ) -> dict[str, Any] | JSONResponse:
        known, _ = _table(user, table_id)
        try:
            return tables_report.history(known, before=before, limit=limit)
        except Exception as exc:
            return _failed(known, exc)

    @app.get("/api/tables/{table_id}/chart.svg", response_model=None)
    def chart(table_id: str, user: User, limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50) -> Response:
        known, _ = _table(user, table_id)
        try:
            svg = chart_svg(*tables_report.chart_data(known, limit=limit))
        except Exception as exc:
            return _failed(known, exc)
        return Response(svg, media_type="image/svg+xml")

    @app.get("/api/tables/{table_id}/maintenance", response_model=None)
    def maintenance(
        table_id: str, user: User, limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50
    ) -> dict[str, Any] | JSONResponse:
        known, _ = _table(user, table_id)
        may_see_dag = _dag_check(user)
        try:
            return tables_maintenance.maintenance(
                known,
                limit=limit,
                may_see_dag=may_see_dag,
                in_flight=tables_maintenance_state.in_flight_from_db,
            )
        except Exception as exc:
            return _failed(known, exc)

    @app.get("/api/tables/{table_id}/releases", response_model=None)
    def releases(
        table_id: str,
        user: User,
        limit: Annotated[int, Query(ge=1, le=tables_releases.MAX_RECENT)] = tables_releases.DEFAULT_RECENT,
    ) -> dict[str, Any] | JSONResponse:
        known, _ = _table(user, table_id)
        try:
            return tables_releases.releases(known, limit=limit, may_see_dag=_dag_check(user))
        except Exception as exc:  # (a log that cannot be read is one line of the answer, not this)
            return _failed(known, exc)

    @app.get("/api/catalog")
    def catalog(user: User) -> dict[str, Any]:
        return {
            "tables": [{"uri": t.uri, "id": t.table_id, "conn_id": t.conn_id} for t, _ in _readable(user)]
        }

    @app.get("/api/lookup")
    def lookup(uri: str, user: User) -> dict[str, str]:
        known = next((t for t in _catalog() if t.uri == uri.rstrip("/")), None)
        if known is None:
            raise HTTPException(404, "no asset or task names this table")
        if not may_read(user, known, _auth_manager()):
            raise HTTPException(403, "not allowed to read this table")
        return {"id": known.table_id}

    return app
