"""The Airflow `Asset` of a table: one per table URI, so producers and consumers agree on it."""

from __future__ import annotations

import os

from airflow.sdk import Asset


def table_asset_uri(table_uri: str) -> str:
    """`file:///abs/path` for local tables, the URI itself (trailing slash removed) otherwise."""
    uri = table_uri.strip().rstrip("/")
    head, sep, _ = uri.partition("://")
    if sep and head.isalnum():  # kept free of engine imports: DAG files import this at parse time
        return uri.replace("s3a://", "s3://", 1)
    return "file://" + os.path.abspath(uri)


def table_asset(table_uri: str) -> Asset:
    """The asset DAGs schedule on (`schedule=[table_asset(uri)]`) and operators emit events for."""
    return Asset(uri=table_asset_uri(table_uri))
