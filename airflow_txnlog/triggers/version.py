"""Triggers that wait for new versions of a table: one for the deferrable sensor, one for asset watchers.

Both poll the log cheaply through `TxnLogHook`'s async polling methods (`aopen_log`, `apoll_log`,
`alog_version`; the algorithm is in `airflow_txnlog.hooks.log_polling`): each poll lists
`_delta_log/` from the last version seen and reads only the new commit files, so its storage calls
do not grow with the length of the table.

Nothing slow runs on the triggerer's event loop, which Airflow watches (its `block_watchdog` warns
"async thread was blocked" when an `asyncio.sleep(0.1)` takes more than 0.2 s): this module imports
no engine, and the hook's async methods run in a worker thread (`asyncio.to_thread`) the connection
lookup, the first import of the engine's log reader (fsspec: a moment on a cold process) and every
storage call (open, listing, reading commits); reading and writing the cursor file runs in
`asyncio.to_thread` too. A test runs both triggers in a fresh process with asyncio's debug mode and
an audit hook and finds no import, file access or slow step on the loop's thread. The poll imports
only the engine's light modules (`log_reader`, `storage`, `publication_records`: pure Python +
fsspec; the engine's doors load their names lazily), never pyarrow, numpy or sqlglot, whose import's
garbage collections would hold the GIL, the loop's thread included.

With `channel=` (write-audit-publish, docs/airflow.md) both triggers follow a publication channel
instead of the log: a "commit" is then a publication (operation "PUBLISH"), `after_version` and the
cursor are published versions, and `TxnLogVersionTrigger` fires with the channel's newest version.

`TxnLogVersionTrigger` (deferrable `TxnLogVersionSensor`) fires once: the first commit newer than
`after_version` whose operation is in `operations` (commits of other operations are skipped), a
`timeout` event when the deadline passes, or an `error` event. Its only state is in its kwargs: the
baseline, and an absolute `deadline` fixed when the trigger is built, so a triggerer restart neither
moves the baseline nor restarts the clock. After a restart it reads the commits since the baseline
again, which is correct (it looks for the *first* match) and bounded by the commits since then.

`TxnLogVersionEventTrigger` (an `AssetWatcher` trigger) fires for *every* new matching commit and
never stops. A triggerer may restart it from its serialized kwargs at any time, so the cursor (the last
version reported or skipped) must not live in trigger memory -- the Iceberg provider's snapshot
trigger re-reported commits that way. Where the cursor is kept:

1. Airflow's asset state store (AIP-103, Airflow >= 3.3). The triggerer injects
   `self.asset_state_store` into event triggers before `run()` when the trigger watches assets, and
   answers its get/set messages through the API server (`airflow/jobs/triggerer_job_runner.py`).
   It is used when it is present and the trigger watches exactly one asset (the accessor offers no
   public way to address one of several), under the key `txnlog_cursor:<watcher_id>`.
2. Otherwise (older Airflow, several assets on one trigger, tests): a small JSON file
   `_txnlog_cursors/<watcher_id>.json` under the table root, written whole through the engine
   storage's `write` (temp + rename locally, one PUT on object stores). Readers, vacuum and log
   cleanup ignore `_` folders. A cursor found in the file is also read when the state store has none,
   so moving to Airflow 3.3 does not restart the watcher.

Without a stored cursor the watcher starts at `after_version`, or at the latest version when that is
None (history is not replayed), and stores that start at once so a restart cannot skip commits made
in between. The cursor is saved *after* each event is handed to the triggerer (the generator resumes),
so a restart between the two re-reports that one commit rather than losing it (at least once; Airflow
itself may still lose an event it queued in memory if the triggerer dies before writing it).
An event trigger never yields error events (each would become an asset event): errors are logged,
secrets masked, and the next poll retries.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from airflow_txnlog.arguments import channel_name, invalid, operation_names
from airflow_txnlog.hooks.masking import safe_message
from airflow_txnlog.hooks.txnlog import TxnLogHook  # light: no engine at import

if TYPE_CHECKING:
    from airflow_txnlog.engine.spi import Storage
    from airflow_txnlog.hooks.log_polling import Commit, OpenedLog

DEFAULT_POLL_INTERVAL = 60.0
CURSOR_DIR = "_txnlog_cursors"
CURSOR_KEY_PREFIX = "txnlog_cursor:"


def _event(status: str, table_uri: str, **fields: Any) -> TriggerEvent:
    return TriggerEvent({"status": status, "table_uri": table_uri, **fields})  # type: ignore[no-untyped-call]


def _success(table_uri: str, commit: Commit, channel: str | None = None) -> TriggerEvent:
    extra = {} if channel is None else {"channel": channel}
    return _event(
        "success",
        table_uri,
        version=commit.version,
        operation=commit.operation,
        timestamp=commit.timestamp,
        **extra,
    )


class TxnLogVersionTrigger(BaseTrigger):
    """Fires when the table has a commit newer than `after_version` (optionally of given operations).

    :param table_uri: the table (absolute, or relative to the connection's base location).
    :param after_version: the baseline; only commits with a greater version count (-1: any commit).
    :param operations: commitInfo operations that count (case-insensitive, e.g. ``["MERGE", "WRITE"]``);
        None means any. Commits of other operations are skipped.
    :param channel: follow this publication channel instead of the log (fires with the channel's
        newest version after `after_version`); not with `operations`.
    :param txnlog_conn_id: the `txnlog` connection with the storage options.
    :param poll_interval: seconds between polls.
    :param timeout: seconds after which a ``timeout`` event is sent; None waits forever.
    :param deadline: absolute epoch seconds of the timeout; computed from `timeout` when the trigger
        is first built and serialized with it, so that a restarted trigger keeps the same deadline.
    """

    def __init__(
        self,
        *,
        table_uri: str,
        after_version: int,
        operations: list[str] | None = None,
        channel: str | None = None,
        txnlog_conn_id: str | None = TxnLogHook.default_conn_name,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        timeout: float | None = None,
        deadline: float | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.table_uri = table_uri
        self.after_version = int(after_version)
        self.operations = operation_names("operations", operations)
        self.channel = channel_name("channel", channel, self.operations)
        self.txnlog_conn_id = txnlog_conn_id
        self.poll_interval = float(poll_interval)
        self.timeout = float(timeout) if timeout is not None else None
        if deadline is None and self.timeout is not None:
            deadline = time.time() + self.timeout
        self.deadline = deadline

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table_uri": self.table_uri,
                "after_version": self.after_version,
                "operations": self.operations,
                "channel": self.channel,
                "txnlog_conn_id": self.txnlog_conn_id,
                "poll_interval": self.poll_interval,
                "timeout": self.timeout,
                "deadline": self.deadline,
            },
        )

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.time()

    async def _find(self, hook: TxnLogHook, log: OpenedLog, cursor: int) -> tuple[Commit | None, int, bool]:
        """One poll: (first matching commit or None, new cursor, whether the log was caught up)."""
        poll = await hook.apoll_log(log, cursor, operations=self.operations, channel=self.channel)
        if self.channel is not None and poll.commits:
            newest = poll.commits[-1]  # the channel's newest version
            return newest, newest.version, True
        for commit in poll.commits:
            if commit.matched:
                return commit, commit.version, True
            cursor = commit.version
        return None, cursor, poll.caught_up

    async def run(self) -> AsyncIterator[TriggerEvent]:
        opened: OpenedLog | None = None
        try:
            hook = TxnLogHook(txnlog_conn_id=self.txnlog_conn_id)
            opened = await hook.aopen_log(self.table_uri)
            cursor = self.after_version
            while True:
                found, cursor, caught_up = await self._find(hook, opened, cursor)
                if found is not None:
                    yield _success(self.table_uri, found, self.channel)
                    return
                remaining = self._remaining()
                if remaining is not None and remaining <= 0:
                    yield _event(
                        "timeout", self.table_uri, after_version=self.after_version, last_seen=cursor
                    )
                    return
                if caught_up:
                    await asyncio.sleep(
                        self.poll_interval if remaining is None else min(self.poll_interval, remaining)
                    )
        except Exception as exc:  # any failure ends the wait with an error event the sensor raises
            message = safe_message(exc, opened.secrets if opened is not None else ())
            self.log.error("polling %s failed: %s", self.table_uri, message)
            yield _event("error", self.table_uri, message=message)


class _CursorStore(Protocol):
    where: str

    async def load(self) -> int | None: ...

    async def save(self, version: int) -> None: ...


class _FileCursor:
    """`_txnlog_cursors/<watcher_id>.json` under the table root, replaced whole on each save."""

    def __init__(self, storage: Storage, watcher_id: str, table_uri: str) -> None:
        self._storage = storage
        self._table_uri = table_uri
        self.key = f"{CURSOR_DIR}/{watcher_id}.json"
        self.where = f"file {self.key}"

    def _load(self) -> int | None:
        try:
            return int(orjson.loads(self._storage.read(self.key))["version"])
        except FileNotFoundError:
            return None

    def _save(self, version: int) -> None:
        doc = {"version": version, "table_uri": self._table_uri, "updated_at_ms": int(time.time() * 1000)}
        self._storage.write(self.key, orjson.dumps(doc))

    async def load(self) -> int | None:
        return await asyncio.to_thread(self._load)

    async def save(self, version: int) -> None:
        await asyncio.to_thread(self._save, version)


class _AssetStateCursor:
    """The cursor in Airflow's asset state store (the trigger watches exactly one asset).

    Reads an older file cursor when the store has none, so an upgrade does not restart the watcher.
    """

    def __init__(self, accessors: Any, key: str, legacy: _FileCursor) -> None:
        self._accessors = accessors
        self._key = key
        self._legacy = legacy
        self.where = f"asset state store key {key!r}"

    async def load(self) -> int | None:
        value = await self._accessors.aget(self._key)  # ValueError when several assets are watched
        if value is not None:
            return int(value)
        return await self._legacy.load()

    async def save(self, version: int) -> None:
        await self._accessors.aset(self._key, version)


@dataclass
class _Watch:
    """A running watcher: its hook, the table, where its cursor is kept, and the cursor."""

    hook: TxnLogHook
    opened: OpenedLog
    store: _CursorStore
    cursor: int


def default_watcher_id(table_uri: str, operations: list[str] | None, channel: str | None = None) -> str:
    """A stable id from what the watcher watches (two watchers of the same thing share a cursor)."""
    ops = ",".join(sorted(op.strip().upper() for op in operations)) if operations is not None else "*"
    watched = f"{table_uri}|{ops}" if channel is None else f"{table_uri}|{ops}|channel={channel}"
    return hashlib.sha256(watched.encode()).hexdigest()[:16]


class TxnLogVersionEventTrigger(BaseEventTrigger):
    """Fires an event for every new commit of the table (optionally of given operations), forever.

    Use it in an ``AssetWatcher`` to schedule a DAG on each new table version. Each event's payload
    is ``{"status": "success", "version": v, "operation": op, "timestamp": ms, "table_uri": ...}``;
    the asset event Airflow creates carries it as ``extra["payload"]``.

    :param table_uri: the table (absolute, or relative to the connection's base location).
    :param operations: commitInfo operations that fire events (case-insensitive); None means all.
    :param channel: fire for every publication on this channel instead of every commit (payload
        operation "PUBLISH", plus ``"channel"``); not with `operations`.
    :param txnlog_conn_id: the `txnlog` connection with the storage options.
    :param poll_interval: seconds between polls.
    :param after_version: where a watcher with no stored cursor starts; None: the latest version.
    :param watcher_id: names the durable cursor (letters, digits, ``-``, ``_``); default: derived from
        `table_uri` and `operations`.
    """

    def __init__(
        self,
        *,
        table_uri: str,
        operations: list[str] | None = None,
        channel: str | None = None,
        txnlog_conn_id: str | None = TxnLogHook.default_conn_name,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        after_version: int | None = None,
        watcher_id: str | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.table_uri = table_uri
        self.operations = operation_names("operations", operations)
        self.channel = channel_name("channel", channel, self.operations)
        self.txnlog_conn_id = txnlog_conn_id
        self.poll_interval = float(poll_interval)
        self.after_version = int(after_version) if after_version is not None else None
        if watcher_id is not None and (
            not watcher_id or not watcher_id.replace("-", "").replace("_", "").isalnum()
        ):
            raise invalid(f"watcher_id must be letters, digits, '-' or '_', got {watcher_id!r}")
        self.watcher_id = watcher_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table_uri": self.table_uri,
                "operations": self.operations,
                "channel": self.channel,
                "txnlog_conn_id": self.txnlog_conn_id,
                "poll_interval": self.poll_interval,
                "after_version": self.after_version,
                "watcher_id": self.watcher_id,
            },
        )

    async def _load_cursor(self, storage: Storage) -> tuple[_CursorStore, int | None]:
        watcher_id = self.watcher_id or default_watcher_id(self.table_uri, self.operations, self.channel)
        file_cursor = _FileCursor(storage, watcher_id, self.table_uri)
        accessors = getattr(self, "asset_state_store", None)  # injected by Airflow >= 3.3's triggerer
        if accessors is not None:
            store = _AssetStateCursor(accessors, CURSOR_KEY_PREFIX + watcher_id, file_cursor)
            try:
                return store, await store.load()
            except ValueError:
                self.log.info("this trigger watches several assets: keeping its cursor in the table folder")
        return file_cursor, await file_cursor.load()

    async def _start(self) -> _Watch:
        hook = TxnLogHook(txnlog_conn_id=self.txnlog_conn_id)
        opened = await hook.aopen_log(self.table_uri)
        store, cursor = await self._load_cursor(opened.storage)
        if cursor is None:
            if self.after_version is not None:
                cursor = self.after_version
            else:
                cursor = await hook.alog_version(opened, channel=self.channel)
            await self._save_start(hook, opened, store, cursor)
        self.log.info("watching %s after version %s (cursor in %s)", self.table_uri, cursor, store.where)
        return _Watch(hook, opened, store, cursor)

    async def _save_start(self, hook: TxnLogHook, log: OpenedLog, store: _CursorStore, cursor: int) -> None:
        """Make the start durable before the first poll, so a restart cannot skip what follows.

        Written only where a table exists: no files in a folder that may be a typo. A channel with
        nothing published yet starts at -1, saved too (else a restart after the first publication
        would start after it and never report it).
        """
        if cursor >= 0:
            await store.save(cursor)
        elif self.channel is None:
            self.log.warning("no table at %s yet: its first commit will be reported", self.table_uri)
        elif await hook.alog_version(log) >= 0:
            await store.save(cursor)
            self.log.info(
                "nothing published on %r of %s yet: the first publication will be reported",
                self.channel,
                self.table_uri,
            )
        else:
            self.log.warning("no table at %s yet: its first publication will be reported", self.table_uri)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        watch: _Watch | None = None
        while True:
            caught_up = True
            try:
                watch = watch or await self._start()
                poll = await watch.hook.apoll_log(
                    watch.opened, watch.cursor, operations=self.operations, channel=self.channel
                )
                for commit in poll.commits:
                    watch.cursor = commit.version
                    if commit.matched:
                        yield _success(self.table_uri, commit, self.channel)
                        await watch.store.save(commit.version)  # after the hand-off: at least once
                if poll.commits and not poll.commits[-1].matched:
                    await watch.store.save(watch.cursor)  # skipped commits: one save per batch
                caught_up = poll.caught_up
            except Exception as exc:  # keep watching: an error event would become an asset event
                secrets = watch.opened.secrets if watch is not None else ()
                message = safe_message(exc, secrets)
                self.log.warning("polling %s failed, retrying: %s", self.table_uri, message)
            if caught_up:
                await asyncio.sleep(self.poll_interval)
