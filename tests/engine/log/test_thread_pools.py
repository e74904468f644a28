"""The engine's process-wide thread pools (`engine.log.thread_pools`) survive a fork: Airflow's task
runners fork a process that may already have loaded a table, and the child must load tables too."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import AddFile, Table
from airflow_txnlog.engine.log import thread_pools

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _json_only_table(path: Path, files: int) -> str:
    """A checkpointed table whose checkpoint has JSON stats only: `add_actions()` parses them on the
    shared pools (the early parse thread and `ordered_map`'s workers)."""
    schema = pa.schema([("id", pa.int64())])
    t = Table.create(str(path), schema=schema, properties={"delta.checkpoint.writeStatsAsStruct": "false"})
    with t.transaction() as txn:
        for i in range(files):
            stats = (
                f'{{"numRecords":1,"minValues":{{"id":{i}}},"maxValues":{{"id":{i}}},"nullCount":{{"id":0}}}}'
            )
            txn.add(
                AddFile(path=f"f{i}.parquet", partition_values={}, size=10, modification_time=1, stats=stats)
            )
        txn.commit()
    t.checkpoint()
    return str(path)


def _wait(pid: int, seconds: float) -> int | None:
    """The child's exit status, or None if it is still running after `seconds` (then killed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def test_a_forked_child_loads_a_table_after_the_parent_did(tmp_path: Path) -> None:
    """The parent's load starts the pools' threads; the child inherits the executors but not the
    threads. Before the pools were renewed at fork, the child's load queued work nothing ran: hung."""
    path = _json_only_table(tmp_path / "t", files=300)
    assert Table.open(path).snapshot().add_actions().num_rows == 300  # (threads started here)
    assert thread_pools._POOLS  # the parent has live pools the child would inherit
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 only if its own load gives every file
        code = 1
        try:
            code = 0 if Table.open(path).snapshot().add_actions().num_rows == 300 else 2
        finally:
            os._exit(code)
    assert _wait(pid, 60) == 0, "the forked child did not load the table (hung, or wrong rows)"
    # and the parent's pools still work after the fork
    assert Table.open(path).snapshot().add_actions().num_rows == 300


def test_shared_gives_one_pool_per_name_and_size() -> None:
    a = thread_pools.shared("txnlog-test", 2)
    assert thread_pools.shared("txnlog-test", 2) is a
    assert thread_pools.shared("txnlog-test", 3) is not a
    assert thread_pools.shared("txnlog-test-other", 2) is not a
