"""Crash injection: a writer subprocess is SIGKILLed at chosen points; the table must survive.

Each run starts `crash_child.py` on a shared table (a fresh table every `RUNS_PER_TABLE` runs, so
debris accumulates as in real life), armed to kill itself at hit number `at` of one crash point
(points rotate, so every point is hit deterministically; `random_delay` kills from outside after a
random time instead). The table has `delta.checkpointInterval=3` and 4-action checkpoint parts, so
checkpoints, multi-part checkpoints and `_last_checkpoint` writes happen every few commits.

After every kill the test checks, in this process:
- the child really died by SIGKILL at the armed point (exit code -9);
- the table opens, its versions are contiguous 0..latest, and latest is every reported commit plus at
  most the one commit that was in flight (landed but unreported);
- no committed data is lost: the rows equal the model built from the child's reports (plus the
  in-flight operation exactly when its commit landed), all live files are readable;
- the snapshot built from the newest checkpoint has the same live files as a full JSON replay;
- a new writer can commit (the next version, readable at once).
Sizes: CI by default; `TXNLOG_FULL=1` runs >= 1,000 kills (local + S3 + Azure + GCS).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from tests.conftest import SCHEMA, rows
from tests.reliability._util import commit_versions, full_replay_paths, row_multiset
from tests.reliability.conftest import FULL, Backend, report_figures
from tests.reliability.crash_child import LOCAL_POINTS, MAINTENANCE_POINTS, OBJECT_STORE_POINTS

REPO = Path(__file__).resolve().parents[2]
RUNS = {
    "local": 840 if FULL else 20,
    "s3": 240 if FULL else 12,
    "azure": 240 if FULL else 12,
    "gcs": 240 if FULL else 12,
}  # CI: every point at least once
SHARDS = 6 if FULL else 1  # independent tables per shard, so pytest-xdist can spread a full run
RUNS_PER_TABLE = 20
PROPERTIES = {"delta.checkpointInterval": "3"}
PART_SIZE = 4


class Model:
    """What the table must contain: a multiset of row ids per version, from reports only."""

    def __init__(self) -> None:
        self.ids: Counter[int] = Counter()
        self.latest = 0
        self.history: dict[int, Counter[int]] = {0: Counter()}

    def apply(self, add: list[int], remove: list[int]) -> None:
        self.ids.update(add)
        self.ids.subtract(remove)
        assert all(n >= 0 for n in self.ids.values())
        self.ids = +self.ids

    def apply_intent(self, intent: dict[str, Any]) -> None:
        if intent["intent"] == "restore":
            self.ids = Counter(self.history[intent["version"]])
        elif intent["intent"] != "vacuum":  # vacuum commits change no data
            self.apply(intent["add"], intent["remove"])

    def landed(self, version: int) -> None:
        self.latest = version
        self.history[version] = Counter(self.ids)


def _ids(snap: Any) -> Counter[int]:
    return Counter(r[0] for r, n in row_multiset(snap).items() for _ in range(n))


def _read_report(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _max_commits(point: str) -> int:
    """Iterations the child may run: enough that the armed hit always comes."""
    if point == "random_delay":  # until killed (40 commits could end before the delay on a fast machine)
        return 100_000
    # A maintenance point's operation is only frequent (1 in 3 iterations), and e.g. a restore to a
    # savepoint of the current state commits nothing: the 4th hit can take well over 40 iterations.
    return 400 if point in MAINTENANCE_POINTS else 40


def _crash_once(
    backend: Backend, uri: str, model: Model, point: str, at: int, run: int, tmp: Path, ops: Counter[str]
) -> tuple[int, int]:
    """One crash run; returns (exit code, number of commits that landed unreported)."""
    report = tmp / f"report-{run}.jsonl"
    config = {
        "backend": backend.name,
        "uri": uri,
        "options": backend.options,
        "point": point,
        "at": at,
        "report": str(report),
        "seed": run,
        "max_commits": _max_commits(point),
        "part_size": PART_SIZE,
        "id_base": (run + 1) * 1_000_000,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.crash_child", json.dumps(config)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if point == "random_delay":
        try:
            proc.wait(timeout=random.Random(run).uniform(0.3, 2.5))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    # random_delay too: its child has 100,000 iterations to run, so any other end is its own failure.
    assert proc.returncode == -signal.SIGKILL, (
        f"{point}#{at} not hit (rc {proc.returncode}): {err.decode(errors='replace')[-3000:]}"
    )

    # Replay the report into the model: every "done" applies the intent before it (a vacuum's
    # intent covers both of its commits).
    events = _read_report(report)
    pending = None
    for e in events:
        if "intent" in e:
            pending = e
        elif "done" not in e:  # a maintenance operation that returned: count it
            key = next(iter(e))
            ops[f"ops.{key}"] += 1
            ops["vacuumed_files"] += e[key] if key == "vacuumed" else 0
        else:
            assert pending is not None and e["done"] == model.latest + 1, (e, model.latest)
            model.apply_intent(pending)
            model.landed(e["done"])
            pending = None if pending["intent"] != "vacuum" else pending

    t = Table.open(uri, storage_options=backend.options)
    latest = t.latest_version()
    landed_unreported = latest - model.latest
    assert landed_unreported in (0, 1), f"{point}: log at {latest}, reports end at {model.latest}"
    if landed_unreported:
        assert pending is not None, f"{point}: a commit landed that the writer never announced"
        model.apply_intent(pending)
        model.landed(latest)
    assert commit_versions(t) == list(range(latest + 1))
    snap = t.snapshot()
    assert snap.version == latest
    assert _ids(snap) == model.ids, f"{point}#{at}: rows differ from the committed model"
    assert sorted(f.path for f in snap.files()) == full_replay_paths(t, latest)
    # No savepointed file is gone (vacuum ran with retention 0): each savepoint's version reads whole.
    for sp in t.savepoints():
        assert _ids(t.snapshot(sp.version)) == model.history[sp.version], f"{point}#{at}: {sp.name}"

    # A new writer can commit right after the crash.
    new_id = -(run + 1)
    v = t.write(rows([new_id], "p0"))
    assert v == latest + 1
    model.apply([new_id], [])
    model.landed(v)
    assert (
        new_id
        in Table.open(uri, storage_options=backend.options).snapshot().to_arrow().column("id").to_pylist()
    )
    return proc.returncode, landed_unreported


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS))
def test_crash_injection(
    backend: Backend, shard: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    points = LOCAL_POINTS if backend.name == "local" else OBJECT_STORE_POINTS
    per_shard = RUNS[backend.name] // SHARDS
    first = shard * per_shard
    rng = random.Random(6 + shard)
    hit: Counter[str] = Counter()
    ops: Counter[str] = Counter()
    killed = landed_unreported = 0
    uri, model = "", Model()
    started = time.monotonic()
    for run in range(first, first + per_shard):
        if (run - first) % RUNS_PER_TABLE == 0:
            uri = backend.new_uri(f"crash{run}")
            Table.create(
                uri,
                schema=SCHEMA,
                partition_by=["part"],
                properties=PROPERTIES,
                storage_options=backend.options,
            )
            model = Model()
        point = points[run % len(points)]
        at = 1 if run - first < len(points) else rng.randint(1, 4)
        rc, unreported = _crash_once(backend, uri, model, point, at, run, tmp_path, ops)
        hit[point] += rc == -signal.SIGKILL
        killed += rc == -signal.SIGKILL
        landed_unreported += unreported
    assert set(hit) == set(points) and all(hit[p] >= 1 for p in points), hit
    leftovers = 0
    if backend.name == "local":
        leftovers = sum(len(files) for d, _, files in os.walk(tmp_path) if d.endswith(".tmp"))
    report_figures(
        request,
        f"crash {backend.name} shard {shard + 1}/{SHARDS}",
        {
            "runs": per_shard,
            "killed": killed,
            "landed_unreported": landed_unreported,
            "tmp_leftovers": leftovers,
            "seconds": round(time.monotonic() - started, 1),
            **dict(sorted(ops.items())),
            **{f"hit.{p}": n for p, n in sorted(hit.items())},
        },
    )
