"""Sensor and triggers with `channel=`: they follow publications (write-audit-publish), not commits.

An unaudited commit never fires them; a publication does, with the channel's version. No metadata DB.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred
from airflow.sdk.module_loading import import_string

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.sensors.version import TxnLogVersionSensor
from airflow_txnlog.triggers.version import (
    TxnLogVersionEventTrigger,
    TxnLogVersionTrigger,
    default_watcher_id,
)
from tests.airflow.version_helpers import append, make_table, memory_uri, next_event

pytestmark = pytest.mark.airflow


@pytest.fixture(params=["file", "memory"])
def uri(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    return str(tmp_path / "table") if request.param == "file" else memory_uri()


def publish(uri: str, version: int | None = None, channel: str = "published") -> int:
    return Table.open(uri).publish(version, channel=channel).version


def test_sensor_waits_for_a_publication_not_for_commits(uri: str) -> None:
    make_table(uri, commits=2)
    publish(uri, 0)
    s = TxnLogVersionSensor(task_id="wait", table_uri=uri, channel="published")
    context: dict[str, Any] = {}
    assert not s.poke(context)  # baseline: the published version 0, though version 1 is newer
    append(uri, [7])  # version 2, unaudited
    assert not s.poke(context)
    append(uri, [8])  # version 3
    publish(uri, 2)
    publish(uri, 3)
    result = s.poke(context)
    assert result.is_done and result.xcom_value == 3  # the channel's newest version


def test_sensor_channel_before_any_publication_waits_for_the_first(uri: str) -> None:
    make_table(uri, commits=3)
    s = TxnLogVersionSensor(task_id="wait", table_uri=uri, channel="audited")
    assert not s.poke({})
    publish(uri, 1, channel="audited")
    assert s.poke({}).xcom_value == 1


def test_sensor_defers_with_the_channel(uri: str) -> None:
    make_table(uri)
    with pytest.raises(TaskDeferred) as deferred:
        TxnLogVersionSensor(task_id="wait", table_uri=uri, channel="published", deferrable=True).execute({})
    trigger = deferred.value.trigger
    assert trigger.channel == "published" and trigger.after_version == -1
    classpath, kwargs = trigger.serialize()
    assert import_string(classpath)(**kwargs).channel == "published"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"channel": "published", "operations": ["MERGE"]}, "cannot be combined"),
        ({"channel": ""}, "invalid publication channel"),
        ({"channel": 3}, "invalid publication channel"),
        ({"channel": "a/b"}, "invalid publication channel"),
        ({"channel": "../x"}, "invalid publication channel"),
    ],
)
def test_bad_channel_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogVersionSensor(task_id="wait", table_uri="/t", **kwargs)
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogVersionTrigger(table_uri="/t", after_version=0, **kwargs)
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogVersionEventTrigger(table_uri="/t", **kwargs)


def test_trigger_fires_on_the_publication_only(uri: str) -> None:
    make_table(uri, commits=2)
    trigger = TxnLogVersionTrigger(
        table_uri=uri, after_version=-1, channel="published", poll_interval=0.05, timeout=30
    )

    async def scenario() -> Any:
        gen = trigger.run()
        task = asyncio.ensure_future(next_event(gen))
        await asyncio.to_thread(append, uri, [5])  # a commit: no event
        await asyncio.sleep(0.3)
        assert not task.done()
        await asyncio.to_thread(publish, uri, 2)
        return await task

    event = asyncio.run(scenario())
    payload = event.payload
    assert (payload["status"], payload["version"], payload["operation"]) == ("success", 2, "PUBLISH")
    assert payload["channel"] == "published" and isinstance(payload["timestamp"], int)


def test_event_trigger_reports_each_publication_not_each_commit(uri: str) -> None:
    make_table(uri, commits=2)
    publish(uri, 1)
    trigger = TxnLogVersionEventTrigger(table_uri=uri, channel="published", poll_interval=0.05)

    async def scenario() -> list[Any]:
        gen = trigger.run()
        events = asyncio.ensure_future(next_event(gen))
        for ids in ([1], [2], [3]):
            await asyncio.to_thread(append, uri, ids)  # versions 2, 3, 4: no events
        await asyncio.sleep(0.4)
        assert not events.done()  # neither history (publication 1) nor commits were reported
        await asyncio.to_thread(publish, uri, 3)
        await asyncio.to_thread(publish, uri, 4)
        first = (await events).payload
        return [first, (await next_event(gen)).payload]

    events = asyncio.run(scenario())
    assert [(e["version"], e["operation"], e["channel"]) for e in events] == [
        (3, "PUBLISH", "published"),
        (4, "PUBLISH", "published"),
    ]
    # A channel watcher keeps its own cursor, apart from a commit watcher of the same table.
    assert default_watcher_id(uri, None, "published") != default_watcher_id(uri, None)
    assert default_watcher_id(uri, None) == default_watcher_id(uri, None, None)


def test_event_trigger_restarted_before_the_first_publication_still_reports_it(uri: str) -> None:
    make_table(uri, commits=2)
    trigger = TxnLogVersionEventTrigger(table_uri=uri, channel="published", poll_interval=0.05)

    async def first_run() -> None:  # starts with nothing published, then the triggerer restarts
        gen = trigger.run()
        with pytest.raises(TimeoutError):
            await next_event(gen, timeout=0.3)

    asyncio.run(first_run())
    publish(uri, 1)  # published while no triggerer ran

    async def second_run() -> Any:
        return (await next_event(trigger.run())).payload

    payload = asyncio.run(second_run())
    assert (payload["version"], payload["operation"]) == (1, "PUBLISH")
