"""Processes of the restore-under-concurrency test (test_restore_concurrency.py).

- `run_writer`: `n` blind appends of 1-2 rows into the writer's own partition `w<k>` (txn appId
  `w<k>`), reporting each version and the ids it added.
- `run_guardian`: `rounds` times: create a savepoint of the latest version, let the writers commit
  for a moment, then restore it with `owner="guard"` and `on_foreign_commits="force"` (the writers'
  commits since the savepoint are foreign and get discarded), reporting savepoint version, restore
  version and the restore's own account (`committed`, `foreign_versions`). A restore that gives up
  because the table kept changing is reported as `starved`, not hidden.
Both start together (a barrier) and write their report as JSON.
"""

from __future__ import annotations

import random
import time
from typing import Any

from airflow_txnlog.engine import RestoreRetriesExceededError, Table
from tests.conftest import rows
from tests.reliability._util import finish_worker


def run_writer(uri: str, options: dict[str, Any] | None, k: int, n: int, out: str, barrier: Any) -> None:
    t = Table.open(uri, storage_options=options)
    rng = random.Random(k)
    commits = []
    barrier.wait(timeout=120)
    for seq in range(n):
        ids = [k * 1_000_000 + seq * 10 + j for j in range(rng.randint(1, 2))]
        version = t.write(rows(ids, f"w{k}"), txn=(f"w{k}", seq))
        commits.append({"version": version, "ids": ids})
        time.sleep(rng.random() * 0.03)
    finish_worker(out, {"writer": k, "commits": commits})


def run_guardian(uri: str, options: dict[str, Any] | None, rounds: int, out: str, barrier: Any) -> None:
    t = Table.open(uri, storage_options=options)
    rng = random.Random(99)
    restores, starved = [], 0
    barrier.wait(timeout=120)
    for i in range(rounds):
        sp = t.create_savepoint(f"guard-{i}", reason="restore concurrency test")
        time.sleep(rng.random() * 0.05)
        try:
            res = t.restore(savepoint=sp.name, owner="guard", on_foreign_commits="force")
        except RestoreRetriesExceededError:  # MAX_REPLANS conflicting commits in a row
            starved += 1
            continue
        restores.append(
            {
                "savepoint_version": sp.version,
                "version": res.version,
                "committed": res.committed,
                "foreign": res.foreign_versions,
            }
        )
    finish_worker(out, {"restores": restores, "starved": starved})
