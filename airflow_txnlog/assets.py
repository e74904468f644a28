"""The Airflow `Asset` of a table: one per table URI, so producers and consumers agree on it.

Airflow refuses a second asset with the same URI ("uri is already associated"), so an
`AssetWatcher` must hang on this same asset: `table_asset(uri, watchers=[...])`. Airflow identifies an
asset by its name and URI (watchers are not part of that key, though Python's `==` compares them),
so the watched asset and the plain one that operators emit for are the same asset to Airflow.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from airflow.sdk import Asset, AssetWatcher


def table_asset_uri(table_uri: str) -> str:
    """`file:///abs/path` for local tables, the URI itself (trailing slash removed) otherwise."""
    uri = table_uri.strip().rstrip("/")
    head, sep, _ = uri.partition("://")
    if sep and head.isalnum():  # kept free of engine imports: DAG files import this at parse time
        return uri.replace("s3a://", "s3://", 1)
    return "file://" + os.path.abspath(uri)


def table_asset(table_uri: str, *, watchers: Sequence[AssetWatcher] = ()) -> Asset:
    """The asset DAGs schedule on (`schedule=[table_asset(uri)]`) and operators emit events for.

    :param watchers: `AssetWatcher`s (e.g. on `TxnLogVersionEventTrigger`) that create the asset's
        events when no Airflow task writes the table.
    """
    uri = table_asset_uri(table_uri)
    if watchers:
        return Asset(uri=uri, watchers=list(watchers))
    return Asset(uri=uri)
