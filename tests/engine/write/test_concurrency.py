"""Several processes appending to one local table: no lost commits, contiguous versions."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from airflow_txnlog.engine import Table
from tests.conftest import SCHEMA, rows

PROCESSES = 8
COMMITS = 25


def _appender(uri: str, worker: int) -> list[int]:
    t = Table.open(uri)
    return [t.write(rows([worker * 1000 + i], f"w{worker % 3}")) for i in range(COMMITS)]


@pytest.mark.slow
def test_eight_processes_append_without_losing_a_commit(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    Table.create(uri, schema=SCHEMA, partition_by=["part"])
    ctx = mp.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        results = pool.starmap(_appender, [(uri, w) for w in range(PROCESSES)])
    versions = sorted(v for r in results for v in r)
    assert versions == list(range(1, PROCESSES * COMMITS + 1))
    t = Table.open(uri)
    assert t.latest_version() == PROCESSES * COMMITS
    commits = [f for f in t.storage.list_log() if f.name.endswith(".json")]
    assert len(commits) == PROCESSES * COMMITS + 1
    ids = sorted(t.snapshot().to_arrow().column("id").to_pylist())
    assert ids == sorted(w * 1000 + i for w in range(PROCESSES) for i in range(COMMITS))
    assert all(h["isBlindAppend"] for h in t.history() if h["operation"] == "WRITE")
