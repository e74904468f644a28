"""`TxnLogReleaseTrigger`: wait for a new release in a release log (engine.releases).

A release log is a folder of small records `releases/<sequence>.json` created with put-if-absent;
sequences start at 0 and have no gaps, and the current release is the greatest
(engine.maintenance.release_records). Waiting for "a release newer than `after_sequence`" is therefore
one listing of `releases/` from that sequence per poll, and one read of the newest record when the
listing finds any: the cost of a poll does not grow with the log's length.

The trigger (deferrable `TxnLogReleaseSensor`) fires once, with the *newest* release after
`after_sequence` (the one readers that follow the log now use; releases published in between are in
the log's history), a `timeout` event when its deadline passes, or an `error` event (its message with
the connection's secrets masked). Its only state is in its kwargs: the baseline and an absolute
`deadline` fixed when it is first built, so a triggerer restart neither moves the baseline nor
restarts the clock.

Nothing slow runs on the triggerer's event loop (see triggers/version.py): this module imports no
engine module, and the connection lookup, the first import of the engine's light release records
(orjson + the storage layer, never pyarrow) and every storage call run in `asyncio.to_thread`. The
same helpers (`open_release_log`, `newest_release`, `current_sequence`) serve the sensor's pokes.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_txnlog._shown import shown
from airflow_txnlog.arguments import invalid
from airflow_txnlog.hooks.masking import safe_message
from airflow_txnlog.hooks.txnlog import TxnLogHook, secret_values  # light: no engine at import

if TYPE_CHECKING:
    from airflow_txnlog.engine.spi import Storage

DEFAULT_POLL_INTERVAL = 60.0
_INTEGER = re.compile(r"^-?[0-9]+$")


def sequence_number(
    name: str, value: object, *, minimum: int = 0, what: str = "a release sequence"
) -> int | None:
    """A release sequence (or `what`): None, or an integer >= `minimum` (a rendered template gives
    text such as "12"; "None" and "" render from a None). `InvalidArgumentError` otherwise."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _INTEGER.match(value.strip()):
        number = int(value.strip())
    if number is None or number < minimum:
        raise invalid(f"{name} must be None or {what} (an integer >= {minimum}); got {shown(value)}")
    return number


@dataclass(frozen=True)
class OpenedReleaseLog:
    """A release log's storage, and the connection's secrets to mask in messages."""

    uri: str
    storage: Storage
    secrets: tuple[str, ...]


def open_release_log(txnlog_conn_id: str | None, release_log_uri: str) -> OpenedReleaseLog:
    """The log's storage through the connection (blocking: the connection lookup and the import of
    the engine's storage layer; touches no file)."""
    from airflow_txnlog.engine.spi import storage_for  # noqa: PLC0415 - light, but not on the loop

    hook = TxnLogHook(txnlog_conn_id=txnlog_conn_id)
    uri = hook.resolve_uri(release_log_uri)
    options = hook.storage_options_for(uri)
    return OpenedReleaseLog(uri, storage_for(uri, options or None), secret_values(options))


def newest_release(storage: Storage, after: int) -> dict[str, Any] | None:
    """{"sequence", "versions", "kind", "note"} of the newest release after `after`, or None (one
    listing; one read when there is one)."""
    from airflow_txnlog.engine.spi import release_records  # noqa: PLC0415 - light

    found = release_records.sequences(storage, after=after)
    if not found:
        return None
    record = release_records.read_release(storage, found[-1], cls=release_records.ReleaseRecord)
    return {
        "sequence": record.sequence,
        "versions": record.versions,
        "kind": record.kind,
        "note": record.note,
    }


def current_sequence(storage: Storage) -> int:
    """The log's current sequence, -1 before its first release (or before the log exists)."""
    from airflow_txnlog.engine.spi import release_records  # noqa: PLC0415 - light

    found = release_records.sequences(storage)
    return found[-1] if found else -1


def _event(status: str, release_log_uri: str, **fields: Any) -> TriggerEvent:
    payload = {"status": status, "release_log_uri": release_log_uri, **fields}
    return TriggerEvent(payload)  # type: ignore[no-untyped-call]


class TxnLogReleaseTrigger(BaseTrigger):
    """Fires when the release log has a release newer than `after_sequence` (see the module docstring).

    :param release_log_uri: the release log (absolute, or relative to the connection's base location).
    :param after_sequence: the baseline; only greater sequences count (-1: any release).
    :param poll_interval: seconds between polls.
    :param txnlog_conn_id: the `txnlog` connection with the storage options.
    :param timeout: seconds after which a ``timeout`` event is sent; None waits forever.
    :param deadline: absolute epoch seconds of the timeout, computed from `timeout` when the trigger is
        first built and serialized with it (a restarted trigger keeps it).
    The success event: ``{"status": "success", "release_log_uri", "sequence", "versions", "kind",
    "note"}``.
    """

    def __init__(
        self,
        *,
        release_log_uri: str,
        after_sequence: int,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        txnlog_conn_id: str | None = TxnLogHook.default_conn_name,
        timeout: float | None = None,
        deadline: float | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        baseline = sequence_number("after_sequence", after_sequence, minimum=-1)
        if baseline is None:
            raise invalid("after_sequence must be a release sequence (-1: any release), not None")
        self.release_log_uri = release_log_uri
        self.after_sequence = baseline
        self.poll_interval = float(poll_interval)
        self.txnlog_conn_id = txnlog_conn_id
        self.timeout = float(timeout) if timeout is not None else None
        if deadline is None and self.timeout is not None:
            deadline = time.time() + self.timeout
        self.deadline = deadline

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "release_log_uri": self.release_log_uri,
                "after_sequence": self.after_sequence,
                "poll_interval": self.poll_interval,
                "txnlog_conn_id": self.txnlog_conn_id,
                "timeout": self.timeout,
                "deadline": self.deadline,
            },
        )

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.time()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        opened: OpenedReleaseLog | None = None
        try:
            opened = await asyncio.to_thread(open_release_log, self.txnlog_conn_id, self.release_log_uri)
            while True:
                found = await asyncio.to_thread(newest_release, opened.storage, self.after_sequence)
                if found is not None:
                    yield _event("success", self.release_log_uri, **found)
                    return
                remaining = self._remaining()
                if remaining is not None and remaining <= 0:
                    yield _event("timeout", self.release_log_uri, after_sequence=self.after_sequence)
                    return
                pause = self.poll_interval if remaining is None else min(self.poll_interval, remaining)
                await asyncio.sleep(pause)
        except Exception as exc:  # any failure ends the wait with an error event the sensor raises
            message = safe_message(exc, opened.secrets if opened is not None else ())
            self.log.error("polling release log %s failed: %s", self.release_log_uri, message)
            yield _event("error", self.release_log_uri, message=message)
