"""The Tables view as an Airflow 3 plugin, registered through the provider info (`plugins`).

- `fastapi_apps`: the view's app (`tables_api`) under `/txnlog` on the api-server;
- `external_views`: a "Tables" entry in the navigation that shows `/txnlog/` inside the UI.
No Flask / FAB: Airflow 3 retired them. Loading this module imports FastAPI and the provider's
hook, not the engine: pyarrow loads with the first request, not in every Airflow process.

Turn the view off with `[txnlog] tables_view = False` (`AIRFLOW__TXNLOG__TABLES_VIEW=False`):
the plugin then registers neither the app nor the navigation entry.
"""

from __future__ import annotations

from typing import Any

from airflow.configuration import conf
from airflow.plugins_manager import AirflowPlugin

URL_PREFIX = "/txnlog"


def _enabled() -> bool:
    return conf.getboolean("txnlog", "tables_view", fallback=True)


def _apps() -> list[dict[str, Any]]:
    if not _enabled():
        return []
    from airflow_txnlog.plugins.tables_api import create_app  # noqa: PLC0415 - only when enabled

    return [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "txnlog Tables"}]


def _views() -> list[dict[str, Any]]:
    if not _enabled():
        return []
    return [
        {
            "name": "Tables",
            "href": f"{URL_PREFIX.lstrip('/')}/",  # relative to Airflow's base URL (sub-paths, proxies)
            "destination": "nav",
            "url_route": "txnlog-tables",
        }
    ]


class TxnLogTablesPlugin(AirflowPlugin):
    """History, health and savepoints of the lake's tables, behind Airflow's access control."""

    name = "txnlog_tables"
    fastapi_apps = _apps()
    external_views = _views()
