"""A planned rewrite with a writer of the caller's (`Table.run_maintenance(rewriter=...)`, which Spark's
planned maintenance uses): the engine still commits exactly the planned files, and a writer that
fails or writes outside the rewrite's partitions commits nothing and leaves none of its files."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.engine.maintenance.rewrite_run import engine_writer

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _table(tmp_path: Path) -> tuple[Table, dict[str, Any]]:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["p"])
    for i in range(4):
        t.write(pa.table({"id": [i, i + 10], "p": ["x", "x"]}, schema=SCHEMA))
    t.write(pa.table({"id": [99], "p": ["y"]}, schema=SCHEMA))
    plan = t.plan_maintenance(quiet_minutes=0, min_input_files=2, min_files_removed=1).to_dict()
    action = next(a for a in plan["actions"] if a["kind"] == "compact")
    assert action["partition"] == {"p": "x"}
    return t, action


def _parquet(t: Table) -> list[str]:
    return sorted(str(p.relative_to(t.uri)) for p in Path(t.uri).rglob("*.parquet"))


def test_a_writer_of_the_callers_is_committed_as_the_engines_own(tmp_path: Path) -> None:
    t, action = _table(tmp_path)
    calls: list[int] = []
    own = engine_writer(t.storage)

    def counting(snap: Any, work: Any) -> Any:
        calls.append(len(work.files))
        return own(snap, work)

    done = t.run_maintenance(action, dry_run=False, rewriter=counting)
    assert calls == [4] and done["actual"]["files_removed"] == 4 and done["actual"]["files_after"] == 1
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == [0, 1, 2, 3, 10, 11, 12, 13, 99]


def test_a_writer_that_writes_outside_the_partitions_commits_nothing(tmp_path: Path) -> None:
    t, action = _table(tmp_path)
    version, files = t.latest_version(), _parquet(t)
    own = engine_writer(t.storage)

    def astray(snap: Any, work: Any) -> Any:
        adds = own(snap, work)
        return [dataclasses.replace(a, partition_values={"p": "y"}) for a in adds]  # (a writer bug)

    with pytest.raises(InvalidArgumentError, match="outside the partitions it read"):
        t.run_maintenance(action, dry_run=False, rewriter=astray)
    assert (t.latest_version(), _parquet(t)) == (version, files)


def test_a_writer_that_fails_commits_nothing(tmp_path: Path) -> None:
    t, action = _table(tmp_path)
    version, files = t.latest_version(), _parquet(t)

    def failing(snap: Any, work: Any) -> Any:
        raise OSError("the cluster went away")

    with pytest.raises(OSError, match="went away"):
        t.run_maintenance(action, dry_run=False, rewriter=failing)
    assert (t.latest_version(), _parquet(t)) == (version, files)


def test_a_partition_value_another_writer_spelled_differently_is_still_the_same_partition(
    tmp_path: Path,
) -> None:
    """Delta on Spark writes a timestamp partition `2024-01-01 00:00:00`, the engine with micros: the
    rewrite's check compares values, not strings (a Z-order of such a table was refused)."""
    import datetime as dt  # noqa: PLC0415

    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("ts", pa.timestamp("us"))])
    t = Table.create(str(tmp_path / "t"), schema=schema, partition_by=["ts"])
    for i in range(3):
        t.write(
            pa.table({"id": [i, i + 10], "v": [5 - i, i], "ts": [dt.datetime(2024, 1, 1)] * 2}, schema=schema)
        )
    for log in (tmp_path / "t" / "_delta_log").glob("*.json"):
        log.write_text(log.read_text().replace("2024-01-01 00:00:00.000000", "2024-01-01 00:00:00"))
    t = Table.open(str(tmp_path / "t"))
    done = t.optimize(zorder_by=["v"])
    assert (done.files_removed, done.files_added) == (3, 1)
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == [0, 1, 2, 10, 11, 12]
