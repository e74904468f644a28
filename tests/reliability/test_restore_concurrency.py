"""Savepoint + restore while other writers keep committing (local, S3 and Azure).

Writers append to their own partitions while a guardian repeatedly savepoints the table and restores
it (`on_foreign_commits="force"`). A restore reads the whole table, so concurrent appends make it
conflict and re-plan against the new latest version. Checked afterwards:
- 0 lost, 0 duplicate commits: the writers' versions and the restores' versions are exactly
  1..latest, each once, and the log is contiguous;
- every committed restore version holds exactly the rows of its savepoint's version;
- every restore discarded exactly the writers' commits between its savepoint and itself (they are
  the `discardedVersions` in its commitInfo, and its `foreign_versions`);
- every writer commit added exactly that writer's new rows (its add actions' files);
- the final rows = the rows of the last restore + everything the writers appended after it.
Sizes: CI 3 writers x 30 commits + 8 restores locally, 2 x 12 + 4 on S3 and Azure; TXNLOG_FULL=1: 8 x 50 + 25.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table
from tests.conftest import SCHEMA
from tests.reliability._util import commit_versions, read_commit, row_multiset
from tests.reliability.conftest import FULL, Backend, report_figures
from tests.reliability.restore_worker import run_guardian, run_writer

SIZES = {
    "local": (8, 50, 25) if FULL else (3, 30, 8),
    "s3": (8, 50, 25) if FULL else (2, 12, 4),
    "azure": (8, 50, 25) if FULL else (2, 12, 4),
    "gcs": (8, 50, 25) if FULL else (2, 12, 4),
}


def _file_ids(t: Table, paths: list[str]) -> Counter[int]:
    out: Counter[int] = Counter()
    for p in paths:
        with t.storage.fs.open(t.storage.resolve(p), "rb") as f:
            out.update(pq.read_table(f, columns=["id"]).column("id").to_pylist())
    return out


def _ids(t: Table, version: int) -> Counter[int]:
    return Counter(r[0] for r, n in row_multiset(t.snapshot(version)).items() for _ in range(n))


def _run(
    backend: Backend, tmp: Path, writers: int, commits: int, rounds: int
) -> tuple[Table, Any, Any, float]:
    uri = backend.new_uri("restore-conc")
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"], storage_options=backend.options)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers + 1)
    outs = [str(tmp / f"writer-{k}.json") for k in range(writers)]
    guard_out = str(tmp / "guardian.json")
    procs = [
        ctx.Process(target=run_writer, args=(uri, backend.options, k, commits, outs[k], barrier))
        for k in range(writers)
    ]
    procs.append(ctx.Process(target=run_guardian, args=(uri, backend.options, rounds, guard_out, barrier)))
    started = time.monotonic()
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=1800)
    assert [p.exitcode for p in procs] == [0] * len(procs)
    results = [json.loads(Path(o).read_text()) for o in outs]
    return t, results, json.loads(Path(guard_out).read_text()), time.monotonic() - started


@pytest.mark.slow
def test_restore_while_writers_commit(
    backend: Backend, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    writers, commits, rounds = SIZES[backend.name]
    t, results, guard, elapsed = _run(backend, tmp_path, writers, commits, rounds)
    latest = t.latest_version()
    writer_versions = {c["version"]: c for r in results for c in r["commits"]}
    restores = [r for r in guard["restores"] if r["committed"]]
    restore_versions = [r["version"] for r in restores]

    # 0 lost, 0 duplicates, contiguous.
    everyone = sorted([*writer_versions, *restore_versions])
    lost = len(set(range(1, latest + 1)) - set(everyone))
    assert everyone == list(range(1, latest + 1)), "a commit was lost or reported twice"
    assert commit_versions(t) == list(range(latest + 1))
    assert len(writer_versions) == writers * commits

    history = {h["version"]: h for h in t.history()}
    for r in restores:
        assert _ids(t, r["version"]) == _ids(t, r["savepoint_version"]), r
        between = [v for v in range(r["savepoint_version"] + 1, r["version"]) if v in writer_versions]
        assert r["foreign"] == between, r
        info = history[r["version"]]
        assert info["operation"] == "RESTORE" and info.get("discardedVersions", []) == between
    for v, c in writer_versions.items():  # the commit at v added exactly the writer's rows
        added = [a["add"]["path"] for a in read_commit(t, v) if "add" in a]
        assert history[v]["operation"] == "WRITE" and _file_ids(t, added) == Counter(c["ids"]), v

    last = max(restore_versions, default=0)
    expected = _ids(t, last) if last else Counter()
    for v, c in writer_versions.items():
        if v > last:
            expected.update(c["ids"])
    assert _ids(t, latest) == expected

    report_figures(
        request,
        f"restore under writers {backend.name} {writers}x{commits}",
        {
            "commits": latest,
            "lost": lost,
            "restores": len(restores),
            "restores_without_commit": len(guard["restores"]) - len(restores),
            "starved": guard["starved"],
            "discarded_versions": sum(len(r["foreign"]) for r in restores),
            "seconds": round(elapsed, 1),
        },
    )
