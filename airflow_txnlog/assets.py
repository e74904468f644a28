"""The Airflow `Asset` of a table, and of a release log: one per URI, so producers and consumers agree.

Airflow refuses a second asset with the same URI ("uri is already associated"), so an
`AssetWatcher` must hang on this same asset: `table_asset(uri, watchers=[...])`. Airflow identifies an
asset by its name and URI (watchers are not part of that key, though Python's `==` compares them),
so the watched asset and the plain one that operators emit for are the same asset to Airflow.

A release log (engine.releases: several tables published as one cut) has an asset of its own,
`release_asset(log_uri)`, spelled as a table's (`file:///abs/path`, or the URI itself): the log lives
at a location of its own, never a table's, so the two kinds cannot share a URI. `TxnLogReleaseOperator`
emits an event on it for every release it publishes; a DAG that must read the tables *together*
schedules on it rather than on the tables' assets.
"""

from __future__ import annotations

import os
import posixpath
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


def release_asset(log_uri: str, *, watchers: Sequence[AssetWatcher] = ()) -> Asset:
    """The asset of a release log: DAGs that read its tables together schedule on it
    (`schedule=[release_asset(uri)]`); `TxnLogReleaseOperator` and `TxnLogReleaseRollbackOperator`
    emit its events (extra: `sequence`, `kind`, `versions`, ...)."""
    return table_asset(log_uri, watchers=watchers)


# Schemes that name the same store (fsspec's and Hadoop's spellings).
_SAME_STORE = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfs": "abfss"}


def table_location(table_uri: str) -> str:
    """One spelling per storage location, to tell whether two URIs name the same table: the asset
    URI with the store's scheme spelled one way and `.` / `..` / repeated slashes resolved
    (`lake/t/`, `./lake/t` and `file:///<cwd>/lake/t` give one location). A relative URI is taken
    against the working directory, so compare URIs the connection has resolved (`TxnLogHook.
    resolve_uri`) when a base location may apply."""
    uri = table_asset_uri(table_uri)
    scheme, _, rest = uri.partition("://")
    scheme = _SAME_STORE.get(scheme.lower(), scheme.lower())
    if scheme == "file":
        rest = "/" + rest.lstrip("/")
    bucket, slash, path = rest.partition("/")
    if scheme != "file" and not slash:
        return f"{scheme}://{bucket}"
    normal = posixpath.normpath("/" + (path if scheme != "file" else rest).lstrip("/"))
    return f"{scheme}://{normal}" if scheme == "file" else f"{scheme}://{bucket}{normal}"
