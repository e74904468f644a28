"""TxnLogReleaseSensor and TxnLogReleaseTrigger: baselines, pokes, deferral, the trigger's serialize
round trip and its events, on a real release log in tmp_path (no DB)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout, TaskDeferred
from airflow.sdk.module_loading import import_string

from airflow_txnlog.engine import InvalidArgumentError, ReleaseNotFoundError, Releases, Table
from airflow_txnlog.engine.spi import release_records
from airflow_txnlog.sensors.release import BASELINE_KEY, TxnLogReleaseSensor
from airflow_txnlog.triggers import release as release_trigger
from airflow_txnlog.triggers.release import TxnLogReleaseTrigger
from tests.airflow.version_helpers import next_event
from tests.conftest import SCHEMA, rows

pytestmark = pytest.mark.airflow


class Lake:
    """One table and its release log (not created yet)."""

    def __init__(self, root: Path) -> None:
        self.table = Table.create(str(root / "orders"), schema=SCHEMA)
        self.log = str(root / "_releases" / "nightly")

    def publish(self) -> int:
        """A new version of the table, released: the new release's sequence."""
        version = Table.open(self.table.uri).write(rows([1]))
        try:
            log = Releases.open(self.log)
        except ReleaseNotFoundError:
            log = Releases.create(self.log)
        return log.publish({self.table.uri: version}).sequence


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path)


class FakeTaskStateStore:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value


def sensor(lake: Lake, **kwargs: Any) -> TxnLogReleaseSensor:
    return TxnLogReleaseSensor(task_id="wait_for_release", release_log_uri=lake.log, **kwargs)


def rebuild(trigger: Any) -> Any:
    classpath, kwargs = trigger.serialize()
    return import_string(classpath)(**kwargs)


# ------------------------------------------------------------------ the sensor


def test_template_fields_and_defaults(lake: Lake) -> None:
    s = sensor(lake)
    assert s.template_fields == ("release_log_uri", "txnlog_conn_id", "after_sequence")
    assert (s.after_sequence, s.txnlog_conn_id, s.deferrable) == (None, "txnlog_default", True)


@pytest.mark.parametrize("bad", [-2, "one", 1.5, True])
def test_a_bad_baseline_is_refused_when_built(lake: Lake, bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match="after_sequence must be None or a release sequence"):
        sensor(lake, after_sequence=bad)


def test_poke_waits_for_the_next_release_after_the_current_one(lake: Lake) -> None:
    lake.publish()  # release 0: the baseline
    s = sensor(lake, deferrable=False)
    assert not s.poke({})
    second = lake.publish()
    result = s.poke({})
    assert result.is_done and result.xcom_value == {"sequence": second, "versions": {lake.table.uri: 2}}


def test_a_log_that_does_not_exist_yet_is_waited_for(lake: Lake) -> None:
    s = sensor(lake, deferrable=False)
    assert not s.poke({})  # baseline -1: the first release fires it
    assert lake.publish() == 0
    assert s.poke({}).xcom_value["sequence"] == 0


def test_the_newest_release_after_an_explicit_baseline(lake: Lake) -> None:
    for _ in range(3):
        lake.publish()
    assert sensor(lake, after_sequence="0").poke({}).xcom_value["sequence"] == 2  # rendered text


def test_reschedule_mode_keeps_the_baseline_in_the_task_state_store(lake: Lake) -> None:
    lake.publish()
    store = FakeTaskStateStore()
    assert not sensor(lake, mode="reschedule", deferrable=False).poke({"task_state_store": store})
    assert store.values == {BASELINE_KEY: 0}
    lake.publish()
    assert sensor(lake, mode="reschedule", deferrable=False).poke({"task_state_store": store})


def test_reschedule_mode_without_a_state_store_needs_after_sequence(lake: Lake) -> None:
    with pytest.raises(AirflowException, match="needs after_sequence"):
        sensor(lake, mode="reschedule", deferrable=False).poke({})


def test_deferrable_execute_defers_to_the_release_trigger(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", '{"conn_type": "txnlog"}')
    lake.publish()
    s = sensor(lake, txnlog_conn_id="lake", poke_interval=7, timeout=120)
    with pytest.raises(TaskDeferred) as deferred:
        s.execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, TxnLogReleaseTrigger) and deferred.value.method_name == "execute_complete"
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_txnlog.triggers.release.TxnLogReleaseTrigger"
    assert {k: v for k, v in kwargs.items() if k != "deadline"} == {
        "release_log_uri": lake.log,
        "after_sequence": 0,
        "poll_interval": 7.0,
        "txnlog_conn_id": "lake",
        "timeout": 120.0,
    }


def test_deferrable_execute_returns_at_once_when_a_release_is_there(lake: Lake) -> None:
    lake.publish()
    assert sensor(lake, after_sequence=-1).execute({}) == {"sequence": 0, "versions": {lake.table.uri: 1}}


def test_execute_complete() -> None:
    s = TxnLogReleaseSensor(task_id="w", release_log_uri="/log", timeout=5)
    event = {"status": "success", "sequence": 4, "versions": {"/t": 9}, "kind": "publish"}
    assert s.execute_complete({}, event) == {"sequence": 4, "versions": {"/t": 9}}
    with pytest.raises(AirflowSensorTimeout, match="no release of /log after sequence 3"):
        s.execute_complete({}, {"status": "timeout", "after_sequence": 3})
    with pytest.raises(AirflowException, match="boom"):
        s.execute_complete({}, {"status": "error", "message": "boom"})


# ------------------------------------------------------------------ the trigger


def test_trigger_serialize_round_trip() -> None:
    trigger = TxnLogReleaseTrigger(
        release_log_uri="s3://lake/_releases/nightly", after_sequence=7, poll_interval=5,
        txnlog_conn_id="lake", timeout=60,
    )  # fmt: skip
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_txnlog.triggers.release.TxnLogReleaseTrigger"
    assert kwargs == {
        "release_log_uri": "s3://lake/_releases/nightly",
        "after_sequence": 7,
        "poll_interval": 5.0,
        "txnlog_conn_id": "lake",
        "timeout": 60.0,
        "deadline": pytest.approx(time.time() + 60, abs=5),
    }
    assert rebuild(trigger).serialize() == (classpath, kwargs)  # the deadline survives a restart
    orjson.dumps(kwargs)  # plain JSON values only
    with pytest.raises(InvalidArgumentError, match="not None"):
        TxnLogReleaseTrigger(release_log_uri="/log", after_sequence=None)  # type: ignore[arg-type]


def test_trigger_fires_on_a_new_release(lake: Lake) -> None:
    lake.publish()
    trigger = rebuild(TxnLogReleaseTrigger(release_log_uri=lake.log, after_sequence=0, poll_interval=0.05))

    async def scenario() -> Any:
        task = asyncio.ensure_future(next_event(trigger.run()))
        await asyncio.sleep(0.3)  # polling a log with no new release
        assert not task.done()
        publisher = threading.Thread(target=lake.publish)
        publisher.start()
        event = await task
        publisher.join()
        return event

    event = asyncio.run(scenario())
    assert event.payload == {
        "status": "success",
        "release_log_uri": lake.log,
        "sequence": 1,
        "versions": {lake.table.uri: 2},
        "kind": "publish",
        "note": None,
    }


def test_trigger_times_out(lake: Lake) -> None:
    trigger = TxnLogReleaseTrigger(release_log_uri=lake.log, after_sequence=-1, poll_interval=10, timeout=0.2)
    time.sleep(0.3)  # picked up late, or restarted: the deadline stays
    event = asyncio.run(next_event(rebuild(trigger).run(), timeout=5))
    assert event.payload == {"status": "timeout", "release_log_uri": lake.log, "after_sequence": -1}


def test_trigger_reports_an_unreadable_record_as_an_error(lake: Lake) -> None:
    storage = release_trigger.open_release_log(None, lake.log).storage
    storage.put_if_absent(release_records.record_key(0), b"{not json")
    event = asyncio.run(next_event(TxnLogReleaseTrigger(release_log_uri=lake.log, after_sequence=-1).run()))
    assert event.payload["status"] == "error" and "unreadable" in event.payload["message"]


def test_trigger_masks_the_connections_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sup3r-s3cret-value"
    conn = {"conn_type": "txnlog", "login": "AKIAEXAMPLE", "password": secret}
    monkeypatch.setenv("AIRFLOW_CONN_RELEASE_SECRETS", orjson.dumps(conn).decode())

    def leaky(storage: Any, after: int) -> Any:
        raise PermissionError(f"denied with secret={secret}")

    monkeypatch.setattr(release_trigger, "newest_release", leaky)
    trigger = TxnLogReleaseTrigger(
        release_log_uri="s3://bucket/log", after_sequence=0, txnlog_conn_id="release_secrets"
    )
    event = asyncio.run(next_event(trigger.run()))
    assert event.payload["status"] == "error" and secret not in event.payload["message"]
    assert "secret=***" in event.payload["message"]
