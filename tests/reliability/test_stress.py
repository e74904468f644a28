"""Multi-writer stress: N processes x M commits on one table, local, S3 and Azure (issues 6, 16).

Operations are mixed (see stress_worker.py): blind appends to shared and own partitions,
read-then-append to a contended partition, deletes of one contended file, deletes of a worker's own
partition, and one compaction with dataChange=false. The test then checks, from the workers' reports
and the log itself:
- 0 lost commits and 0 duplicates: the reported versions are exactly 1..N*M, each once, and each
  commit file carries the reporting worker's txn (appId, seq);
- versions contiguous in the log; the latest snapshot (from a checkpoint) has the same live files as
  a full JSON replay;
- the final rows are exactly the expected multiset (all appended rows minus the rows of removed
  files; the compaction moves rows without changing them);
- every conflict raised is one Delta would raise: the winning commit is newer than the read version
  and really did what the error says (added to the partition read, removed a file read / removed),
  and operations Delta never fails (blind appends, own-partition deletes, the compaction) never did;
- no conflict was missed: for every committed read-then-write transaction, no commit between its
  read version and its own version added data to the partition it read or removed a file it read.
Sizes: CI by default; 16 x 50 with TXNLOG_FULL=1; any size with TXNLOG_STRESS=<writers>x<commits>.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from tests.conftest import SCHEMA
from tests.reliability._util import commit_versions, full_replay_paths, read_commit, row_multiset
from tests.reliability.conftest import FULL, Backend, report_figures
from tests.reliability.stress_worker import run_worker

SIZES = {
    "local": (16, 50) if FULL else (6, 12),
    "s3": (16, 50) if FULL else (4, 10),
    "azure": (16, 50) if FULL else (4, 10),
    "gcs": (16, 50) if FULL else (4, 10),
}
if os.environ.get("TXNLOG_STRESS"):  # e.g. TXNLOG_STRESS=8x25: writers x commits, both backends
    _w, _c = (int(x) for x in os.environ["TXNLOG_STRESS"].lower().split("x"))
    SIZES = {"local": (_w, _c), "s3": (_w, _c), "azure": (_w, _c)}
NEVER_CONFLICT = {"blind_shared", "blind_own", "delete_own", "compact"}


def _run(
    backend: Backend, tmp_path: Path, workers: int, ops: int
) -> tuple[Table, list[dict[str, Any]], float]:
    uri = backend.new_uri("stress")
    Table.create(uri, schema=SCHEMA, partition_by=["part"], storage_options=backend.options)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(workers)
    outs = [str(tmp_path / f"worker-{w}.json") for w in range(workers)]
    procs = [
        ctx.Process(
            target=run_worker,
            args=(uri, backend.options, w, ops, 7, w == 0, outs[w], barrier),
        )
        for w in range(workers)
    ]
    started = time.monotonic()
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=1800)
    elapsed = time.monotonic() - started
    assert [p.exitcode for p in procs] == [0] * workers
    results = [json.loads(Path(o).read_text()) for o in outs]
    return Table.open(uri, storage_options=backend.options), results, elapsed


def _check_conflict(t: Table, c: dict[str, Any]) -> None:
    """Assert the conflict is one Delta raises: the winner did exactly what the error claims."""
    assert c["op"] not in NEVER_CONFLICT, f"{c['op']} must never conflict: {c}"
    assert c["winning_version"] > c["read_version"], c
    actions = read_commit(t, c["winning_version"])
    adds = [a["add"] for a in actions if "add" in a]
    data_removes = [a["remove"]["path"] for a in actions if "remove" in a and a["remove"]["dataChange"]]
    removes = [a["remove"]["path"] for a in actions if "remove" in a]
    kind = c["kind"]
    if kind == "ConcurrentAppendError":
        assert any(
            a["dataChange"] and a["partitionValues"].get("part") == c["read_partition"] for a in adds
        ), c
    elif kind == "ConcurrentDeleteReadError":
        assert set(data_removes) & set(c["read_paths"]), c
    elif kind == "ConcurrentDeleteDeleteError":
        assert set(removes) & set(c["removed_paths"]), c
    else:  # nobody changes protocol / metadata, and every worker has its own txn appId
        pytest.fail(f"unexpected conflict kind {kind}: {c}")


@pytest.mark.slow
def test_multi_writer_stress(backend: Backend, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    workers, ops = SIZES[backend.name]
    t, results, elapsed = _run(backend, tmp_path, workers, ops)
    total = workers * ops

    # 0 lost, 0 duplicated, contiguous; each version is the reporting worker's commit.
    reported = sorted(c["version"] for r in results for c in r["commits"])
    assert reported == list(range(1, total + 1))
    assert commit_versions(t) == list(range(total + 1))
    for r in results:
        for c in r["commits"]:
            txns = [a["txn"] for a in read_commit(t, c["version"]) if "txn" in a]
            assert txns and txns[0]["appId"] == f"w{r['worker']}" and txns[0]["version"] == c["seq"], c

    # Final rows are exactly the expected multiset; checkpointed state = full JSON replay.
    expected: Counter[int] = Counter()
    for r in results:
        for c in r["commits"]:
            expected.update(c["added"])
            expected.subtract(c["removed"])
    assert all(n >= 0 for n in expected.values()), "a row was removed more often than it was added"
    expected = +expected
    snap = t.snapshot()
    assert snap.version == total
    actual = Counter(row[0] for row, n in row_multiset(snap).items() for _ in range(n))
    assert actual == expected
    assert sorted(f.path for f in snap.files()) == full_replay_paths(t, total)
    assert all(not r["mismatches"] for r in results), [r["mismatches"] for r in results]

    # No conflict was missed: nothing committed between a transaction's read and its commit touched
    # what it read (Serializable: no data added to the partition it read; any isolation: none of the
    # files it read removed with dataChange=true). The compaction runs at snapshot isolation.
    cache: dict[int, list[dict[str, Any]]] = {}
    for r in results:
        for c in r["commits"]:
            if "read_version" not in c:
                continue
            for w in range(c["read_version"] + 1, c["version"]):
                actions = cache.setdefault(w, read_commit(t, w))
                if c["op"] != "compact":
                    assert not any(
                        a["add"]["dataChange"]
                        and a["add"]["partitionValues"].get("part") == c["read_partition"]
                        for a in actions
                        if "add" in a
                    ), f"missed ConcurrentAppend: {c} vs version {w}"
                gone = {a["remove"]["path"] for a in actions if "remove" in a and a["remove"]["dataChange"]}
                assert not gone & set(c["read_paths"]), f"missed ConcurrentDeleteRead: {c} vs version {w}"

    conflicts = [c for r in results for c in r["conflicts"]]
    for c in conflicts:
        _check_conflict(t, c)

    ops_count = Counter(c["op"] for r in results for c in r["commits"])
    assert ops_count["compact"] == 1
    kinds = Counter(c["kind"] for c in conflicts)
    checkpoints = sum(1 for f in t.storage.list_log() if f.name.endswith(".checkpoint.parquet"))
    assert checkpoints == total // 10
    report_figures(
        request,
        f"stress {backend.name} {workers}x{ops}",
        {
            "commits": len(reported),
            "lost": total - len(set(reported)),
            "duplicates": len(reported) - len(set(reported)),
            "rows": sum(actual.values()),
            "put_collisions(retries)": sum(r["put_collisions"] for r in results),
            "conflicts": len(conflicts),
            **{f"conflicts.{k}": v for k, v in sorted(kinds.items())},
            **{f"ops.{k}": v for k, v in sorted(ops_count.items())},
            "checkpoints": checkpoints,
            "seconds": round(elapsed, 1),
        },
    )
