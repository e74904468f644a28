"""Planning many tables at once: worker processes, each planning one table at a time.

A plan is Python-bound (log replay, decisions), so threads would take turns on one core; processes
each take one (engine.maintenance.plan_worker: a fresh interpreter each, fed through pipes). Tables
are handed out one at a time in the order given, to whichever worker is free, so a big table keeps
one worker busy while the others go on with the rest; the outcomes come back in the order given.
A worker pays its imports once (about half a second), so a few tables, or one worker, are planned
in the calling process instead.

Invariants: a table's outcome holds exactly `Table.open(uri, storage_options=..., single_writer=...)
.plan_maintenance(**settings).to_dict()`, or the error that raised (its type and message), never
another table's; a target whose storage options cannot cross to a worker (a credential object that
is not JSON data) is planned in the calling process; a worker that dies (killed, out of memory)
makes the table it held an error saying so, and the tables it would have taken go to the others (or,
with none left, to the calling process).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import selectors
import subprocess
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from typing import IO, Any

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.plan_worker import PlanOutcome, PlanTarget, encode, plan_one, receive, send

TABLES_PER_WORKER = 8  # below this many tables a worker, a worker's start costs more than it saves
_WORKER = [sys.executable, "-m", "airflow_txnlog.engine.plan_worker"]


def plan_tables(
    targets: Sequence[PlanTarget], *, settings: Mapping[str, Any] | None = None, workers: int | None = None
) -> list[PlanOutcome]:
    """The outcome of each target, in order (see the module docstring). `workers`: processes (None:
    one per core this process may use, at most one per TABLES_PER_WORKER tables; 1: none)."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InvalidArgumentError(f"workers must be a positive integer or None, got {workers!r}")
    chosen = dict(settings or {})
    count = workers if workers is not None else _default_workers(len(targets))
    outcomes: dict[int, PlanOutcome] = {}
    remote = [i for i, t in enumerate(targets) if count > 1 and _crosses(t, chosen)]
    if len(remote) > 1:
        outcomes.update(_run_workers(targets, remote, chosen, min(count, len(remote))))
    for i, target in enumerate(targets):
        if i not in outcomes:
            outcomes[i] = plan_one(target, chosen)
    return [outcomes[i] for i in range(len(targets))]


def _default_workers(tables: int) -> int:
    return max(1, min(len(os.sched_getaffinity(0)), tables // TABLES_PER_WORKER))


def _crosses(target: PlanTarget, settings: Mapping[str, Any]) -> bool:
    """Whether the target and settings are JSON data (go to a worker process)."""
    try:
        encode(_request(target, settings))
    except TypeError:
        return False
    return True


def _request(target: PlanTarget, settings: Mapping[str, Any]) -> dict[str, Any]:
    return {"target": dataclasses.asdict(target), "settings": dict(settings)}


def _run_workers(
    targets: Sequence[PlanTarget], indices: list[int], settings: Mapping[str, Any], count: int
) -> dict[int, PlanOutcome]:
    """The outcomes of `indices`, planned by `count` workers; those no worker planned are left out."""
    with _Workers(targets, settings, deque(indices)) as workers:
        workers.start(count)
        workers.run()
        return workers.out


class _Workers:
    """Worker processes handed one table at a time (the module docstring), over one selector."""

    def __init__(self, targets: Sequence[PlanTarget], settings: Mapping[str, Any], todo: deque[int]) -> None:
        self.targets, self.settings, self.todo = targets, settings, todo
        self.out: dict[int, PlanOutcome] = {}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.held: dict[subprocess.Popen[bytes], int] = {}
        self.ready = selectors.DefaultSelector()

    def __enter__(self) -> _Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            _stop(proc)
        self.ready.close()

    def start(self, count: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # (the caller's)
        for _ in range(count):
            pipe = subprocess.PIPE
            self.procs.append(subprocess.Popen(_WORKER, stdin=pipe, stdout=pipe, env=env))  # noqa: S603
        for proc in self.procs:
            self.hand_out(proc)

    def run(self) -> None:
        while self.held:
            for key, _ in self.ready.select():
                proc = key.data
                reply = receive(_pipe(proc.stdout))
                index = self.held.pop(proc)
                if reply is None:  # (the worker died: its table is an error, the others go on)
                    self.ready.unregister(key.fileobj)
                    self.out[index] = PlanOutcome(self.targets[index].uri, error=_died(proc))
                    continue
                self.out[index] = PlanOutcome(**reply)
                self.hand_out(proc)

    def hand_out(self, proc: subprocess.Popen[bytes]) -> None:
        """Give `proc` the next table, or, with none left, close its input (it ends)."""
        stdout = _pipe(proc.stdout)
        if not self.todo:
            self._forget(stdout)
            _pipe(proc.stdin).close()
            return
        index = self.todo.popleft()
        try:
            send(_pipe(proc.stdin), _request(self.targets[index], self.settings))
        except OSError:  # (it died between two tables: another worker takes this one)
            self.todo.appendleft(index)
            self._forget(stdout)
            return
        self.held[proc] = index
        try:
            self.ready.get_key(stdout)
        except KeyError:
            self.ready.register(stdout, selectors.EVENT_READ, proc)

    def _forget(self, stream: IO[bytes]) -> None:
        with contextlib.suppress(KeyError):  # (not registered: nothing to forget)
            self.ready.unregister(stream)


def _pipe(stream: IO[bytes] | None) -> Any:
    assert stream is not None  # (every worker is started with both pipes)
    return stream


def _died(proc: subprocess.Popen[bytes]) -> str:
    code = proc.wait()
    return f"the planning worker process ended (exit code {code}) before this table's plan was made"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdin, proc.stdout):
        if stream is not None and not stream.closed:
            stream.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
