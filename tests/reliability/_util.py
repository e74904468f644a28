"""Helpers shared by the reliability tests: table builders, log listings and snapshot comparison."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any, NoReturn

from airflow_txnlog.engine import Snapshot, Table
from airflow_txnlog.engine.log.log_paths import parse_name
from tests.conftest import SCHEMA, rows


def build_table(uri: str, commits: int, options: dict[str, Any] | None = None, **kw: Any) -> Table:
    """A table partitioned by `part` with one row per commit (id = commit number - 1)."""
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"], storage_options=options, **kw)
    for i in range(commits):
        t.write(rows([i], f"p{i % 3}"))
    return t


def log_names(t: Table) -> list[str]:
    """Every file directly in `_delta_log/` (what "nothing was written" is checked against)."""
    return [f.name for f in t.storage.list_log()]


def commit_versions(t: Table) -> list[int]:
    out = []
    for f in t.storage.list_log():
        p = parse_name(f.name)
        if p is not None and p.kind == "commit":
            out.append(p.version)
    return sorted(out)


def ids(snap: Snapshot) -> list[int]:
    return sorted(snap.to_arrow().column("id").to_pylist())


def row_multiset(snap: Snapshot) -> Counter[tuple[Any, ...]]:
    t = snap.to_arrow()
    return Counter(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))


def fingerprint(snap: Snapshot) -> dict[str, Any]:
    """What must be identical between a snapshot and its uncorrupted twin."""
    return {
        "version": snap.version,
        "files": sorted((f.path, f.size, tuple(sorted(f.partition_values.items()))) for f in snap.files()),
        "rows": row_multiset(snap),
        "schema": snap.schema,
        "partition_columns": snap.partition_columns,
        "properties": snap.properties,
        "protocol": snap.protocol,
        "txns": {k: v.version for k, v in snap.state.txns.items()},
    }


def full_replay_paths(t: Table, version: int) -> list[str]:
    """Live file paths at `version` by replaying every JSON commit from 0 (no checkpoint involved)."""
    from airflow_txnlog.engine.log.log_segment import list_log  # noqa: PLC0415
    from airflow_txnlog.engine.log.replay import LogState  # noqa: PLC0415
    from airflow_txnlog.engine.state.segment_state import replay as _replay  # noqa: PLC0415

    listing = list_log(t.storage)
    commits = [(v, listing.commits[v]) for v in range(version + 1)]
    state = _replay(t.storage, LogState(version=-1), commits)
    return sorted(state.tail_add_keys())


def read_commit(t: Table, version: int) -> list[dict[str, Any]]:
    from airflow_txnlog.engine.log.log_reader import parse_commit  # noqa: PLC0415

    name = f"{version:020d}.json"
    return parse_commit(t.storage.read(f"_delta_log/{name}"), name=name)


def finish_worker(out: str, result: dict[str, Any]) -> NoReturn:
    """End a spawned test worker: write its result (durably), then exit at once with status 0.

    The interpreter's teardown is skipped: once (1 of thousands of worker exits) a stress worker was
    killed by SIGABRT ("terminate called without an active exception", a native thread destroyed
    during finalization) after it had written a complete result, and every check of that run held
    when made by hand. The exit status still tells a crash during the work: the result is written
    last, and the tests read it.
    """
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(result))
        f.flush()
        os.fsync(f.fileno())
    os._exit(0)
