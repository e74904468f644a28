"""TxnLogVersionTrigger and TxnLogVersionEventTrigger: serialize round trip, run() events, durable cursor,
and storage calls per poll that do not grow with the table's length. No metadata DB is needed."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import orjson
import pytest
from airflow.sdk.module_loading import import_string

from airflow_txnlog.engine.storage import storage_for
from airflow_txnlog.hooks import log_polling
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.triggers.version import (
    TxnLogVersionEventTrigger,
    TxnLogVersionTrigger,
    default_watcher_id,
)
from tests.airflow.version_helpers import (
    CountingMemoryFileSystem,
    append,
    local_counting_storage,
    make_table,
    memory_uri,
    next_event,
    raw_commit,
)

pytestmark = pytest.mark.airflow


@pytest.fixture(params=["file", "memory"])
def uri(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    return str(tmp_path / "table") if request.param == "file" else memory_uri()


def rebuild(trigger: Any) -> Any:
    classpath, kwargs = trigger.serialize()
    return import_string(classpath)(**kwargs)


# ------------------------------------------------------------------ serialize


def test_version_trigger_serialize_round_trip() -> None:
    trigger = TxnLogVersionTrigger(
        table_uri="s3://lake/t",
        after_version=7,
        operations=["MERGE"],
        txnlog_conn_id="lake",
        poll_interval=5,
        timeout=60,
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_txnlog.triggers.version.TxnLogVersionTrigger"
    assert kwargs == {
        "table_uri": "s3://lake/t",
        "after_version": 7,
        "operations": ["MERGE"],
        "channel": None,
        "txnlog_conn_id": "lake",
        "poll_interval": 5.0,
        "timeout": 60.0,
        "deadline": pytest.approx(time.time() + 60, abs=5),
    }
    again = rebuild(trigger)
    assert again.serialize() == (classpath, kwargs)  # the deadline survives a restart unchanged
    orjson.dumps(kwargs)  # plain JSON values only


def test_event_trigger_serialize_round_trip() -> None:
    trigger = TxnLogVersionEventTrigger(table_uri="/data/t", operations=["WRITE"], watcher_id="orders-1")
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_txnlog.triggers.version.TxnLogVersionEventTrigger"
    assert kwargs == {
        "table_uri": "/data/t",
        "operations": ["WRITE"],
        "channel": None,
        "txnlog_conn_id": "txnlog_default",
        "poll_interval": 60.0,
        "after_version": None,
        "watcher_id": "orders-1",
    }
    assert rebuild(trigger).serialize() == (classpath, kwargs)


def test_event_trigger_rejects_a_watcher_id_that_is_not_a_file_name() -> None:
    with pytest.raises(ValueError, match="watcher_id"):
        TxnLogVersionEventTrigger(table_uri="/t", watcher_id="../x")


# ------------------------------------------------------------------ TxnLogVersionTrigger.run


def test_run_yields_when_a_version_appears(uri: str) -> None:
    make_table(uri)
    trigger = TxnLogVersionTrigger(table_uri=uri, after_version=0, poll_interval=0.05, timeout=30)

    async def scenario() -> Any:
        gen = trigger.run()
        task = asyncio.ensure_future(next_event(gen))
        await asyncio.sleep(0.3)  # the trigger is polling an unchanged table
        assert not task.done()
        writer = threading.Thread(target=append, args=(uri, [1, 2]))
        writer.start()
        event = await task
        writer.join()
        return event

    event = asyncio.run(scenario())
    assert event.payload == {
        "status": "success",
        "table_uri": uri,
        "version": 1,
        "operation": "WRITE",
        "timestamp": event.payload["timestamp"],
    }
    assert isinstance(event.payload["timestamp"], int)


def test_run_yields_timeout_when_nothing_is_committed(uri: str) -> None:
    make_table(uri, commits=3)
    trigger = TxnLogVersionTrigger(table_uri=uri, after_version=2, poll_interval=0.05, timeout=0.3)
    started = time.monotonic()
    event = asyncio.run(next_event(trigger.run()))
    assert event.payload["status"] == "timeout"
    assert event.payload["after_version"] == 2
    assert 0.25 <= time.monotonic() - started < 5


def test_restarted_trigger_keeps_its_deadline(uri: str) -> None:
    make_table(uri)
    trigger = TxnLogVersionTrigger(table_uri=uri, after_version=0, poll_interval=10, timeout=0.2)
    time.sleep(0.3)  # the triggerer picks it up late, or restarts it
    event = asyncio.run(next_event(rebuild(trigger).run(), timeout=5))
    assert event.payload["status"] == "timeout"


def test_run_reports_the_first_commit_after_the_baseline(uri: str) -> None:
    table = make_table(uri, commits=5)
    raw_commit(table.storage, 5, "DELETE")
    raw_commit(table.storage, 6, "MERGE")
    event = asyncio.run(next_event(TxnLogVersionTrigger(table_uri=uri, after_version=4).run()))
    assert (event.payload["version"], event.payload["operation"]) == (5, "DELETE")


def test_operations_filter_skips_other_commits(uri: str) -> None:
    table = make_table(uri)
    for v in range(1, 151):  # more than one poll's batch of skipped commits
        raw_commit(table.storage, v, "WRITE")
    raw_commit(table.storage, 151, "MERGE")
    raw_commit(table.storage, 152, "DELETE")
    trigger = TxnLogVersionTrigger(
        table_uri=uri, after_version=0, operations=["merge", "delete"], poll_interval=60
    )
    event = asyncio.run(next_event(trigger.run(), timeout=5))  # no poll interval between batches
    assert (event.payload["version"], event.payload["operation"]) == (151, "MERGE")


def test_operations_filter_times_out_when_only_other_operations_commit(uri: str) -> None:
    table = make_table(uri)
    raw_commit(table.storage, 1, "WRITE")
    trigger = TxnLogVersionTrigger(
        table_uri=uri, after_version=0, operations=["MERGE"], poll_interval=0.05, timeout=0.2
    )
    event = asyncio.run(next_event(trigger.run()))
    assert event.payload["status"] == "timeout"
    assert event.payload["last_seen"] == 1  # the cursor moved past the skipped commit


def test_run_yields_error_on_an_unreadable_commit(uri: str) -> None:
    table = make_table(uri)
    table.storage.put_if_absent("_delta_log/00000000000000000001.json", b"{not json\n")
    event = asyncio.run(next_event(TxnLogVersionTrigger(table_uri=uri, after_version=0).run()))
    assert event.payload["status"] == "error"
    assert event.payload["table_uri"] == uri
    assert "JSONDecodeError" in event.payload["message"]


def test_error_messages_never_carry_the_connection_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sup3r-s3cret-value"
    conn = {
        "conn_type": "txnlog",
        "login": "AKIAEXAMPLE",
        "password": secret,
        "extra": {"token": "tok-123456"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_TXNLOG_SECRETS_TEST", orjson.dumps(conn).decode())

    def leaky_backend(uri: str, options: dict[str, Any] | None, **kw: Any) -> Any:
        assert options is not None and options["secret"] == secret  # the connection was read
        raise PermissionError(
            f"denied for key={options['key']} secret={options['secret']} token={options['token']}"
        )

    monkeypatch.setattr(log_polling, "storage_for", leaky_backend)
    trigger = TxnLogVersionTrigger(
        table_uri="s3://bucket/t", after_version=0, txnlog_conn_id="txnlog_secrets_test"
    )
    event = asyncio.run(next_event(trigger.run()))
    assert event.payload["status"] == "error"
    message = event.payload["message"]
    assert secret not in message and "tok-123456" not in message
    assert "PermissionError: denied" in message and "secret=*** token=***" in message


def test_missing_table_is_waited_for(tmp_path: Any) -> None:
    uri = str(tmp_path / "not_yet")
    trigger = TxnLogVersionTrigger(table_uri=uri, after_version=-1, poll_interval=0.05, timeout=30)

    async def scenario() -> Any:
        task = asyncio.ensure_future(next_event(trigger.run()))
        await asyncio.sleep(0.2)
        make_table(uri)
        return await task

    event = asyncio.run(scenario())
    assert (event.payload["status"], event.payload["version"]) == ("success", 0)


# ------------------------------------------------------------------ TxnLogVersionEventTrigger.run


async def _drain(gen: Any, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    return [(await next_event(gen, timeout)).payload for _ in range(count)]


async def _stop_while_idle(gen: Any) -> None:
    """Let the trigger go back to polling, then cancel it (what a triggerer restart does)."""
    with pytest.raises(TimeoutError):
        await next_event(gen, timeout=0.3)


def _cursor_file(uri: str, trigger: TxnLogVersionEventTrigger) -> dict[str, Any]:
    watcher_id = trigger.watcher_id or default_watcher_id(trigger.table_uri, trigger.operations)
    return dict(orjson.loads(storage_for(uri).read(f"_txnlog_cursors/{watcher_id}.json")))


def test_event_trigger_reports_every_new_version_but_not_history(uri: str) -> None:
    make_table(uri, commits=4)
    trigger = TxnLogVersionEventTrigger(table_uri=uri, poll_interval=0.05)

    async def scenario() -> list[dict[str, Any]]:
        gen = trigger.run()
        await _stop_while_idle(gen)  # starts at the latest version (3): nothing to report
        gen = trigger.run()
        first = asyncio.ensure_future(_drain(gen, 3))
        await asyncio.sleep(0.1)
        for ids in ([1], [2], [3]):
            await asyncio.to_thread(append, uri, ids)
        events = await first
        await _stop_while_idle(gen)  # resumed after the last hand-off: its cursor is saved
        return events

    events = asyncio.run(scenario())
    assert [(e["version"], e["operation"], e["status"]) for e in events] == [
        (4, "WRITE", "success"),
        (5, "WRITE", "success"),
        (6, "WRITE", "success"),
    ]
    assert _cursor_file(uri, trigger)["version"] == 6


def test_event_trigger_restart_neither_repeats_nor_misses(uri: str) -> None:
    table = make_table(uri)
    trigger = TxnLogVersionEventTrigger(table_uri=uri, poll_interval=0.05, watcher_id="restart")

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        gen = trigger.run()
        await _stop_while_idle(gen)  # cursor 0 is stored before the first poll
        raw_commit(table.storage, 1)
        raw_commit(table.storage, 2)
        gen = trigger.run()
        before = await _drain(gen, 2)
        await _stop_while_idle(gen)  # the triggerer took both events, then restarted
        raw_commit(table.storage, 3, "DELETE")  # committed while no trigger ran
        after = await _drain(rebuild(trigger).run(), 1)
        return before, after

    before, after = asyncio.run(scenario())
    assert [e["version"] for e in before] == [1, 2]
    assert [(e["version"], e["operation"]) for e in after] == [(3, "DELETE")]


def test_event_trigger_is_at_least_once_when_stopped_at_the_hand_off(uri: str) -> None:
    table = make_table(uri)
    raw_commit(table.storage, 1)
    trigger = TxnLogVersionEventTrigger(table_uri=uri, after_version=0, poll_interval=0.05)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        gen = trigger.run()
        first = await next_event(gen)
        await gen.aclose()  # stopped before it resumed: the cursor was not advanced yet
        again = await next_event(rebuild(trigger).run())
        return first.payload, again.payload

    first, again = asyncio.run(scenario())
    assert first["version"] == again["version"] == 1  # reported twice rather than lost


def test_event_trigger_operations_filter_advances_the_cursor_past_skipped_commits(uri: str) -> None:
    table = make_table(uri)
    trigger = TxnLogVersionEventTrigger(
        table_uri=uri, operations=["MERGE"], after_version=0, poll_interval=0.05
    )
    for v, op in [(1, "WRITE"), (2, "MERGE"), (3, "WRITE"), (4, "OPTIMIZE")]:
        raw_commit(table.storage, v, op)

    async def scenario() -> list[dict[str, Any]]:
        gen = trigger.run()
        events = await _drain(gen, 1)
        await _stop_while_idle(gen)
        return events

    events = asyncio.run(scenario())
    assert [(e["version"], e["operation"]) for e in events] == [(2, "MERGE")]
    assert _cursor_file(uri, trigger)["version"] == 4


def test_event_trigger_without_a_table_writes_nothing_and_reports_its_creation(tmp_path: Any) -> None:
    uri = str(tmp_path / "later")
    trigger = TxnLogVersionEventTrigger(table_uri=uri, poll_interval=0.05)

    async def scenario() -> list[dict[str, Any]]:
        gen = trigger.run()
        await _stop_while_idle(gen)
        assert not (tmp_path / "later").exists()  # a typo in the URI creates no folder
        gen = trigger.run()
        task = asyncio.ensure_future(_drain(gen, 1))
        await asyncio.sleep(0.1)
        make_table(uri)
        return await task

    assert [e["version"] for e in asyncio.run(scenario())] == [0]


class FakeAssetStateStore:
    """What the triggerer injects as `asset_state_store` (AssetStateStoreAccessors), one watched asset."""

    def __init__(self, assets: int = 1) -> None:
        self.values: dict[str, Any] = {}
        self.assets = assets

    def _check(self) -> None:
        if self.assets != 1:
            raise ValueError("Task has 2 concrete inlets and outlets")

    async def aget(self, key: str, default: Any = None) -> Any:
        self._check()
        return self.values.get(key, default)

    async def aset(self, key: str, value: Any) -> None:
        self._check()
        self.values[key] = value


def test_event_trigger_keeps_its_cursor_in_the_asset_state_store(uri: str) -> None:
    table = make_table(uri)
    state = FakeAssetStateStore()

    def attach(trigger: Any) -> Any:
        trigger.asset_state_store = state  # what the triggerer does before run()
        return trigger

    trigger = attach(TxnLogVersionEventTrigger(table_uri=uri, poll_interval=0.05, watcher_id="w1"))

    async def scenario() -> list[dict[str, Any]]:
        gen = trigger.run()
        await _stop_while_idle(gen)
        raw_commit(table.storage, 1)
        gen = trigger.run()
        first = await _drain(gen, 1)
        await _stop_while_idle(gen)
        raw_commit(table.storage, 2)
        gen = attach(rebuild(trigger)).run()
        second = await _drain(gen, 1)
        await _stop_while_idle(gen)
        return first + second

    assert [e["version"] for e in asyncio.run(scenario())] == [1, 2]
    assert state.values == {"txnlog_cursor:w1": 2}
    assert not storage_for(uri).exists("_txnlog_cursors/w1.json")


def test_event_trigger_watching_several_assets_falls_back_to_the_file_cursor(uri: str) -> None:
    table = make_table(uri)
    trigger = TxnLogVersionEventTrigger(table_uri=uri, poll_interval=0.05, watcher_id="w2")
    trigger.asset_state_store = FakeAssetStateStore(assets=2)  # type: ignore[assignment]
    raw_commit(table.storage, 1)

    async def scenario() -> None:
        gen = trigger.run()
        await _stop_while_idle(gen)

    asyncio.run(scenario())
    assert _cursor_file(uri, trigger)["version"] == 1


def test_event_trigger_moving_to_the_state_store_continues_from_the_file_cursor(uri: str) -> None:
    table = make_table(uri)
    storage_for(uri).write("_txnlog_cursors/w3.json", orjson.dumps({"version": 0}))
    raw_commit(table.storage, 1)
    trigger = TxnLogVersionEventTrigger(table_uri=uri, poll_interval=0.05, watcher_id="w3")
    trigger.asset_state_store = FakeAssetStateStore()  # type: ignore[assignment]
    events = asyncio.run(_drain(trigger.run(), 1))
    assert [e["version"] for e in events] == [1]


def test_event_trigger_logs_errors_and_keeps_watching(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    table = make_table(uri)
    table.storage.put_if_absent("_delta_log/00000000000000000001.json", b"{broken\n")
    trigger = TxnLogVersionEventTrigger(table_uri=uri, after_version=0, poll_interval=0.05)

    async def scenario() -> None:
        gen = trigger.run()
        await _stop_while_idle(gen)  # no error event: it would become an asset event

    asyncio.run(scenario())
    out = capsys.readouterr().out  # Airflow logs through structlog
    assert "failed, retrying: " in out and "JSONDecodeError" in out  # raw, or inside LogCorruptedError


# ------------------------------------------------------------------ storage calls per poll


def _trigger_calls(uri: str, poll_uri: str, version: int, counted: Any) -> dict[str, int]:
    """Storage calls of a whole `TxnLogVersionTrigger` run that finds the new commit `version`."""
    raw_commit(storage_for(uri), version, "MERGE")
    counted.clear()
    trigger = TxnLogVersionTrigger(table_uri=poll_uri, after_version=version - 1, operations=["MERGE"])
    event = asyncio.run(next_event(trigger.run()))
    assert event.payload["version"] == version
    return dict(counted)


def _event_trigger_calls(uri: str, poll_uri: str, version: int, counted: Any) -> dict[str, int]:
    """Storage calls of an event trigger from its start to the event for the new commit `version`
    (cursor load and save included)."""
    raw_commit(storage_for(uri), version)
    trigger = TxnLogVersionEventTrigger(table_uri=poll_uri, after_version=version - 1, poll_interval=60)

    async def first_event() -> dict[str, int]:
        counted.clear()
        gen = trigger.run()
        payload = (await next_event(gen)).payload
        await gen.aclose()
        assert payload["version"] == version
        return dict(counted)

    return asyncio.run(first_event())


def _idle_poll_calls(poll_uri: str, latest: int, counted: Any) -> dict[str, int]:
    hook = TxnLogHook(txnlog_conn_id=None)
    log = hook.open_log(poll_uri)
    counted.clear()
    assert hook.poll_log(log, latest).commits == []
    return dict(counted)


def _measure(uri: str, poll_uri: str, commits: int, counted: Any) -> dict[str, dict[str, int]]:
    make_table(uri, commits)  # versions 0 .. commits-1
    return {
        "trigger": _trigger_calls(uri, poll_uri, commits, counted),
        "event trigger": _event_trigger_calls(uri, poll_uri, commits + 1, counted),
        "idle poll": _idle_poll_calls(poll_uri, commits + 1, counted),
    }


@pytest.mark.slow
def test_storage_calls_per_poll_do_not_grow_with_the_table_fsspec() -> None:
    """Through a counting fsspec filesystem (`countmem://`, same store as `memory://`)."""
    counted = CountingMemoryFileSystem.calls
    at = {}
    for n in (10, 1000):
        uri = memory_uri()
        at[n] = _measure(uri, uri.replace("memory://", "countmem://"), n, counted)
    assert at[10] == at[1000]
    assert at[1000]["idle poll"] == {"ls": 1}
    assert at[1000]["trigger"]["ls"] == 1


@pytest.mark.slow
def test_storage_calls_per_poll_do_not_grow_with_the_table_local(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a counting storage wrapper on the local backend (whose listing is one scandir)."""
    wrappers: dict[str, Any] = {}

    def counting_storage_for(uri: str, options: Any = None, **kw: Any) -> Any:
        return wrappers.setdefault(uri, local_counting_storage(uri))

    monkeypatch.setattr(log_polling, "storage_for", counting_storage_for)
    at = {}
    for n in (10, 1000):
        uri = str(tmp_path / f"t{n}")
        at[n] = _measure(uri, uri, n, counting_storage_for(uri).calls)
    assert at[10] == at[1000]
    assert at[1000]["idle poll"] == {"list_dir": 1}
    assert at[1000]["trigger"] == {"list_dir": 1, "read_many": 1}
    assert at[1000]["event trigger"] == {"read": 1, "write": 1, "list_dir": 1, "read_many": 1}
