"""Who may see a table in the Tables view: Airflow's auth manager decides, per table.

Airflow does not authenticate the FastAPI apps of plugins, so every route of the view depends on
`get_user` (the api-server's own dependency: the `Authorization: Bearer` token, else the UI's
`_token` cookie; no valid token -> 401). A user may read a table when the auth manager lets them
read (GET) one of the assets that name it; a table that no asset names is readable through the DAGs
whose tasks name it (GET on the DAG). A table neither names is not a table of the view at all.
The list shows only readable tables; a table the user may not read answers 403 and carries nothing
of it (no path, no figure).
"""

from __future__ import annotations

from typing import Any

from airflow_txnlog.plugins.tables_catalog import KnownTable


def readable_names(user: Any, table: KnownTable, auth_manager: Any) -> tuple[list[str], list[str]]:
    """The asset ids and DAG ids naming `table` that `user` may read (what a response may show)."""
    from airflow.api_fastapi.auth.managers.models.resource_details import (  # noqa: PLC0415
        AssetDetails,
        DagDetails,
    )

    assets = [
        a
        for a in table.asset_ids
        if auth_manager.is_authorized_asset(method="GET", details=AssetDetails(id=a), user=user)
    ]
    dags = [
        d
        for d in table.dag_ids
        if auth_manager.is_authorized_dag(method="GET", details=DagDetails(id=d), user=user)
    ]
    return assets, dags


def names_allow(table: KnownTable, names: tuple[list[str], list[str]]) -> bool:
    """Whether the readable (asset ids, DAG ids) of `table` let the user read it (the module
    docstring's rule): its assets decide when it has any."""
    assets, dags = names
    return bool(assets) if table.asset_ids else bool(dags)


def may_read(user: Any, table: KnownTable, auth_manager: Any) -> bool:
    """Whether `user` may read `table`."""
    return names_allow(table, readable_names(user, table, auth_manager))
