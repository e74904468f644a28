"""TxnLogVersionSensor: poke, baselines across reschedules, defer and execute_complete; no DB."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout, TaskDeferred

from airflow_txnlog.sensors.version import BASELINE_KEY, TxnLogVersionSensor
from airflow_txnlog.triggers.version import TxnLogVersionTrigger
from tests.airflow.version_helpers import append, make_table, memory_uri, raw_commit

pytestmark = pytest.mark.airflow


@pytest.fixture(params=["file", "memory"])
def uri(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    return str(tmp_path / "table") if request.param == "file" else memory_uri()


class FakeTaskStateStore:
    """`context["task_state_store"]` (Airflow >= 3.3): survives reschedules and retries of the task."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value


def sensor(uri: str, **kwargs: Any) -> TxnLogVersionSensor:
    return TxnLogVersionSensor(task_id="wait_for_version", table_uri=uri, **kwargs)


def test_template_fields_and_defaults() -> None:
    s = sensor("/t")
    assert s.template_fields == ("table_uri", "txnlog_conn_id", "after_version", "operations", "channel")
    assert (s.after_version, s.operations, s.txnlog_conn_id, s.deferrable) == (
        None,
        None,
        "txnlog_default",
        False,
    )


def test_poke_false_then_true_after_a_commit(uri: str) -> None:
    make_table(uri, commits=3)
    s = sensor(uri)
    context: dict[str, Any] = {}
    assert not s.poke(context)  # the baseline is the latest version (2)
    assert not s.poke(context)
    version = append(uri, [1])
    result = s.poke(context)
    assert result.is_done and result.xcom_value == version == 3


def test_poke_with_an_explicit_baseline(uri: str) -> None:
    make_table(uri, commits=4)
    assert sensor(uri, after_version=1).poke({}).xcom_value == 2
    assert not sensor(uri, after_version=3).poke({})
    assert sensor(uri, after_version="1").poke({}).xcom_value == 2  # a rendered template is a string


def test_poke_filters_operations(uri: str) -> None:
    table = make_table(uri)
    s = sensor(uri, after_version=0, operations=["merge"])
    raw_commit(table.storage, 1, "WRITE")
    assert not s.poke({})
    raw_commit(table.storage, 2, "MERGE")
    assert s.poke({}).xcom_value == 2


def test_poke_mode_execute_returns_the_version(uri: str) -> None:
    make_table(uri, commits=2)
    assert sensor(uri, after_version=0, poke_interval=0.01, timeout=5).execute({}) == 1


def test_reschedule_mode_keeps_the_baseline_in_the_task_state_store(uri: str) -> None:
    make_table(uri, commits=2)
    store = FakeTaskStateStore()
    assert not sensor(uri, mode="reschedule").poke({"task_state_store": store})
    assert store.values == {BASELINE_KEY: 1}
    append(uri, [1])
    # The next poke is a new task execution (a fresh operator): the baseline is still 1.
    assert sensor(uri, mode="reschedule").poke({"task_state_store": store}).xcom_value == 2


def test_reschedule_mode_without_a_state_store_needs_after_version(uri: str) -> None:
    make_table(uri)
    with pytest.raises(AirflowException, match="needs after_version"):
        sensor(uri, mode="reschedule").poke({})
    assert not sensor(uri, mode="reschedule", after_version=0).poke({})


def test_deferrable_execute_defers_to_the_version_trigger(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", '{"conn_type": "txnlog"}')
    make_table(uri, commits=3)
    s = sensor(
        uri, deferrable=True, operations=["MERGE"], txnlog_conn_id="lake", poke_interval=7, timeout=120
    )
    with pytest.raises(TaskDeferred) as deferred:
        s.execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, TxnLogVersionTrigger)
    assert deferred.value.method_name == "execute_complete"
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_txnlog.triggers.version.TxnLogVersionTrigger"
    assert {k: v for k, v in kwargs.items() if k != "deadline"} == {
        "table_uri": uri,
        "after_version": 2,
        "operations": ["MERGE"],
        "channel": None,
        "txnlog_conn_id": "lake",
        "poll_interval": 7.0,
        "timeout": 120.0,
    }


def test_deferrable_execute_returns_at_once_when_the_version_is_there(uri: str) -> None:
    make_table(uri, commits=3)
    assert sensor(uri, deferrable=True, after_version=1).execute({}) == 2


def test_deferrable_uses_poll_interval_when_given(uri: str) -> None:
    make_table(uri)
    with pytest.raises(TaskDeferred) as deferred:
        sensor(uri, deferrable=True, poll_interval=2.5).execute({})
    assert deferred.value.trigger.poll_interval == 2.5


def test_execute_complete_success() -> None:
    event = {"status": "success", "version": 12, "operation": "MERGE", "table_uri": "/t"}
    assert sensor("/t").execute_complete({}, event) == 12


def test_execute_complete_timeout() -> None:
    event = {"status": "timeout", "after_version": 3, "last_seen": 5, "table_uri": "/t"}
    with pytest.raises(AirflowSensorTimeout, match="after version 3"):
        sensor("/t", timeout=60).execute_complete({}, event)


def test_execute_complete_error() -> None:
    event = {"status": "error", "message": "StorageError: denied", "table_uri": "/t"}
    with pytest.raises(AirflowException, match="StorageError: denied"):
        sensor("/t").execute_complete({}, event)
    with pytest.raises(AirflowException, match="no event"):
        sensor("/t").execute_complete({}, None)


def test_importing_the_sensor_loads_neither_pyspark_nor_the_engine() -> None:
    code = textwrap.dedent(
        """
        import sys
        import airflow_txnlog.sensors.version, airflow_txnlog.triggers.version
        heavy = [m for m in ("pyspark", "pyarrow", "airflow_txnlog.engine") if m in sys.modules]
        print(heavy)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"
