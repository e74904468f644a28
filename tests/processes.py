"""Helpers for tests that run servers and commands as child processes."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Terminate a server process; kill it if it does not exit within `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_python(
    args: list[str], env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """This interpreter with `args` from the repository root, output captured; the caller checks it."""
    return subprocess.run(
        [sys.executable, *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )


def need_emulator(found: bool, message: str, require_env: str) -> None:
    """Skip the caller's tests when an emulator is missing, but fail them under CI (`CI` set) or when
    `require_env` is set (not "0"): CI must run the suites that need it."""
    if found:
        return
    if os.environ.get("CI") or os.environ.get(require_env, "") not in ("", "0"):
        pytest.fail(message)
    pytest.skip(message)


@contextlib.contextmanager
def serving(
    name: str, cmd: Sequence[str], work: Path, ready: Callable[[], bool], timeout: float = 60
) -> Iterator[subprocess.Popen[bytes]]:
    """Run server `cmd` in `work` (output to `work/<name>.log`) until `ready()` says it answers; stop
    it on exit. A server that exits or stays silent for `timeout` seconds fails with its log's tail."""
    log = work / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, cwd=work)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}: {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not answer within {timeout:.0f} s: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield proc
    finally:
        stop(proc, timeout=10)


def listening(port: int) -> Callable[[], bool]:
    """A `ready` check for `serving`: something accepts TCP connections on 127.0.0.1:`port`."""

    def check() -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    return check
