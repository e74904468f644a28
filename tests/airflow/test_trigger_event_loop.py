"""The version triggers never block the triggerer's event loop, not even on their first run.

Airflow's triggerer runs every trigger on one asyncio loop and watches it (`block_watchdog` in
`airflow/jobs/triggerer_job_runner.py`): a task sleeps 0.1 s and logs "Triggerer's async thread was
blocked for N seconds" when the sleep took longer than `[triggerer] blocked_main_thread_warning_threshold`
(0.2 s); its message points at PYTHONASYNCIODEBUG, whose slow-callback check times every step the loop
runs (`Handle._run`). A deployment saw the warning when a version trigger first imported the engine
(pyarrow, fsspec) on the loop. Since then a trigger process never loads pyarrow at all: the polls
use only the engine's light modules (checked below), whose import is quick.

Each trigger runs here in a fresh Python process (this file run as a script) that has loaded what a
triggerer has (Airflow) but not the engine -- the triggerer's cold start. The child builds the trigger
as the triggerer does (`import_string(classpath)(**kwargs)` on the loop) and runs it on a loop in
asyncio's debug mode, with:

* an audit hook (`sys.addaudithook`) recording every engine or fsspec import and every file open or
  directory listing under the test folder made on the loop's thread;
* asyncio's own slow-callback check, with each step also timed in the loop thread's CPU time
  (`time.thread_time`: a step that imports pyarrow spends ~0.5 s of CPU);
* a copy of Airflow's watchdog.
The assertions are on what ran on the loop's thread (imports, file access), never on time: the
CPU-time steps over 0.1 s, asyncio's wall-clock warnings and the watchdog's figures are reported in
the test summary.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.airflow

SLOW_STEP = 0.1  # seconds: asyncio's debug mode reports every loop step slower than this
WATCHDOG_THRESHOLD = 0.2  # Airflow's default [triggerer] blocked_main_thread_warning_threshold
ENGINE_MODULES = ("pyarrow", "airflow_txnlog.engine", "airflow_txnlog.hooks.log_polling")  # not loaded yet
AUDITED_IMPORTS = (*ENGINE_MODULES, "fsspec")  # Airflow loads fsspec itself, but not its backends
IO_EVENTS = ("open", "os.listdir", "os.scandir", "os.rename", "os.replace", "os.remove")
FIGURES_KEY = "reliability_figures"  # printed in the test summary by tests/conftest.py


class _LoopThreadAudit:
    """Audit hook: engine imports and file access under `root` made on the loop's thread."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.loop_thread: int | None = None
        self.found: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.loop_thread is None or threading.get_ident() != self.loop_thread:
            return
        if event == "import" and str(args[0]).startswith(AUDITED_IMPORTS):
            self.found.append(f"import {args[0]}")
        elif event in IO_EVENTS and args and str(args[0]).startswith(self.root):
            self.found.append(f"{event} {args[0]}")


class _SlowCallbacks(logging.Handler):
    """Collects asyncio's debug-mode "Executing <...> took N seconds" warnings (wall clock)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Executing"):
            self.messages.append(message)


def _time_steps_in_cpu(slow_steps: list[str]) -> None:
    """Times each loop step (`Handle._run`, what debug mode times) in the loop thread's CPU time."""
    run = asyncio.events.Handle._run

    def timed(handle: asyncio.events.Handle) -> None:
        start = time.thread_time()
        run(handle)
        spent = time.thread_time() - start
        if spent > SLOW_STEP:
            slow_steps.append(f"{handle!r} used {spent:.3f} s of CPU")

    asyncio.events.Handle._run = timed  # type: ignore[method-assign]


async def _watchdog(blocked: list[float]) -> None:
    """Airflow's `block_watchdog`: a 0.1 s sleep that took longer than the threshold means a block."""
    while True:
        last_run = time.monotonic()
        await asyncio.sleep(0.1)
        elapsed = time.monotonic() - last_run
        if elapsed > WATCHDOG_THRESHOLD:
            blocked.append(round(elapsed, 3))


async def _run_trigger(spec: dict[str, Any]) -> list[Any]:
    """Build the trigger as the triggerer does, collect its events, then let it poll `idle` s more."""
    from airflow.sdk.module_loading import import_string  # noqa: PLC0415 - loaded before the loop starts

    trigger = import_string(spec["classpath"])(**spec["kwargs"])
    gen = trigger.run()
    payloads = [(await asyncio.wait_for(anext(gen), 60)).payload for _ in range(spec["events"])]
    if spec["idle"]:
        with pytest.raises(TimeoutError):  # an event trigger keeps polling (and saving its cursor)
            await asyncio.wait_for(anext(gen), spec["idle"])
    await gen.aclose()
    return payloads


async def _with_watchdog(spec: dict[str, Any], blocked: list[float]) -> list[Any]:
    watchdog = asyncio.ensure_future(_watchdog(blocked))
    await asyncio.sleep(0)
    try:
        return await _run_trigger(spec)
    finally:
        watchdog.cancel()


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs in the fresh process: the trigger on a debug-mode loop, under the audit hook."""
    import airflow.sdk.module_loading  # noqa: PLC0415 - what a triggerer has loaded before any trigger
    import airflow.triggers.base  # noqa: F401, PLC0415 - the base classes of every trigger

    cold = [m for m in ENGINE_MODULES if m in sys.modules]
    audit = _LoopThreadAudit(spec["root"])
    sys.addaudithook(audit)
    slow = _SlowCallbacks()
    logging.getLogger("asyncio").addHandler(slow)
    slow_steps: list[str] = []
    _time_steps_in_cpu(slow_steps)
    blocked: list[float] = []
    loop = asyncio.new_event_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = SLOW_STEP
    audit.loop_thread = threading.get_ident()  # the loop runs on this thread
    try:
        payloads = loop.run_until_complete(_with_watchdog(spec, blocked))
    finally:
        audit.loop_thread = None
        loop.close()
    return {
        "engine_loaded_before_run": cold,
        "engine_loaded_after_run": [m for m in ENGINE_MODULES if m in sys.modules],
        "payloads": payloads,
        "loop_thread_io": audit.found,
        "slow_steps_cpu": slow_steps,
        "slow_callbacks_wall": slow.messages,
        "watchdog_blocked_wall": blocked,
    }


def _run_child(request: pytest.FixtureRequest, spec: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, json.dumps(spec)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONASYNCIODEBUG": "1"},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    figures = {
        "title": f"event loop, {request.node.name}",
        "asyncio_slow_callbacks_wall": len(result["slow_callbacks_wall"]),
        "watchdog_blocked_wall_s": result["watchdog_blocked_wall"],
        "loop_steps_over_0.1s_cpu": len(result["slow_steps_cpu"]),
    }
    request.node.user_properties.append((FIGURES_KEY, figures))
    return result


def _assert_nothing_ran_on_the_loop(result: dict[str, Any]) -> None:
    assert result["engine_loaded_before_run"] == []  # a cold process, like a fresh triggerer
    loaded = result["engine_loaded_after_run"]
    assert "airflow_txnlog.hooks.log_polling" in loaded  # the hook did load the engine's log reader...
    assert "pyarrow" not in loaded  # ...only its light part (the engine package loads names lazily)...
    assert result["loop_thread_io"] == []  # ...but not on the loop's thread, and read no file there


def _table(tmp_path: Path, commits: int) -> str:
    from tests.airflow.version_helpers import make_table  # noqa: PLC0415 - the child must not load it

    table = str(tmp_path / "table")
    make_table(table, commits=commits)
    return table


VERSION_TRIGGER = "airflow_txnlog.triggers.version.TxnLogVersionTrigger"
EVENT_TRIGGER = "airflow_txnlog.triggers.version.TxnLogVersionEventTrigger"


def test_version_trigger_runs_nothing_slow_on_the_event_loop(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    table = _table(tmp_path, commits=3)
    kwargs = {"table_uri": table, "after_version": 0, "operations": ["write"], "poll_interval": 0.05}
    spec = {"root": str(tmp_path), "classpath": VERSION_TRIGGER, "kwargs": kwargs, "events": 1, "idle": 0}
    result = _run_child(request, spec)
    assert [(p["status"], p["version"], p["operation"]) for p in result["payloads"]] == [
        ("success", 1, "WRITE")
    ]
    _assert_nothing_ran_on_the_loop(result)


def test_version_trigger_timeout_runs_nothing_slow_on_the_event_loop(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    table = _table(tmp_path, commits=2)
    kwargs = {"table_uri": table, "after_version": 1, "poll_interval": 0.05, "timeout": 1.0}
    spec = {"root": str(tmp_path), "classpath": VERSION_TRIGGER, "kwargs": kwargs, "events": 1, "idle": 0}
    result = _run_child(request, spec)
    assert [(p["status"], p["last_seen"]) for p in result["payloads"]] == [("timeout", 1)]
    _assert_nothing_ran_on_the_loop(result)


def test_event_trigger_runs_nothing_slow_on_the_event_loop(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    table = _table(tmp_path, commits=3)
    kwargs = {"table_uri": table, "after_version": 0, "poll_interval": 0.05, "watcher_id": "loop"}
    # idle: several more polls and cursor saves after the two events
    spec = {"root": str(tmp_path), "classpath": EVENT_TRIGGER, "kwargs": kwargs, "events": 2, "idle": 0.5}
    result = _run_child(request, spec)
    assert [(p["status"], p["version"]) for p in result["payloads"]] == [("success", 1), ("success", 2)]
    assert json.loads((Path(table) / "_txnlog_cursors" / "loop.json").read_bytes())["version"] == 2
    _assert_nothing_ran_on_the_loop(result)


if __name__ == "__main__":
    print(json.dumps(child(json.loads(sys.argv[1]))))
