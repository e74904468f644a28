"""One writer process of the multi-writer stress test (tests/reliability/test_stress.py).

Each worker performs exactly `n_ops` successful commits on a table partitioned by `part`, choosing
per operation (seeded, reproducible):

- `blind_shared`  `Table.write` of 1-3 rows into a shared partition s0..s3 (a blind append);
- `blind_own`     `Table.write` into the worker's own partition w<k> (a blind append);
- `hot_append`    a transaction that reads `part = 'hot'` and adds one file there (like MERGE);
- `hot_delete`    a transaction that reads `part = 'hot'` and removes its oldest file;
- `delete_own`    a transaction that reads `part = 'w<k>'` and removes every file in it;
- `compact`       (one worker, once) reads `part = 's0'`, rewrites its rows into one file and commits
                  removes + add with dataChange=false (OPTIMIZE, snapshot isolation).

Every commit carries `txn(appId=w<k>, version=seq)` so each version can be traced to its operation.
A conflict is recorded (kind, what was read / removed, read and winning versions) and the operation is
re-planned from the latest snapshot, as an application would. Results go to a JSON file.
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any

import pyarrow.parquet as pq

from airflow_txnlog.engine import AddFile, CommitConflictError, Table
from airflow_txnlog.engine.write.writer import conform_to_schema, write_data_files
from tests.conftest import rows
from tests.reliability._util import finish_worker

MAX_REPLANS = 500
SHARED = ("s0", "s1", "s2", "s3")


def _file_ids(t: Table, add: AddFile) -> list[int]:
    with t.storage.fs.open(t.storage.resolve(add.path), "rb") as f:
        return [int(x) for x in pq.read_table(f, columns=["id"]).column("id").to_pylist()]


def _new_file(t: Table, ids: list[int], part: str, *, data_change: bool = True) -> AddFile:
    snap = t.snapshot()
    data = conform_to_schema(rows(ids, part), snap.schema)
    (add,) = write_data_files(t.storage, data, ["part"], snap.properties, max_rows_per_file=1 << 20)
    return add if data_change else dataclasses.replace(add, data_change=False)


class Worker:
    def __init__(self, uri: str, options: dict[str, Any] | None, worker: int, seed: int) -> None:
        self.t = Table.open(uri, storage_options=options)
        self.k = worker
        self.app = f"w{worker}"
        self.rng = random.Random(seed * 1000 + worker)
        self.own_ids: list[int] = []  # rows currently in w<k> (only this worker writes there)
        self.commits: list[dict[str, Any]] = []
        self.conflicts: list[dict[str, Any]] = []
        self.put_attempts = 0
        self.put_collisions = 0
        self.mismatches: list[str] = []
        real_put = self.t.storage.put_if_absent

        def counting_put(key: str, data: bytes) -> None:
            self.put_attempts += 1
            try:
                real_put(key, data)
            except FileExistsError:
                self.put_collisions += 1
                raise

        self.t.storage.put_if_absent = counting_put  # type: ignore[method-assign]

    # ------------------------------------------------------------------ operations
    def _ids(self, seq: int, n: int) -> list[int]:
        return [self.k * 1_000_000 + seq * 100 + j for j in range(n)]

    def blind(self, seq: int, part: str) -> dict[str, Any]:
        new = self._ids(seq, self.rng.randint(1, 3))
        v = self.t.write(rows(new, part), txn=(self.app, seq))
        return {"version": v, "added": new, "removed": []}

    def _txn_op(self, seq: int, op: str, info: dict[str, Any], plan: Any) -> dict[str, Any] | None:
        txn = self.t.transaction(op.upper())
        txn.set_app_transaction(self.app, seq)
        added, removed = plan(txn, info)
        if added is None:
            return None
        try:
            v = txn.commit()
        except CommitConflictError as exc:
            self.conflicts.append(
                {
                    "kind": type(exc).__name__,
                    "op": op,
                    "seq": seq,
                    "read_version": txn.read_version,
                    "winning_version": exc.winning_version,
                    **{k: sorted(v) if isinstance(v, set) else v for k, v in info.items()},
                }
            )
            raise
        read = {k: sorted(v) if isinstance(v, set) else v for k, v in info.items() if k.startswith("read_")}
        return {"version": v, "added": added, "removed": removed, "read_version": txn.read_version, **read}

    def hot_append(self, seq: int) -> dict[str, Any] | None:
        def plan(txn: Any, info: dict[str, Any]) -> tuple[list[int], list[int]]:
            read = txn.read_files("part = 'hot'")
            info.update(read_partition="hot", read_paths={f.path for f in read}, removed_paths=set())
            new = self._ids(seq, 1)
            txn.add(_new_file(self.t, new, "hot"))
            return new, []

        return self._txn_op(seq, "hot_append", {}, plan)

    def hot_delete(self, seq: int) -> dict[str, Any] | None:
        def plan(txn: Any, info: dict[str, Any]) -> tuple[list[int] | None, list[int]]:
            read = txn.read_files("part = 'hot'")
            info.update(read_partition="hot", read_paths={f.path for f in read})
            if not read:
                return None, []
            victim = min(read, key=lambda f: f.path)
            info["removed_paths"] = {victim.path}
            gone = _file_ids(self.t, victim)
            txn.remove(victim)
            return [], gone

        return self._txn_op(seq, "hot_delete", {}, plan)

    def delete_own(self, seq: int) -> dict[str, Any] | None:
        part = f"w{self.k}"

        def plan(txn: Any, info: dict[str, Any]) -> tuple[list[int] | None, list[int]]:
            read = txn.read_files(f"part = '{part}'")
            info.update(read_partition=part, read_paths={f.path for f in read})
            info["removed_paths"] = {f.path for f in read}
            if not read:
                return None, []
            gone = [i for f in read for i in _file_ids(self.t, f)]
            if sorted(gone) != sorted(self.own_ids):
                self.mismatches.append(f"seq {seq}: {part} held {sorted(gone)}, expected {self.own_ids}")
            for f in read:
                txn.remove(f)
            return [], gone

        return self._txn_op(seq, "delete_own", {}, plan)

    def compact(self, seq: int) -> dict[str, Any] | None:
        def plan(txn: Any, info: dict[str, Any]) -> tuple[list[int] | None, list[int]]:
            read = txn.read_files("part = 's0'")
            info.update(read_partition="s0", read_paths={f.path for f in read})
            info["removed_paths"] = {f.path for f in read}
            if len(read) < 2:
                return None, []
            moved = sorted(i for f in read for i in _file_ids(self.t, f))
            for f in read:
                txn.remove(f, data_change=False)
            txn.add(_new_file(self.t, moved, "s0", data_change=False))
            return moved, moved

        return self._txn_op(seq, "compact", {}, plan)

    # ------------------------------------------------------------------ driver
    def pick(self, seq: int, n_ops: int, compactor: bool) -> str:
        if compactor and seq == n_ops // 2:
            return "compact"
        r = self.rng.random()
        if r < 0.35:
            return "blind_shared"
        if r < 0.55:
            return "blind_own"
        if r < 0.72:
            return "hot_append"
        if r < 0.87:
            return "hot_delete"
        return "delete_own"

    def run(self, n_ops: int, compactor: bool) -> None:
        for seq in range(n_ops):
            op = self.pick(seq, n_ops, compactor)
            for _ in range(MAX_REPLANS):
                try:
                    done = self.do(op, seq)
                except CommitConflictError:
                    time.sleep(self.rng.random() * 0.01)
                    continue
                if done is None:  # nothing to delete / compact yet: append instead
                    op = "blind_own"
                    continue
                break
            else:
                raise RuntimeError(f"worker {self.k}: op {op} seq {seq} never committed")
            if op == "blind_own":
                self.own_ids += done["added"]
            elif op == "delete_own":
                self.own_ids = []
            self.commits.append({"op": op, "seq": seq, **done})

    def do(self, op: str, seq: int) -> dict[str, Any] | None:
        if op == "blind_shared":
            return self.blind(seq, self.rng.choice(SHARED))
        if op == "blind_own":
            return self.blind(seq, f"w{self.k}")
        return getattr(self, op)(seq)  # type: ignore[no-any-return]


def run_worker(
    uri: str,
    options: dict[str, Any] | None,
    worker: int,
    n_ops: int,
    seed: int,
    compactor: bool,
    out: str,
    barrier: Any,
) -> None:
    w = Worker(uri, options, worker, seed)
    barrier.wait(timeout=120)
    started = time.monotonic()
    w.run(n_ops, compactor)
    result = {
        "worker": worker,
        "commits": w.commits,
        "conflicts": w.conflicts,
        "put_attempts": w.put_attempts,
        "put_collisions": w.put_collisions,
        "mismatches": w.mismatches,
        "seconds": round(time.monotonic() - started, 2),
    }
    finish_worker(out, result)
