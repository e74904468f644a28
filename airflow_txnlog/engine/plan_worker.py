"""One table's plan as a worker process makes it, and the worker process itself.

`plan_one(target, settings)` opens and plans one table and turns whatever goes wrong into the
outcome's error: what every worker, and the calling process when it plans alone, runs.

A worker is `python -m airflow_txnlog.engine.plan_worker`, a fresh interpreter started by
plan_pool (not a fork: it shares no lock or thread with the caller; not multiprocessing's spawn: that
re-runs the caller's main script in each worker, side effects and all, unless the script guards it).
It reads requests from stdin and writes outcomes to stdout, each a pickle behind its 8-byte length;
the process's own stdout is pointed at stderr first, so nothing printed can corrupt a message. It
ends at end of input.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from airflow_txnlog.engine.errors import TableNotFoundError

_LENGTH = struct.Struct(">Q")


@dataclass(frozen=True)
class PlanTarget:
    """One table to plan: its URI and how to open it."""

    uri: str
    storage_options: Mapping[str, Any] | None = None
    single_writer: bool = False


@dataclass(frozen=True)
class PlanOutcome:
    """A table's plan (`MaintenancePlan.to_dict()`), or why there is none: `error` is
    "<ExceptionType>: message", `not_found` tells a missing table (TableNotFoundError) apart."""

    uri: str
    plan: dict[str, Any] | None = None
    error: str | None = None
    not_found: bool = False


def plan_one(target: PlanTarget, settings: Mapping[str, Any]) -> PlanOutcome:
    """`target`'s outcome, planned in this process."""
    from airflow_txnlog.engine.table import Table  # noqa: PLC0415 - the table imports the planner

    try:
        table = Table.open(
            target.uri, storage_options=target.storage_options, single_writer=target.single_writer
        )
        return PlanOutcome(target.uri, plan=table.plan_maintenance(**settings).to_dict())
    except TableNotFoundError as exc:
        return PlanOutcome(target.uri, error=f"{type(exc).__name__}: {exc}", not_found=True)
    except Exception as exc:  # one table that cannot be planned must not stop the others
        return PlanOutcome(target.uri, error=f"{type(exc).__name__}: {exc}")


def send(stream: BinaryIO, value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def receive(stream: BinaryIO) -> Any:
    """The next message, or None at end of input (the other side closed or died)."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)  # noqa: S301 - from the parent process that started this worker


def serve() -> None:
    """The worker loop (see the module docstring)."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # (a print now goes to stderr)
    requests = sys.stdin.buffer
    while (request := receive(requests)) is not None:
        target, settings = request
        send(replies, plan_one(target, settings))


if __name__ == "__main__":  # (the module's own names, not __main__'s: the parent unpickles them)
    from airflow_txnlog.engine.plan_worker import serve as _serve

    _serve()
