"""The writer that test_crash.py kills: commits until a crash point fires, reporting as it goes.

Run as `python -m tests.reliability.crash_child '<json config>'`. The config names a crash point and
which hit of it kills the process (`os.kill(getpid(), SIGKILL)`: no cleanup, no flush, no atexit).
Crash points are installed by wrapping, in this process only, the calls the engine makes at that
moment (the engine itself is not modified):

local (`LocalStorage`: temp file + fsync + `os.link` / `os.replace`)
  data_write            half-way through writing a data file (before any commit)
  commit_temp_write     commit temp file written but torn (truncated to half) before its fsync
  commit_before_link    temp file complete, `os.link` to `N.json` not done
  commit_after_link     `N.json` linked (committed) but the writer never learns it
  after_commit          commit done and reported, checkpoint not started
  checkpoint_temp_write checkpoint temp file torn before its fsync
  checkpoint_part       first part of a multi-part checkpoint in place, later parts missing (on an
                        object store, put side by side: any of the others may be in place too)
  last_checkpoint_temp  checkpoint complete, `_last_checkpoint` temp file torn
  last_checkpoint_replace  checkpoint complete, `_last_checkpoint` not yet replaced
object stores, S3 and Azure (`FsspecStorage`: one exclusive PUT per commit, one PUT per checkpoint file)
  data_write, commit_before_put, commit_after_put, after_commit, checkpoint_put, checkpoint_part,
  last_checkpoint_put
any backend (maintenance, hooked on the table's storage object and the restore module)
  savepoint_manifest    savepoint manifest written, its record (the commit point) not created
  vacuum_delete         vacuum (retention 0) after its `at`-th file delete: the rest not deleted, and
                        the VACUUM END commit not written
  restore_before_commit restore planned and its files checked, its commit not attempted
  restore_commit_landed restore commit in the log, the writer never learns it
  random_delay          no hook: the parent kills the child after a random delay

The child mixes appends, partition deletes, savepoints, restores to a savepoint and vacuums with
retention 0 (so every tombstone is a candidate, and only the savepoints keep old files); an armed
maintenance point makes its operation frequent so the point is reached within `max_commits`.

Report protocol (one JSON line per event, written with a single `os.write` and fsynced):
  {"intent": op, "add": [ids], "remove": [ids]}   before each append / delete is attempted
  {"intent": "restore", "version": v}             before a restore to the savepoint of version v
  {"intent": "vacuum"}                            before a vacuum (two commits, no data change)
  {"done": version}                                when a commit landed, before `commit()` returns
  {"savepoint": v} / {"vacuumed": files} / {"restored": committed}   after those operations returned
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import threading
from typing import Any

import pyarrow.parquet as pq

from airflow_txnlog.engine import Table
from airflow_txnlog.engine import table as table_mod
from airflow_txnlog.engine.log.log_paths import parse_name
from airflow_txnlog.engine.maintenance import restore as restore_mod
from airflow_txnlog.engine.storage import FsspecStorage
from airflow_txnlog.engine.write import writer as writer_mod
from tests.conftest import rows

MAINTENANCE_POINTS = (
    "savepoint_manifest",
    "vacuum_delete",
    "restore_before_commit",
    "restore_commit_landed",
)
LOCAL_POINTS = (
    "data_write",
    "commit_temp_write",
    "commit_before_link",
    "commit_after_link",
    "after_commit",
    "checkpoint_temp_write",
    "checkpoint_part",
    "last_checkpoint_temp",
    "last_checkpoint_replace",
    *MAINTENANCE_POINTS,
    "random_delay",
)
OBJECT_STORE_POINTS = (
    "data_write",
    "commit_before_put",
    "commit_after_put",
    "after_commit",
    "checkpoint_put",
    "checkpoint_part",
    "last_checkpoint_put",
    *MAINTENANCE_POINTS,
    "random_delay",
)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Trap:
    """Counts hits of the armed point; kills the process on hit number `at`."""

    def __init__(self, point: str, at: int) -> None:
        self.point, self.at, self.hits = point, at, 0
        self.lock = threading.Lock()  # (object-store puts of a checkpoint's parts run side by side)

    def hit(self, point: str, before_death: Any = None) -> None:
        if point != self.point:
            return
        with self.lock:
            self.hits += 1
            hit = self.hits
        if hit == self.at:
            if before_death is not None:
                before_death()
            _die()


def _kind(path: str) -> str:
    """commit | checkpoint_part1 | checkpoint | last_checkpoint | other, from a file or temp name.

    Local temp files are named `.<final name>.<uuid hex>.tmp` (LocalStorage._temp_write).
    """
    name = os.path.basename(path)
    if name.endswith(".tmp"):
        name = name[1:].rsplit(".", 2)[0]
    if name == "_last_checkpoint":
        return "last_checkpoint"
    parsed = parse_name(name)
    if parsed is None:
        return "other"
    if parsed.kind == "commit":
        return "commit"
    return "checkpoint_part1" if parsed.parts > 1 and parsed.part == 1 else "checkpoint"


def install_local(trap: Trap) -> None:
    real_fsync, real_link, real_replace = os.fsync, os.link, os.replace

    def fsync(fd: int) -> None:
        kind = _kind(os.readlink(f"/proc/self/fd/{fd}"))
        point = {
            "commit": "commit_temp_write",
            "checkpoint": "checkpoint_temp_write",
            "checkpoint_part1": "checkpoint_temp_write",
            "last_checkpoint": "last_checkpoint_temp",
        }.get(kind)
        if point:
            trap.hit(point, lambda: os.ftruncate(fd, os.fstat(fd).st_size // 2))
        real_fsync(fd)

    def link(src: Any, dst: Any, *a: Any, **kw: Any) -> None:
        if _kind(str(dst)) == "commit":
            trap.hit("commit_before_link")
            real_link(src, dst, *a, **kw)
            trap.hit("commit_after_link")
            return
        real_link(src, dst, *a, **kw)

    def replace(src: Any, dst: Any, *a: Any, **kw: Any) -> None:
        kind = _kind(str(dst))
        if kind == "last_checkpoint":
            trap.hit("last_checkpoint_replace")
        real_replace(src, dst, *a, **kw)
        if kind == "checkpoint_part1":
            trap.hit("checkpoint_part")

    os.fsync, os.link, os.replace = fsync, link, replace  # type: ignore[assignment]


def install_object_store(trap: Trap) -> None:
    real_put, real_write = FsspecStorage.put_if_absent, FsspecStorage.write

    def put_if_absent(self: FsspecStorage, key: str, data: bytes) -> None:
        is_commit = _kind(key) == "commit"  # savepoint records are put-if-absent too
        if is_commit:
            trap.hit("commit_before_put")
        real_put(self, key, data)
        if is_commit:
            trap.hit("commit_after_put")

    def write(self: FsspecStorage, key: str, data: bytes) -> None:
        kind = _kind(key)
        if kind == "last_checkpoint":
            trap.hit("last_checkpoint_put")
        elif kind.startswith("checkpoint"):
            trap.hit("checkpoint_put")
        real_write(self, key, data)
        if kind == "checkpoint_part1":
            trap.hit("checkpoint_part")

    FsspecStorage.put_if_absent = put_if_absent  # type: ignore[method-assign]
    FsspecStorage.write = write  # type: ignore[method-assign]


def install_common(trap: Trap) -> None:
    real_write_table = pq.write_table
    real_write_checkpoint = table_mod.write_checkpoint

    def write_table(table: Any, where: Any, *a: Any, **kw: Any) -> None:
        if hasattr(where, "write") and not hasattr(where, "getvalue"):  # a data file, not a checkpoint
            trap.hit("data_write", lambda: (where.write(b"PAR1 torn"), where.flush()))
        real_write_table(table, where, *a, **kw)

    def write_checkpoint(*a: Any, **kw: Any) -> Any:
        trap.hit("after_commit")
        return real_write_checkpoint(*a, **kw)

    writer_mod.pq.write_table = write_table  # type: ignore[attr-defined]
    table_mod.write_checkpoint = write_checkpoint  # type: ignore[attr-defined]


def install_maintenance(trap: Trap, t: Table) -> dict[str, str | None]:
    """Hooks on this table's storage object (instance attributes shadow the class methods)."""
    storage = t.storage
    ctx: dict[str, str | None] = {"op": None}
    real_write, real_delete, real_put = storage.write, storage.delete, storage.put_if_absent
    real_restore_commit = restore_mod._commit

    def write(key: str, data: bytes) -> None:
        real_write(key, data)
        if key.startswith("_savepoints/") and key.endswith(".parquet"):
            trap.hit("savepoint_manifest")

    def delete(key: str) -> None:
        real_delete(key)
        if ctx["op"] == "vacuum":
            trap.hit("vacuum_delete")

    def put_if_absent(key: str, data: bytes) -> None:
        real_put(key, data)
        if ctx["op"] == "restore" and _kind(key) == "commit":
            trap.hit("restore_commit_landed")

    def restore_commit(*a: Any, **kw: Any) -> int:
        trap.hit("restore_before_commit")
        return real_restore_commit(*a, **kw)  # type: ignore[no-any-return]

    storage.write, storage.delete, storage.put_if_absent = write, delete, put_if_absent  # type: ignore[method-assign]
    restore_mod._commit = restore_commit  # type: ignore[attr-defined]
    return ctx


def _weights(point: str) -> dict[str, float]:
    """Chance per iteration of each maintenance operation (the rest are appends)."""
    w = {"delete": 0.2, "savepoint": 0.1, "restore": 0.1, "vacuum": 0.15}
    boost = {
        "savepoint_manifest": "savepoint",
        "vacuum_delete": "vacuum",
        "restore_before_commit": "restore",
        "restore_commit_landed": "restore",
    }.get(point)
    if boost:
        w[boost] = 0.3
    return w


def _pick(rng: random.Random, weights: dict[str, float]) -> str:
    r = rng.random()
    for op, w in weights.items():
        if r < w:
            return op
        r -= w
    return "append"


def _partition_delete(t: Table, part: str, say: Any) -> None:
    txn = t.transaction("DELETE", {"predicate": f"part = '{part}'"})
    files = txn.read_files(f"part = '{part}'")
    if not files:
        return
    gone = []
    for f in files:
        with t.storage.fs.open(t.storage.resolve(f.path), "rb") as fh:
            gone += pq.read_table(fh, columns=["id"]).column("id").to_pylist()
        txn.remove(f)
    say({"intent": "delete", "add": [], "remove": gone})
    txn.commit()


def _maintain(t: Table, op: str, rng: random.Random, ctx: dict[str, str | None], say: Any, tag: str) -> None:
    if op == "savepoint":
        say({"savepoint": t.create_savepoint(f"sp-{tag}", reason="crash test").version})
        return
    ctx["op"] = op
    try:
        if op == "vacuum":
            say({"intent": "vacuum"})
            say({"vacuumed": t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False).deleted})
        elif op == "restore":
            sps = t.savepoints()
            if sps:
                sp = rng.choice(sps)
                say({"intent": "restore", "version": sp.version})
                say({"restored": t.restore(savepoint=sp.name, on_foreign_commits="force").committed})
    finally:
        ctx["op"] = None


def main(config: dict[str, Any]) -> None:
    trap = Trap(config["point"], config["at"])
    if config["backend"] == "local":
        install_local(trap)
    else:
        install_object_store(trap)
    install_common(trap)
    report = os.open(config["report"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def say(event: dict[str, Any]) -> None:
        os.write(report, (json.dumps(event) + "\n").encode())
        os.fsync(report)

    t = Table.open(config["uri"], storage_options=config["options"], checkpoint_part_size=config["part_size"])
    real_post_commit = t._post_commit

    def post_commit(version: int) -> None:
        say({"done": version})  # the commit landed; commit() has not returned yet
        real_post_commit(version)

    t._post_commit = post_commit  # type: ignore[method-assign]
    ctx = install_maintenance(trap, t)
    rng = random.Random(config["seed"])
    weights = _weights(config["point"])
    base = config["id_base"]
    for i in range(config["max_commits"]):
        part = f"p{rng.randrange(3)}"
        op = _pick(rng, weights)
        if op == "delete":
            _partition_delete(t, part, say)
            continue
        if op != "append":
            _maintain(t, op, rng, ctx, say, f"{config['seed']}-{i}")
            continue
        new = [base + i * 10 + j for j in range(rng.randint(1, 3))]
        say({"intent": "append", "add": new, "remove": []})
        t.write(rows(new, part))
    os.close(report)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
