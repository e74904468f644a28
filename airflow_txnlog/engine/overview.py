"""One version of a table as a page shows it, from one log listing and one read of the savepoints.

A page of a table (the Airflow plugin's Tables view) shows its latest version: a page of the history,
the savepoints, and what needs the snapshot (`VersionFacts`: health, checkpoint interval, schema,
protocol, properties, layout). Each room answers its part with its own query, and each of those
lists the log itself (`history_page`, `load_snapshot`, `table_health`, `Snapshot.update`) or reads
the savepoints (`list_savepoints`, `table_health`). Called one after the other they list the log
several times and may answer for different versions when a commit lands in between.

`table_overview` runs them over `_OneRead`, a read-only view of the table's storage for the length
of one call. Its first listing of `_delta_log/` and of `_savepoints/` is the only one: every later
listing of either folder is answered from it (filtered by `start_after`, as the store would filter),
and each savepoint record is read once::

    history_page ─────┐
    load_snapshot ────┼─ list _delta_log/ ── once ──> the listing every part sees
    Snapshot.update ──┤  (from `start_after`: nothing newer than that listing)
    table_health ─────┘
    list_savepoints, table_health ── list _savepoints/, read each record ── once

Invariants: every figure is of one version, the listing's latest (a commit that lands meanwhile is
shown by the next call); per call `_delta_log/` and `_savepoints/` are listed at most once each,
every savepoint record is read at most once, and the history page reads only its own commits;
nothing is written (the view refuses writes) and the view does not outlive the call (the result
holds plain values, no snapshot). Given `known` facts of the listed version (what an earlier call
returned), no snapshot is loaded: the caller's cache makes an unchanged table cost one listing, the
savepoint records and the page's commit files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from typing_extensions import override

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.maintenance.health import TableHealth, table_health
from airflow_txnlog.engine.maintenance.layout import layout_summary
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.savepoints import SAVEPOINT_DIR, Savepoint, list_savepoints
from airflow_txnlog.engine.state.history import HistoryPage, history_page
from airflow_txnlog.engine.storage import LOG_DIR, ListedFile, Storage
from airflow_txnlog.engine.validate import flag


@dataclass(frozen=True)
class VersionFacts:
    """What one version's snapshot says, for a page; all of `version`."""

    version: int
    health: TableHealth
    checkpoint_interval: int  # delta.checkpointInterval, as engine.properties reads it
    schema: pa.Schema
    partition_columns: tuple[str, ...]
    protocol: Mapping[str, Any] | None  # the protocol action as the log writes it
    properties: Mapping[str, str]
    layout: Mapping[str, Any]  # engine.maintenance.layout.layout_summary


@dataclass(frozen=True)
class TableOverview:
    """The latest version of a table as a page shows it (see the module docstring)."""

    version: int  # the latest version: every figure below is of it
    history: HistoryPage  # the page asked for, newest first
    savepoints: tuple[Savepoint, ...]  # oldest version first
    facts: VersionFacts | None  # None when not asked for

    def savepoints_at(self, version: int) -> list[str]:
        """The names of the savepoints of `version` (a history entry's pins)."""
        return [s.name for s in self.savepoints if s.version == version]


def table_overview(
    storage: Storage,
    table_of: Callable[[Storage], MaintenanceTable],
    *,
    limit: int = 50,
    before: int | None = None,
    with_facts: bool = True,
    known: VersionFacts | None = None,
) -> TableOverview:
    """The overview of the table at `storage` (see the module docstring). `table_of(storage)` is the
    table on a storage (`Table`: this module sits below it), through which the snapshot and the
    health are read; `known` is used instead when it is of the listed version."""
    flag("with_facts", with_facts)
    if known is not None and not isinstance(known, VersionFacts):
        raise InvalidArgumentError(f"known must be an overview's VersionFacts, got {type(known).__name__}")
    view = _OneRead(storage)
    page = history_page(view, before=before, limit=limit)  # the listing (TableNotFoundError: no log)
    savepoints = tuple(list_savepoints(view))
    facts = None
    if with_facts:
        fresh = known is not None and known.version == page.latest_version
        facts = known if fresh else version_facts(table_of(view))
    return TableOverview(page.latest_version, page, savepoints, facts)


def version_facts(table: MaintenanceTable) -> VersionFacts:
    """The facts of the table's latest snapshot (loaded once: health's; `snapshot()` then finds no
    newer commit in a `_OneRead` view)."""
    health = table_health(table)
    snap = table.snapshot()
    protocol = snap.state.protocol
    return VersionFacts(
        version=snap.version,
        health=health,
        checkpoint_interval=props.checkpoint_interval(snap.metadata.configuration),
        schema=snap.schema,
        partition_columns=tuple(snap.partition_columns),
        protocol=None if protocol is None else protocol.to_wire()["protocol"],
        properties=snap.properties,
        layout=layout_summary(snap),
    )


class _OneRead(Storage):
    """A read-only view of `inner` for one call: `_delta_log/` and `_savepoints/` listed once,
    savepoint records read once; every other read goes to `inner` as it is."""

    _PINNED = (LOG_DIR, SAVEPOINT_DIR)

    def __init__(self, inner: Storage) -> None:
        super().__init__(inner.root, inner.fs, inner.fs_root)
        self.options = inner.options
        self._inner = inner
        self._listings: dict[str, list[ListedFile] | None] = {}  # None: the folder does not exist
        self._records: dict[str, bytes] = {}

    @override
    def full_path(self, key: str) -> str:
        return self._inner.full_path(key)

    @override
    def resolve(self, path: str) -> str:
        return self._inner.resolve(path)

    @override
    def list_dir(self, key_dir: str, start_after: str | None = None) -> list[ListedFile]:
        if key_dir not in self._PINNED:
            return self._inner.list_dir(key_dir, start_after)
        if key_dir not in self._listings:
            try:
                self._listings[key_dir] = self._inner.list_dir(key_dir)
            except FileNotFoundError:
                self._listings[key_dir] = None
        files = self._listings[key_dir]
        if files is None:
            raise FileNotFoundError(key_dir)
        return [f for f in files if start_after is None or f.name > start_after]

    @override
    def read(self, key: str) -> bytes:
        if not key.startswith(f"{SAVEPOINT_DIR}/"):
            return self._inner.read(key)
        if key not in self._records:
            self._records[key] = self._inner.read(key)
        return self._records[key]

    @override
    def read_many(self, keys: list[str]) -> list[bytes]:
        return self._inner.read_many(keys)

    @override
    def exists(self, key: str) -> bool:
        return self._inner.exists(key)

    @override
    def put_if_absent(self, key: str, data: bytes) -> None:
        self._refuse(key)

    @override
    def write(self, key: str, data: bytes) -> None:
        self._refuse(key)

    @override
    def delete(self, key: str) -> None:
        self._refuse(key)

    def _refuse(self, key: str) -> None:
        raise InvalidArgumentError(f"an overview of {self.root!r} only reads; it cannot change {key!r}")
