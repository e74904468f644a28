"""Multi-table releases (engine.releases) under concurrency and crashes, on local disk and S3 (moto).

Four tables t1..t4 (one `batch` int64 column). Publisher A owns t1 and t2, publisher B t3 and t4:
round n writes batch n to both of the publisher's tables (one commit each), then publishes those two
versions with publish id `<publisher>-<n>`. A cut is mixed when t1 and t2 (or t3 and t4) hold
different batches.

`test_two_publishers_four_readers`: two publisher and four reader processes. The publishers start
their rounds on the ticks of one clock, so their publishes race (no lock: put-if-absent records,
re-based on the winner), until the readers are done; each reader makes `SIZES` reads of
`Releases.current()` (two read through `Release.snapshot(uri)`, two through
`Table.snapshot(release=r)`). Checked:
- every read sees an unmixed cut: t1 and t2 hold exactly the batches 1..n for one n, t3 and t4 for one
  m (a reader reads the batches from the last n it saw on: a table that went back reads nothing);
- per reader the sequence and every table's version never decrease, and every release a reader saw is
  exactly the record the log holds for that sequence, with the batches its versions hold;
- afterwards the records are 0..K with no gap, K + 1 = every publish, each publish id exactly once, at
  the sequence its publisher was told (a publisher's in its order); each record is the whole cut (its
  publisher's two tables at the versions it published, the others as in the record before), versions
  never go back along the log, and record K names each table's last published version;
- every reader made its reads: 1,000 in total on local disk (2,000 with `TXNLOG_FULL=1`), 120 on S3
  (1,000). A read on moto costs ~35 requests and a publish ~90 (the records `_find` and `_prune`
  read), ~25 ms each on a loaded 2-core machine, so 1,000 S3 reads took over 15 minutes in CI; 120
  still see publishes race on every tick of the shared clock.

`test_publisher_killed_at_every_step`: a publisher child is SIGKILLed right after its k-th storage
write of a publish (write / put_if_absent / delete: the holds in the tables, the record, the id
marker, the pruning of old holds), k = 1, 2, ... until a publish completes (CRASH_CYCLES publishes).
After every kill: a fresh `Releases.open(...).current()` is the old release or the new one (the new
one exactly when the record's put landed) and every record reads; every other kill point another
publisher publishes before the retry; a vacuum of every table with retention 0 keeps the files of the
versions the current release names (its snapshots read the expected batch); the same publish run again
(same publish id) converges to exactly one record for that id (the killed run's record when it landed,
found by its marker or behind the other publisher's record), and the current release's versions of
the publisher's tables are held.

The last three tests are the smallest reproducers of the engine bugs the two above found: holds
pruned by publish id while releases in the window still name their versions (a version carried over
from an older publish; a newer record of a racing publisher), so vacuum deletes files the current
release reads; and `holds()` failing on S3 when a hold folder empties between its two listings, which
kills a publisher of test_two_publishers_four_readers[s3] after its record landed.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Release, Releases, Table
from airflow_txnlog.engine.maintenance.release_records import holds
from airflow_txnlog.engine.storage import FsspecStorage, LocalStorage
from tests.reliability._util import finish_worker
from tests.reliability.conftest import FULL, Backend, report_figures

SCHEMA = pa.schema([("batch", pa.int64())])
TABLES = ("t1", "t2", "t3", "t4")
OWNED = {"A": ("t1", "t2"), "B": ("t3", "t4")}
READERS = 4
PROPERTIES = {"delta.checkpointInterval": "3"}  # a reader loads a version from a checkpoint + <= 2 commits
SIZES = {"local": 500 if FULL else 250, "s3": 250 if FULL else 30}  # reads per reader (4 readers)
# A publisher starts its rounds on the ticks of a shared clock (one tick in PAUSE seconds): the two
# publish at the same moments (races), and leave the readers CPU in between.
PAUSE = {"local": 0.25, "s3": 1.5}
MAX_ROUNDS = 400  # per publisher, a bound on the tables' length should the readers be slow
# Publishes killed at every step (each costs one run per storage write it makes, plus one that completes).
CRASH_CYCLES = {"local": 4 if FULL else 2, "s3": 3 if FULL else 1}
CRASH_WINDOW = 1  # the crash log's rollback window: small, so that every publish prunes old holds
MUTATORS = ("write", "put_if_absent", "delete", "delete_many")


def _batch(n: int) -> pa.Table:
    return pa.table({"batch": pa.array([n], pa.int64())})


def _setup(backend: Backend, *, rollback_window: int = 5) -> tuple[str, dict[str, str]]:
    uris = {name: backend.new_uri(name) for name in TABLES}
    for uri in uris.values():
        Table.create(uri, schema=SCHEMA, properties=PROPERTIES, storage_options=backend.options)
    log = backend.new_uri("release-log")
    Releases.create(
        log,
        storage_options=backend.options,
        table_storage_options=backend.options,
        rollback_window=rollback_window,
    )
    return log, uris


def _open_log(log: str, options: dict[str, Any] | None) -> Releases:
    return Releases.open(log, storage_options=options, table_storage_options=options)


def _version(release: Release, uri: str) -> int | None:
    try:
        return release.version_of(uri)
    except KeyError:
        return None


# ---------------------------------------------------------------------------------------------------
# processes of test_two_publishers_four_readers (spawned: module-level functions)


def run_publisher(cfg: dict[str, Any], barrier: Any, stop: Any) -> None:
    """Rounds n = 1, 2, ... until `stop` (the readers are done): batch n into both own tables, then
    publish them as `<name>-<n>`."""
    opts, name = cfg["options"], cfg["name"]
    log = _open_log(cfg["log"], opts)
    own = {t: Table.open(cfg["tables"][t], storage_options=opts) for t in OWNED[name]}
    lost = Counter[str]()
    real_put = log._storage.put_if_absent

    def put_if_absent(key: str, data: bytes) -> None:  # counts the races this publisher lost
        try:
            real_put(key, data)
        except FileExistsError:
            lost[key.split("/", 1)[0]] += 1
            raise

    log._storage.put_if_absent = put_if_absent  # type: ignore[method-assign]
    published = []
    barrier.wait(timeout=300)
    started = time.monotonic()
    n = 0
    while not stop.is_set() and n < MAX_ROUNDS:
        n += 1
        versions = {t: table.write(_batch(n)) for t, table in own.items()}
        release = log.publish({cfg["tables"][t]: v for t, v in versions.items()}, publish_id=f"{name}-{n}")
        published.append({"n": n, "sequence": release.sequence, "versions": versions})
        time.sleep(cfg["pause"] - time.time() % cfg["pause"])  # both on one clock: their publishes race
    result = {"published": published, "races_lost": lost["releases"], "seconds": time.monotonic() - started}
    finish_worker(cfg["out"], result)


def _batches(snap: Any, floor: int) -> list[int]:
    """The table's batches >= floor (files below it are skipped by their statistics)."""
    return sorted(snap.to_arrow(columns=["batch"], filter=f"batch >= {floor}").column("batch").to_pylist())


def run_reader(cfg: dict[str, Any], barrier: Any) -> None:
    """Follow the current release for `cfg["reads"]` reads (the publishers go on until every reader is
    done); report every read (sequence, versions, the batch each pair holds) and every violation."""
    opts, uris = cfg["options"], cfg["tables"]
    log = _open_log(cfg["log"], opts)
    cached = cfg["reader"] % 2 == 1  # odd readers: Table.snapshot(release=r); even: Release.snapshot
    tables = {t: Table.open(uri, storage_options=opts) for t, uri in uris.items()} if cached else {}
    floors = {"A": 1, "B": 1}
    last_seq, last_versions = -1, dict.fromkeys(TABLES, -1)
    reads: list[list[Any]] = []
    errors: list[str] = []
    mixed = empty_polls = 0
    barrier.wait(timeout=300)
    started = time.monotonic()
    while len(reads) < cfg["reads"] and len(errors) < 20:
        try:
            release = log.current()
            if release is None:
                empty_polls += 1
                time.sleep(0.005)
                continue
            versions = {t: _version(release, uris[t]) for t in TABLES}
            if release.sequence < last_seq:
                errors.append(f"sequence went back: {last_seq} then {release.sequence}")
            for t in TABLES:
                if (versions[t] if versions[t] is not None else -1) < last_versions[t]:
                    errors.append(f"{t} went back: version {last_versions[t]} then {versions[t]}")
            held: dict[str, int | None] = {}
            for owner, pair in OWNED.items():
                present = [versions[t] is not None for t in pair]
                if not any(present):
                    held[owner] = None
                    continue
                if not all(present):
                    errors.append(f"release {release.sequence} names only one of {pair}: {versions}")
                    mixed += 1
                    continue
                got = [
                    _batches(
                        tables[t].snapshot(release=release) if cached else release.snapshot(uris[t]),
                        floors[owner],
                    )
                    for t in pair
                ]
                top = got[0][-1] if got[0] else None
                if top is None or got[0] != got[1] or got[0] != list(range(floors[owner], top + 1)):
                    mixed += 1
                    errors.append(
                        f"release {release.sequence}: {pair} hold batches {got} (read from {floors[owner]})"
                    )
                    continue
                held[owner] = top
                floors[owner] = top
            last_seq = max(last_seq, release.sequence)
            last_versions = {
                t: max(last_versions[t], v if v is not None else -1) for t, v in versions.items()
            }
            reads.append([release.sequence, versions, held.get("A"), held.get("B")])
        except Exception as exc:  # every failure is reported to the test
            errors.append(f"{type(exc).__name__}: {exc}")
    finish_worker(
        cfg["out"],
        {
            "reads": reads,
            "errors": errors,
            "mixed": mixed,
            "empty_polls": empty_polls,
            "seconds": time.monotonic() - started,
        },
    )


# ---------------------------------------------------------------------------------------------------
# test_two_publishers_four_readers


def _records(log: Releases) -> list[Release]:
    return sorted(log.history(), key=lambda r: r.sequence)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "s3"], indirect=True)
def test_two_publishers_four_readers(
    backend: Backend, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reads_each = SIZES[backend.name]
    log_uri, uris = _setup(backend)
    ctx = mp.get_context("spawn")
    barrier, stop = ctx.Barrier(2 + READERS), ctx.Event()
    base = {"log": log_uri, "tables": uris, "options": backend.options}
    pub_out = {name: str(tmp_path / f"publisher-{name}.json") for name in OWNED}
    read_out = [str(tmp_path / f"reader-{k}.json") for k in range(READERS)]
    publishers = [
        ctx.Process(
            target=run_publisher,
            args=({**base, "name": name, "pause": PAUSE[backend.name], "out": pub_out[name]}, barrier, stop),
        )
        for name in OWNED
    ]
    readers = [
        ctx.Process(
            target=run_reader,
            args=({**base, "reader": k, "reads": reads_each, "out": read_out[k]}, barrier),
        )
        for k in range(READERS)
    ]
    started = time.monotonic()
    for p in [*publishers, *readers]:
        p.start()
    try:
        for p in readers:
            p.join(timeout=900)
    finally:
        stop.set()
        for p in publishers:
            p.join(timeout=900)
        for p in [*publishers, *readers]:
            if p.is_alive():
                p.kill()
    elapsed = time.monotonic() - started
    assert [p.exitcode for p in [*publishers, *readers]] == [0] * (2 + READERS)
    pubs = {name: json.loads(Path(pub_out[name]).read_text()) for name in OWNED}
    outs = [json.loads(Path(o).read_text()) for o in read_out]

    # Readers: no mixed cut, nothing went back, nothing failed.
    assert [o["errors"] for o in outs] == [[]] * READERS
    assert sum(o["mixed"] for o in outs) == 0

    # The log: 0..K, one record per publish, each publish id once, where its publisher was told.
    log = _open_log(log_uri, backend.options)
    records = _records(log)
    rounds = {name: len(out["published"]) for name, out in pubs.items()}
    assert [r.sequence for r in records] == list(range(sum(rounds.values())))
    ids = Counter(r.publish_id for r in records)
    assert ids == Counter(f"{name}-{n}" for name in OWNED for n in range(1, rounds[name] + 1))
    # version -> batch of every table, from the publishers' reports
    batch_of: dict[str, dict[int, int]] = {t: {} for t in TABLES}
    by_id: dict[str, dict[str, Any]] = {}
    for name, out in pubs.items():
        assert [p["n"] for p in out["published"]] == list(range(1, rounds[name] + 1))
        for p in out["published"]:
            by_id[f"{name}-{p['n']}"] = p
            for t, v in p["versions"].items():
                batch_of[t][v] = p["n"]
        sequences = [p["sequence"] for p in out["published"]]
        assert sequences == sorted(sequences), f"{name}'s releases are out of order: {sequences}"
    previous: dict[str, int | None] = dict.fromkeys(TABLES)
    for r in records:
        name, _ = r.publish_id.split("-")
        mine = by_id[r.publish_id]
        assert mine["sequence"] == r.sequence, r
        assert r.kind == "publish" and r.log_id == log.id
        assert len(r.versions) == len({t for t in TABLES if previous[t] is not None} | set(OWNED[name]))
        versions = {t: _version(r, uris[t]) for t in TABLES}
        for t in TABLES:
            expected = mine["versions"][t] if t in OWNED[name] else previous[t]
            assert versions[t] == expected, f"record {r.sequence} is not the whole cut: {t}"
            if previous[t] is not None:  # a table stays in the cut, and never goes back
                assert versions[t] is not None and versions[t] >= previous[t], f"record {r.sequence}: {t}"
        for pair in OWNED.values():  # no record is a mixed cut
            x, y = (versions[t] for t in pair)
            assert (x is None) == (y is None)
            assert x is None or batch_of[pair[0]][x] == batch_of[pair[1]][y], r
        previous = versions
    last = {t: max(batch_of[t]) for t in TABLES}
    assert previous == last, "the last record does not name each table's last published version"

    # What each reader saw is the record the log holds, with the batches its versions hold.
    seen: set[int] = set()
    for o in outs:
        for seq, versions, top_a, top_b in o["reads"]:
            seen.add(seq)
            assert versions == {t: _version(records[seq], uris[t]) for t in TABLES}, seq
            for owner, top in (("A", top_a), ("B", top_b)):
                first = versions[OWNED[owner][0]]
                assert top == (None if first is None else batch_of[OWNED[owner][0]][first])
    total = sum(len(o["reads"]) for o in outs)
    assert total == READERS * reads_each
    report_figures(
        request,
        f"releases {backend.name}: 2 publishers, {READERS} readers",
        {
            "reads": total,
            "mixed_cuts": 0,
            "releases": len(records),
            **{f"publishes.{name}": n for name, n in rounds.items()},
            "releases_seen_by_readers": len(seen),
            "races_lost": sum(p["races_lost"] for p in pubs.values()),
            "seconds": round(elapsed, 1),
        },
    )


# ---------------------------------------------------------------------------------------------------
# test_publisher_killed_at_every_step


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _arm(at: int, say: Callable[[dict[str, Any]], None]) -> None:
    """Kill this process right after its `at`-th storage write (any backend), reporting each first."""
    count = [0]

    def wrap(cls: type, method: str) -> None:
        real = getattr(cls, method)

        def mutate(self: Any, key: Any, *a: Any, **kw: Any) -> Any:
            out = real(self, key, *a, **kw)
            count[0] += 1
            say({"call": method, "root": self.root, "key": key if isinstance(key, str) else list(key)})
            if count[0] == at:
                _die()
            return out

        setattr(cls, method, mutate)

    for cls in (LocalStorage, FsspecStorage):
        for method in MUTATORS:
            if method in vars(cls):
                wrap(cls, method)


def run_killed_publisher(cfg: dict[str, Any]) -> None:
    """Write batch n into A's tables, then publish them, dying after storage write number `at`."""
    fd = os.open(cfg["report"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def say(event: dict[str, Any]) -> None:
        os.write(fd, (json.dumps(event) + "\n").encode())
        os.fsync(fd)

    opts = cfg["options"]
    log = _open_log(cfg["log"], opts)
    versions = {
        uri: Table.open(uri, storage_options=opts).write(_batch(cfg["batch"]), mode="overwrite")
        for uri in cfg["publish"]
    }
    say({"versions": versions})
    _arm(cfg["at"], say)
    release = log.publish(versions, publish_id=cfg["publish_id"])
    say({"published": release.sequence})
    os.close(fd)
    os._exit(0)


def _step(call: dict[str, Any], log_uri: str) -> str:
    """What a reported storage write was: hold / record / marker / prune (or another write)."""
    key = call["key"] if isinstance(call["key"], str) else ",".join(call["key"])
    in_log = call["root"].rstrip("/").endswith(log_uri.rstrip("/").rsplit("/", 1)[-1])
    if in_log and key.startswith("releases/") and call["call"] == "put_if_absent":
        return "record"
    if in_log and key.startswith("ids/"):
        return "marker"
    if key.startswith("_releases/"):
        return "hold" if call["call"] == "write" else "prune"
    return f"{call['call']}:{key}"


class CrashModel:
    """The tables' batches by version and the expected current release, kept by the test."""

    def __init__(self, backend: Backend, log_uri: str, uris: dict[str, str]) -> None:
        self.backend, self.log_uri, self.uris = backend, log_uri, uris
        self.batch_of: dict[str, dict[int, int]] = {t: {} for t in TABLES}
        self.rounds = Counter[str]()

    def write(self, name: str) -> tuple[int, dict[str, int]]:
        """The next batch of publisher `name` written (overwrite) into its tables, in this process."""
        self.rounds[name] += 1
        n = self.rounds[name]
        versions = {}
        for t in OWNED[name]:
            versions[t] = Table.open(self.uris[t], storage_options=self.backend.options).write(
                _batch(n), mode="overwrite"
            )
            self.batch_of[t][versions[t]] = n
        return n, versions

    def publish(self, name: str) -> Release:
        n, versions = self.write(name)
        log = _open_log(self.log_uri, self.backend.options)
        return log.publish({self.uris[t]: v for t, v in versions.items()}, publish_id=f"{name}-{n}")

    def check_readable(self, release: Release) -> None:
        """Every table of `release` reads at its version: exactly the batch written there."""
        for t in TABLES:
            v = _version(release, self.uris[t])
            if v is None:
                continue
            got = release.snapshot(self.uris[t]).to_arrow(columns=["batch"]).column("batch").to_pylist()
            assert got == [self.batch_of[t][v]], f"release {release.sequence}: {t}@{v} reads {got}"


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "s3"], indirect=True)
def test_publisher_killed_at_every_step(
    backend: Backend, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    log_uri, uris = _setup(backend, rollback_window=CRASH_WINDOW)
    model = CrashModel(backend, log_uri, uris)
    for _ in range(2):  # older releases whose holds the killed publishes prune
        model.publish("A")
        model.publish("B")
    ctx = mp.get_context("spawn")
    steps, between, outcomes = Counter[str](), Counter[str](), Counter[str]()
    cycles = runs = vacuumed = 0
    at = 1
    started = time.monotonic()
    while cycles < CRASH_CYCLES[backend.name]:
        runs += 1
        old = _open_log(log_uri, backend.options).current()
        assert old is not None
        n = model.rounds["A"] + 1
        pid = f"A-{n}"
        report = tmp_path / f"killed-{runs}.jsonl"
        cfg = {
            "log": log_uri,
            "options": backend.options,
            "publish": [uris["t1"], uris["t2"]],
            "batch": n,
            "publish_id": pid,
            "at": at,
            "report": str(report),
        }
        proc = ctx.Process(target=run_killed_publisher, args=(cfg,))
        proc.start()
        proc.join(timeout=300)
        assert proc.exitcode in (0, -signal.SIGKILL), f"{pid} at write {at}: exit code {proc.exitcode}"
        events = [json.loads(line) for line in report.read_text().splitlines()]
        model.rounds["A"] = n
        written = events[0]["versions"]  # {uri: version} of batch n in t1 and t2
        for t, uri in (("t1", uris["t1"]), ("t2", uris["t2"])):
            model.batch_of[t][written[uri]] = n
        calls = [e for e in events if "call" in e]
        kinds = [_step(c, log_uri) for c in calls]
        assert all(k in ("hold", "record", "marker", "prune") for k in kinds), kinds
        landed = "record" in kinds
        killed = proc.exitcode == -signal.SIGKILL
        if killed:
            assert len(calls) == at, (at, kinds)
            steps[f"after_{kinds[-1]}"] += 1

        # The old release or the new one, nothing else; every record reads.
        log = _open_log(log_uri, backend.options)
        current = log.current()
        assert current is not None
        if landed:
            assert current.sequence == old.sequence + 1 and current.publish_id == pid, (at, kinds)
            assert {t: _version(current, uris[t]) for t in TABLES} == {
                t: written.get(uris[t], _version(old, uris[t])) for t in TABLES
            }
            outcomes["new"] += 1
        else:
            assert current.to_json() == old.to_json(), (at, kinds)
            outcomes["old"] += 1
        assert [r.sequence for r in _records(log)] == list(range(current.sequence + 1))

        # Another publisher may publish before the retry (every other kill point, alternating by cycle,
        # so that each point is followed by one in some cycle when there are two).
        if (at + cycles) % 2 == 1:
            model.publish("B")
            between[f"after_{kinds[-1]}" if killed else "completed"] += 1

        # Vacuum with retention 0 keeps every file of the versions the current release names.
        for uri in uris.values():
            vacuumed += (
                Table.open(uri, storage_options=backend.options)
                .vacuum(dry_run=False, retention_hours=0, enforce_retention=False)
                .deleted
            )
        model.check_readable(_open_log(log_uri, backend.options).current())  # type: ignore[arg-type]

        # The same publish again converges to exactly one record for its id.
        first = next((r for r in _records(log) if r.publish_id == pid), None)
        retry = {uris["t1"]: written[uris["t1"]], uris["t2"]: written[uris["t2"]]}
        again = _open_log(log_uri, backend.options).publish(retry, publish_id=pid)
        if first is not None:
            assert again.sequence == first.sequence and again.to_json() == first.to_json()
        records = _records(log)
        assert [r.sequence for r in records] == list(range(len(records)))
        assert [r.publish_id for r in records].count(pid) == 1
        assert _version(again, uris["t1"]) == written[uris["t1"]]
        assert _version(again, uris["t2"]) == written[uris["t2"]]
        assert _open_log(log_uri, backend.options).publish(retry, publish_id=pid) == again
        current = log.current()
        assert current is not None
        model.check_readable(current)
        for t in ("t1", "t2"):  # the versions of A's tables in the current release are held
            storage = Table.open(uris[t], storage_options=backend.options).storage
            held = {v for (log_id, _), (v, _) in holds(storage).items() if log_id == log.id}
            assert _version(current, uris[t]) in held

        if killed:
            at += 1
        else:
            assert first is not None and events[-1] == {"published": first.sequence}, events
            cycles += 1
            at = 1
    assert {"after_hold", "after_record", "after_marker", "after_prune"} <= set(steps), steps
    assert between["after_record"] >= 1, between  # a retry found its record behind another one
    report_figures(
        request,
        f"releases {backend.name}: publisher killed at every step",
        {
            "runs": runs,
            "killed": sum(steps.values()),
            **{f"killed.{k}": v for k, v in sorted(steps.items())},
            **{f"current.{k}": v for k, v in sorted(outcomes.items())},
            **{f"other_publisher_then.{k}": v for k, v in sorted(between.items())},
            "releases": len(_records(_open_log(log_uri, backend.options))),
            "vacuumed_files": vacuumed,
            "seconds": round(time.monotonic() - started, 1),
        },
    )


# ---------------------------------------------------------------------------------------------------
# Holds: the smallest reproducers of the engine bugs the tests above found. A release must keep every
# version it names for as long as it is in the rollback window (engine.releases._prune deletes holds
# by publish id, not by the versions the releases in the window name).


def _overwrite(t: Table, n: int) -> int:
    return t.write(_batch(n), mode="overwrite")


def _read_after_vacuum(release: Release, t: Table) -> list[int]:
    t.vacuum(dry_run=False, retention_hours=0, enforce_retention=False)
    return release.snapshot(t.uri).to_arrow(columns=["batch"]).column("batch").to_pylist()


def test_a_version_carried_over_by_later_releases_stays_held(tmp_path: Path) -> None:
    """B publishes t3 once, A publishes t1 more often than the rollback window: every later record
    carries t3 at B's version, yet A's pruning deletes B's hold (its publish id left the window)."""
    t1, t3 = (Table.create(str(tmp_path / n), schema=SCHEMA) for n in ("t1", "t3"))
    log = Releases.create(str(tmp_path / "log"), rollback_window=1)
    log.publish({t3.uri: _overwrite(t3, 1)}, publish_id="B-1")
    for n in (1, 2, 3):
        log.publish({t1.uri: _overwrite(t1, n)}, publish_id=f"A-{n}")
    current = log.current()
    assert current is not None and current.version_of(t3.uri) == 1
    _overwrite(t3, 2)  # B's next batch, not published yet
    assert _read_after_vacuum(current, t3) == [1]


def test_pruning_keeps_the_holds_of_a_newer_record(tmp_path: Path) -> None:
    """A's record lands at sequence s; B publishes s + 1 (record and id marker) before A prunes. A's
    window ends at s, so B's hold (publish id not in it, marker present) is deleted, though record
    s + 1 is the current release."""
    t1, t3 = (Table.create(str(tmp_path / n), schema=SCHEMA) for n in ("t1", "t3"))
    log_uri = str(tmp_path / "log")
    Releases.create(log_uri)  # the default window (5)
    a, b = Releases.open(log_uri), Releases.open(log_uri)
    b.publish({t3.uri: _overwrite(t3, 1)}, publish_id="B-1")
    real_prune = a._prune

    def prune_after_b(record: Release) -> None:  # B's whole publish runs between A's record and prune
        b.publish({t3.uri: _overwrite(t3, 2)}, publish_id="B-2")
        real_prune(record)

    a._prune = prune_after_b  # type: ignore[method-assign]
    a.publish({t1.uri: _overwrite(t1, 1)}, publish_id="A-1")
    current = Releases.open(log_uri).current()
    assert current is not None and current.publish_id == "B-2"
    _overwrite(t3, 3)  # B's next batch, not published yet
    assert _read_after_vacuum(current, t3) == [2]


@pytest.mark.parametrize("backend", ["s3"], indirect=True)
def test_listing_holds_survives_a_hold_folder_emptied_meanwhile(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an object store a folder is its objects: `holds()` lists `_releases/`, sees the log's
    folder, and lists it; a publisher pruning the folder's last hold in between (as in
    test_two_publishers_four_readers on S3, where a publisher died of it after its record landed)
    makes the second listing raise FileNotFoundError, and every caller with it (vacuum, log cleanup,
    publish's pruning)."""
    uri = backend.new_uri("t3")
    t3 = Table.create(uri, schema=SCHEMA, storage_options=backend.options)
    log = Releases.create(
        backend.new_uri("log"), storage_options=backend.options, table_storage_options=backend.options
    )
    log.publish({t3.uri: _overwrite(t3, 1)}, publish_id="B-1")
    (key,) = [f"_releases/{log.id}/{f.name}" for f in t3.storage.list_dir(f"_releases/{log.id}")]
    fs, real_ls = t3.storage.fs, t3.storage.fs.ls

    def ls(path: str, *a: Any, **kw: Any) -> Any:
        out = real_ls(path, *a, **kw)
        if path.rstrip("/").endswith("/_releases"):  # another process prunes the last hold now
            t3.storage.delete(key)
        return out

    monkeypatch.setattr(fs, "ls", ls)
    t3.vacuum(dry_run=True)
