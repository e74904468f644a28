"""An auth manager for the Tables view tests: Airflow's simple auth manager, with one restriction.

The simple auth manager knows roles only (a viewer reads every DAG and asset). This subclass lets
the user named in `TXNLOG_TEST_LIMITED_USER` read only the DAGs in `TXNLOG_TEST_LIMITED_DAGS` and
the assets whose URIs are in `TXNLOG_TEST_LIMITED_ASSETS` (comma-separated), as a per-DAG /
per-asset permission of a real auth manager (FAB, Keycloak) would. Everyone else is as the simple
auth manager decides.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager


def _listed(name: str) -> set[str]:
    return {v for v in os.environ.get(name, "").split(",") if v}


@cache
def _asset_uri(asset_id: str) -> str | None:
    from airflow.models.asset import AssetModel  # noqa: PLC0415
    from airflow.utils.session import create_session  # noqa: PLC0415

    with create_session() as session:
        asset = session.get(AssetModel, int(asset_id))
        return None if asset is None else str(asset.uri)


class LimitedViewerAuthManager(SimpleAuthManager):
    def _limited(self, user: Any) -> bool:
        return bool(getattr(user, "username", None) == os.environ.get("TXNLOG_TEST_LIMITED_USER"))

    def is_authorized_dag(
        self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None
    ) -> bool:
        if self._limited(user):
            dag_id = getattr(details, "id", None)
            if dag_id is None or dag_id not in _listed("TXNLOG_TEST_LIMITED_DAGS"):
                return False
        return super().is_authorized_dag(
            method=method, user=user, access_entity=access_entity, details=details
        )

    def is_authorized_asset(self, *, method: Any, user: Any, details: Any = None) -> bool:
        if self._limited(user):
            asset_id = getattr(details, "id", None)
            if asset_id is None or _asset_uri(str(asset_id)) not in _listed("TXNLOG_TEST_LIMITED_ASSETS"):
                return False
        return super().is_authorized_asset(method=method, user=user, details=details)
