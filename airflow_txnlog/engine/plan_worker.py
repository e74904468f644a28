"""One table's plan as a worker process makes it, and the worker process itself.

`plan_one(target, settings)` opens and plans one table and turns whatever goes wrong into the
outcome's error: what every worker, and the calling process when it plans alone, runs.

A worker is `python -m airflow_txnlog.engine.plan_worker`, a fresh interpreter started by
plan_pool (not a fork: it shares no lock or thread with the caller; not multiprocessing's spawn: that
re-runs the caller's main script in each worker, side effects and all, unless the script guards it).
It reads requests from stdin and writes outcomes to stdout, each a JSON document (orjson) behind its
8-byte length: data, never code (a request names a table, its storage options and the planner's
settings; an outcome is a plan's plain-JSON dict). The process's own stdout is pointed at
stderr first, so nothing printed can corrupt a message. It ends at end of input.
"""

from __future__ import annotations

import dataclasses
import os
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson

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


def encode(value: object) -> bytes:
    """`value` (JSON data: dicts, lists, strings, numbers) as a message's bytes; TypeError when it is
    not JSON data (a credential object in storage options: such a target is planned in the caller)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def send(stream: BinaryIO, value: object) -> None:
    data = encode(value)
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
    return orjson.loads(data)


def serve() -> None:
    """The worker loop (see the module docstring)."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # (a print now goes to stderr)
    requests = sys.stdin.buffer
    while (request := receive(requests)) is not None:
        outcome = plan_one(PlanTarget(**request["target"]), request["settings"])
        # (field by field, not dataclasses.asdict: that deep-copies a million-path plan first)
        send(replies, {f.name: getattr(outcome, f.name) for f in dataclasses.fields(outcome)})


if __name__ == "__main__":
    serve()
