# ruff: noqa: PLC0415
"""UniForm: what the Iceberg metadata costs a commit (issue 44).

Two tables of the same synthetic files (a string partition column `part` of 100 values, every add's
stats `{"numRecords": 10}`; no data file exists: the sync reads only the log):

    uniform   {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}
              (column mapping `name` is set by the engine); every commit then syncs the Iceberg
              metadata under `<table>/metadata/` (Table._post_commit -> iceberg_sync.after_commit)
    plain     {"delta.columnMapping.mode": "name"}

Each is built with `--files` adds in commits of `--batch` (the UniForm table's first commit is its
first sync: a full conversion of that commit's files; the others are incremental), then
`--commits` commits of `--adds` adds each, made the same way on both tables
(`t.transaction("WRITE")`, `txn.add(AddFile(...))` x adds, `txn.commit()`) and timed end to end,
post-commit work included (the checkpoint every 10th version on both, the sync on UniForm). A full
conversion of all `--files` files is timed apart, on a copy of the UniForm table's log
(`Table.uniform_sync()` with no metadata yet).

Each table lives in its own worker process (its own peak RSS); the parent drives them in lockstep,
one commit at a time, alternating which goes first, so load from other work falls on both alike.
On the UniForm side, after every commit (untimed): the new files under `metadata/` and their sizes,
`metadata/version-hint.text` (it must advance by one per commit: the hook ran), and the SyncResult
the hook returned (`iceberg_sync.after_commit` is wrapped to record it and its duration; the engine
is not changed). At the end the Iceberg snapshot's live files are checked against the Delta
snapshot's (same paths, same record counts).

    python -m benchmarks.uniform_commits --files 100000 --commits 1000 --write

The goal (issue 44): median commit time with UniForm <= 2x without. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import json
import logging
import math
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "benchmarks.md"
START, END = "<!-- uniform-commits:start -->", "<!-- uniform-commits:end -->"
HEADING = "## UniForm: Iceberg metadata per commit (issue 44)"
PARTITIONS = 100
UNIFORM_PROPS = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}
PLAIN_PROPS = {"delta.columnMapping.mode": "name"}
STATS = '{"numRecords": 10}'


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------- worker
class Worker:
    """One table, driven by commands on stdin (one JSON answer per line on stdout)."""

    def __init__(self, kind: str, path: Path) -> None:
        import pyarrow as pa

        from airflow_txnlog.engine import Table
        from airflow_txnlog.engine.uniform import iceberg_sync

        self.kind, self.path = kind, path
        self.uniform = kind == "uniform"
        self.hook: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        original = iceberg_sync.after_commit

        def recorded(storage: Any, snapshot: Any) -> Any:  # observes the hook; changes nothing
            t0 = time.perf_counter()
            result = original(storage, snapshot)
            took = time.perf_counter() - t0
            self.hook.append({"seconds": took, "result": None if result is None else result.__dict__})
            return result

        iceberg_sync.after_commit = recorded  # type: ignore[assignment]  # (table.py calls it by module)

        class Catch(logging.Handler):
            def emit(inner, record: logging.LogRecord) -> None:
                self.warnings.append(record.getMessage())

        logging.getLogger("airflow_txnlog").addHandler(Catch(logging.WARNING))
        shutil.rmtree(path, ignore_errors=True)
        schema = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("part", pa.string())])
        props = UNIFORM_PROPS if self.uniform else PLAIN_PROPS
        self.table = Table.create(str(path), schema=schema, partition_by=["part"], properties=props)
        self.part = self._physical("part")
        self.k = 0  # files added so far (paths are unique)
        self.known: set[str] = set()

    def _physical(self, column: str) -> str:
        from airflow_txnlog.engine.features import column_mapping
        from airflow_txnlog.engine.schema import schema_from_json

        logical = schema_from_json(self.table.snapshot().metadata.schema_string)
        return column_mapping.physical_name(logical.field(column))

    def _adds(self, n: int) -> list[Any]:
        from airflow_txnlog.engine import AddFile

        now = int(time.time() * 1000)
        out = []
        for _ in range(n):
            k, self.k = self.k, self.k + 1
            value = f"p{k % PARTITIONS:02d}"
            path = f"part={value}/part-{k:07d}-bench.c000.snappy.parquet"
            out.append(AddFile(path, {self.part: value}, 4096 + k % 1000, now, stats=STATS))
        return out

    def _hint(self) -> int | None:
        try:
            return int((self.path / "metadata" / "version-hint.text").read_text().strip())
        except FileNotFoundError:
            return None

    def _new_metadata_files(self) -> dict[str, int]:
        folder = self.path / "metadata"
        if not folder.exists():
            return {}
        new = {}
        with os.scandir(folder) as it:
            for e in it:
                if e.name not in self.known and e.name != "version-hint.text":
                    new[e.name] = e.stat().st_size
        self.known.update(new)
        return new

    def commit(self, n: int) -> dict[str, Any]:
        adds = self._adds(n)
        hint_before = self._hint()
        self.hook.clear()
        t0 = time.perf_counter()
        txn = self.table.transaction("WRITE")
        for a in adds:
            txn.add(a)
        version = txn.commit()
        took = time.perf_counter() - t0
        out: dict[str, Any] = {"version": version, "seconds": took}
        if self.uniform:
            new = self._new_metadata_files()
            hint = self._hint()
            reflected = None
            if hint is not None:
                meta = json.loads((self.path / "metadata" / f"v{hint}.metadata.json").read_bytes())
                reflected = int(meta["properties"]["delta-version"])
            hook = self.hook[-1] if self.hook else None
            out.update(
                bytes=sum(new.values()),
                json_bytes=sum(s for k, s in new.items() if k.endswith(".metadata.json")),
                avro_bytes=sum(s for k, s in new.items() if k.endswith(".avro")),
                new_files=len(new),
                hint_before=hint_before,
                hint=hint,
                reflected=reflected,
                hook_seconds=None if hook is None else hook["seconds"],
                sync=None if hook is None else hook["result"],
            )
        return out

    def full_conversion(self) -> dict[str, Any]:
        """All the files of the table converted at once, on a copy of its log (no metadata yet)."""
        from airflow_txnlog.engine import Table

        copy = self.path.parent / f"{self.path.name}-full"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(self.path / "_delta_log", copy / "_delta_log")
        t = Table.open(str(copy))
        files = t.snapshot().num_files  # (the snapshot load is not the conversion: untimed)
        t0 = time.perf_counter()
        result = t.uniform_sync()
        took = time.perf_counter() - t0
        manifests = self._manifests(copy)
        shutil.rmtree(copy, ignore_errors=True)
        return {"seconds": took, "files": files, "result": result.__dict__, "manifests": manifests}

    @staticmethod
    def _manifests(path: Path) -> list[dict[str, Any]]:
        from airflow_txnlog.engine.storage import storage_for
        from airflow_txnlog.engine.uniform import iceberg_sync
        from airflow_txnlog.engine.uniform.iceberg_io import StorageIO

        storage = storage_for(str(path))
        found = iceberg_sync.current(storage)
        assert found is not None
        io_ = StorageIO(storage, found[1].location)
        snap = found[1].current_snapshot()
        assert snap is not None
        return [
            {
                "added": m.added_files_count or 0,
                "existing": m.existing_files_count or 0,
                "deleted": m.deleted_files_count or 0,
                "bytes": m.manifest_length,
            }
            for m in snap.manifests(io_)
        ]

    def verify(self) -> dict[str, Any]:
        """The Iceberg snapshot's live files against the Delta snapshot's."""
        from airflow_txnlog.engine.storage import storage_for
        from airflow_txnlog.engine.uniform import iceberg_sync
        from airflow_txnlog.engine.uniform.iceberg_io import StorageIO

        storage = storage_for(str(self.path))
        number, meta = iceberg_sync.current(storage)  # type: ignore[misc]
        io_ = StorageIO(storage, meta.location)
        snap = meta.current_snapshot()
        assert snap is not None
        live = {}
        for m in snap.manifests(io_):
            for e in m.fetch_manifest_entry(io_, discard_deleted=True):
                live[e.data_file.file_path] = e.data_file.record_count
        delta = self.table.snapshot()
        root = meta.location.rstrip("/")
        want = {f"{root}/{a.path}": a.num_records for a in delta.files()}
        return {
            "metadata_number": number,
            "delta_version": delta.version,
            "reflects": int(meta.properties["delta-version"]),
            "iceberg_files": len(live),
            "delta_files": len(want),
            "same_files": live == want,
            "snapshots_kept": len(meta.snapshots),
            "metadata_log": len(meta.metadata_log),
            "summary": dict(snap.summary.additional_properties) if snap.summary else {},
        }

    def handle(self, cmd: dict[str, Any]) -> dict[str, Any]:
        op = cmd["op"]
        if op == "build":
            out = []
            for _ in range(cmd["files"] // cmd["batch"]):
                out.append(self.commit(cmd["batch"]))
                log(f"{self.kind}: built v{out[-1]['version']} in {out[-1]['seconds']:.2f} s")
            if self.uniform:
                self.known.clear()
                self._new_metadata_files()  # (what the build wrote is not a commit's)
            return {"commits": out, "rss_kb": _rss_kb()}
        if op == "full":
            return self.full_conversion()
        if op == "commit":
            return self.commit(cmd["adds"])
        if op == "profile":
            prof = cProfile.Profile()
            t0 = time.perf_counter()
            prof.enable()
            for _ in range(cmd["commits"]):
                self.commit(cmd["adds"])
            prof.disable()
            took = time.perf_counter() - t0
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(45)
            tot = io.StringIO()
            pstats.Stats(prof, stream=tot).sort_stats("tottime").print_stats(25)
            return {"seconds": took, "cumulative": text.getvalue(), "tottime": tot.getvalue()}
        if op == "end":
            out = {"rss_kb": _rss_kb(), "warnings": self.warnings[:20], "n_warnings": len(self.warnings)}
            if self.uniform:
                out["manifests"] = self._manifests(self.path)
                out["verify"] = self.verify()
                folder = self.path / "metadata"
                sizes = [e.stat().st_size for e in os.scandir(folder)]
                out["metadata_dir"] = {"files": len(sizes), "bytes": sum(sizes)}
            return out
        raise ValueError(op)


def _rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def worker_main(kind: str, path: str) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    w = Worker(kind, Path(path))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        answer = w.handle(json.loads(line))
        print(json.dumps(answer), flush=True)
    return 0


# ----------------------------------------------------------------------------------------- parent
class Driver:
    def __init__(self, kind: str, path: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.uniform_commits", "--worker", kind, "--workdir", str(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO, bufsize=1,
        )  # fmt: skip
        self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited with {self.proc.wait()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    load = [round(x, 2) for x in os.getloadavg()]
    t_start = time.perf_counter()
    uni, plain = Driver("uniform", work / "uniform"), Driver("plain", work / "plain")
    data: dict[str, Any] = {"load_start": load}
    data["build_uniform"] = uni.ask(op="build", files=args.files, batch=args.batch)
    data["build_plain"] = plain.ask(op="build", files=args.files, batch=args.batch)
    data["full"] = uni.ask(op="full")
    log(f"full conversion of {data['full']['files']:,} files: {data['full']['seconds']:.2f} s")
    commits: dict[str, list[dict[str, Any]]] = {"uniform": [], "plain": []}
    for i in range(args.commits):
        order = [("uniform", uni), ("plain", plain)]
        for name, d in order if i % 2 == 0 else order[::-1]:
            commits[name].append(d.ask(op="commit", adds=args.adds))
        if (i + 1) % 100 == 0 or i + 1 == args.commits:
            u, p = commits["uniform"][-1], commits["plain"][-1]
            log(f"commit {i + 1}: uniform {u['seconds'] * 1000:.1f} ms ({u['bytes']:,} B, hint {u['hint']}), "
                f"plain {p['seconds'] * 1000:.1f} ms")  # fmt: skip
    data["commits"] = commits
    data["end_uniform"] = uni.ask(op="end")
    data["end_plain"] = plain.ask(op="end")
    if args.profile:
        prof = {"uniform": uni.ask(op="profile", commits=args.profile, adds=args.adds)}
        prof["plain"] = plain.ask(op="profile", commits=args.profile, adds=args.adds)
        data["profile"] = prof
    uni.close()
    plain.close()
    data["load_end"] = [round(x, 2) for x in os.getloadavg()]
    data["wall_s"] = time.perf_counter() - t_start
    return data


# ----------------------------------------------------------------------------------------- report
def _p(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def hook_check(commits: list[dict[str, Any]]) -> dict[str, Any]:
    """Did version-hint.text advance by one with every commit, to a metadata reflecting it?"""
    advanced = sum(1 for c in commits if c["hint_before"] is not None and c["hint"] == c["hint_before"] + 1)
    reflects = sum(1 for c in commits if c["reflected"] == c["version"])
    modes: dict[str, int] = {}
    for c in commits:
        mode = c["sync"]["mode"] if c["sync"] else "no result"
        modes[mode] = modes.get(mode, 0) + 1
    agree = sum(1 for c in commits if c["sync"] and c["sync"]["bytes_written"] == c["bytes"])
    return {"advanced": advanced, "reflects": reflects, "modes": modes, "bytes_agree": agree}


def report(args: argparse.Namespace, data: dict[str, Any]) -> str:
    u, p = data["commits"]["uniform"], data["commits"]["plain"]
    n = len(u)
    ums, pms = [c["seconds"] * 1000 for c in u], [c["seconds"] * 1000 for c in p]
    sync_ms = [c["hook_seconds"] * 1000 for c in u if c["hook_seconds"] is not None]
    interval = 10
    u_cp = [c["seconds"] * 1000 for c in u if c["version"] % interval == 0]
    p_cp = [c["seconds"] * 1000 for c in p if c["version"] % interval == 0]
    u_nc = [c["seconds"] * 1000 for c in u if c["version"] % interval != 0]
    p_nc = [c["seconds"] * 1000 for c in p if c["version"] % interval != 0]
    by = [c["bytes"] for c in u]
    js = [c["json_bytes"] for c in u]
    check = hook_check(u)
    merges = [(i + 1, c["bytes"]) for i, c in enumerate(u) if c["new_files"] > 3]
    merge_row = "| commits that merged the small manifests (4 new files) | none | | | |"
    if merges:
        merge_row = (
            f"| commits that merged the small manifests (4 new files) | {len(merges)}: commits "
            + ", ".join(f"{i:,}" for i, _ in merges[:3])
            + (", ..." if len(merges) > 3 else "")
            + f"; their bytes {merges[0][1]:,} growing to {merges[-1][1]:,} | | | |"
        )
    full = data["full"]
    bu, bp = data["build_uniform"]["commits"], data["build_plain"]["commits"]
    end_u, end_p = data["end_uniform"], data["end_plain"]
    manifests = end_u["manifests"]
    ver = end_u["verify"]
    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    ratio_med = statistics.median(ums) / statistics.median(pms)
    ratio_p95 = _p(ums, 0.95) / _p(pms, 0.95)
    at = {k: by[k - 1] for k in (1, n // 2, n) if 1 <= k <= n}
    cmd = (
        f"flock /tmp/txnlog-bench.lock .venv/bin/python -m benchmarks.uniform_commits --files {args.files} "
        f"--batch {args.batch} --commits {args.commits} --adds {args.adds}"
        + (" --write" if args.write else "")
    )

    def ms(x: float) -> str:
        return f"{x:.1f} ms"

    sizes = sorted(m["added"] + m["existing"] for m in manifests)
    lines = [
        START,
        f"Generated by `{cmd}` on {when}, git `{rev}`"
        + (" (with uncommitted changes: the UniForm work in progress)" if dirty else "")
        + f". Two tables of {args.files:,} synthetic files (partitioned by a string column of "
        f"{PARTITIONS} values, stats `{STATS}`, no data files), built in {args.files // args.batch} commits "
        f"of {args.batch:,} adds; then {n:,} commits of {args.adds} adds on each, made alike "
        "(`t.transaction()`, `txn.add(AddFile)`, `txn.commit()`), timed end to end with the post-commit "
        "work (a checkpoint every 10th version on both tables; the Iceberg sync on UniForm). The two "
        "tables are in two processes driven in lockstep, alternating which commits first. Load "
        f"average {data['load_start']} at start, {data['load_end']} at end (1/5/15 min; 2 cores, other "
        f"work running); {data['wall_s']:.0f} s in all.",
        "",
        "| measure | UniForm | plain (column mapping) | ratio | goal |",
        "|---|---:|---:|---:|---|",
        f"| commit, median | {ms(statistics.median(ums))} | {ms(statistics.median(pms))} | "
        f"{ratio_med:.2f}x | ≤ 2x: {'met' if ratio_med <= 2 else '**missed**'} |",
        f"| commit, median of the paired ratios (commit i on each, same moment) | | | "
        f"{statistics.median(a / b for a, b in zip(ums, pms, strict=True)):.2f}x | |",
        f"| commit, p95 | {ms(_p(ums, 0.95))} | {ms(_p(pms, 0.95))} | {ratio_p95:.2f}x | |",
        f"| commit, max | {ms(max(ums))} | {ms(max(pms))} | | |",
        f"| commit without checkpoint (9 in 10), median / p95 | {ms(statistics.median(u_nc))} / "
        f"{ms(_p(u_nc, 0.95))} | {ms(statistics.median(p_nc))} / {ms(_p(p_nc, 0.95))} | "
        f"{statistics.median(u_nc) / statistics.median(p_nc):.2f}x / "
        f"{_p(u_nc, 0.95) / _p(p_nc, 0.95):.2f}x | |",
        f"| commit with checkpoint (every 10th), median | {ms(statistics.median(u_cp))} | "
        f"{ms(statistics.median(p_cp))} | {statistics.median(u_cp) / statistics.median(p_cp):.2f}x | |",
        "| of which the Iceberg sync (`after_commit`), median / p95 / max | "
        f"{ms(statistics.median(sync_ms))} / "
        f"{ms(_p(sync_ms, 0.95))} / {ms(max(sync_ms))} | | | |",
        f"| bytes under `metadata/` per commit, median / p95 / max | {statistics.median(by):,.0f} / "
        f"{_p(by, 0.95):,} / {max(by):,} | | | |",
        "| bytes per commit at commit "
        + ", ".join(f"{k:,}" for k in at)
        + " | "
        + " / ".join(f"{v:,}" for v in at.values())
        + " | | | bounded |",
        f"| of which `v<N>.metadata.json`, median / max | {statistics.median(js):,.0f} / {max(js):,} | | | |",
        merge_row,
        f"| manifests in the current snapshot at the end | {len(manifests)} (live entries: "
        + ", ".join(f"{s:,}" for s in sizes[-4:][::-1])
        + (", ..." if len(sizes) > 4 else "")
        + f"; smallest {sizes[0]:,}) | | | |",
        f"| Iceberg files == Delta files at the end | {ver['iceberg_files']:,} == {ver['delta_files']:,}: "
        f"{'yes' if ver['same_files'] else '**no**'} (paths and record counts); metadata "
        f"v{ver['metadata_number']} reflects Delta v{ver['reflects']} of {ver['delta_version']} | | | |",
        f"| `version-hint.text` advanced by one with the commit | {check['advanced']:,} of {n:,} commits "
        f"(to a metadata of the commit's version: {check['reflects']:,}); sync modes "
        + ", ".join(f"{k} {v:,}" for k, v in check["modes"].items())
        + " | | | |",
        f"| peak RSS of the process | {end_u['rss_kb'] / 1024:,.0f} MiB | "
        f"{end_p['rss_kb'] / 1024:,.0f} MiB | "
        f"{end_u['rss_kb'] / end_p['rss_kb']:.2f}x | |",
        f"| build: {len(bu)} commits of {args.batch:,} adds, first / median of the rest | "
        f"{bu[0]['seconds']:.2f} s / {statistics.median(c['seconds'] for c in bu[1:]):.2f} s | "
        f"{bp[0]['seconds']:.2f} s / {statistics.median(c['seconds'] for c in bp[1:]):.2f} s | | |",
        f"| full conversion of all {full['files']:,} files (`uniform_sync()`, no metadata yet) | "
        f"{full['seconds']:.2f} s, {full['result']['bytes_written']:,} bytes, {len(full['manifests'])} "
        "manifests | | | |",
        "",
        f"The UniForm table's first build commit ({args.batch:,} files) is its first sync, a full conversion "
        f"of those files ({data['build_uniform']['commits'][0]['sync']['mode'] if bu[0]['sync'] else '?'}: "
        f"{bu[0]['hook_seconds']:.2f} s of its {bu[0]['seconds']:.2f} s); the later build commits sync "
        f"incrementally ({statistics.median(c['hook_seconds'] for c in bu[1:]):.2f} s each, median). At the "
        f"end `metadata/` holds {end_u['metadata_dir']['files']:,} files, {end_u['metadata_dir']['bytes']:,} "
        f"bytes (old ones stay until log cleanup, `cleanup_log`, deletes them); the metadata keeps "
        f"{ver['snapshots_kept']} snapshots "
        f"and {ver['metadata_log']} metadata-log entries. Bytes per commit are the sizes of the new files "
        "under `metadata/` (`version-hint.text`, rewritten in place, not counted); SyncResult.bytes_written "
        f"agreed on {check['bytes_agree']:,} of {n:,} commits. Warnings logged: UniForm "
        f"{end_u['n_warnings']}, plain {end_p['n_warnings']}.",
        END,
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=100_000)
    p.add_argument("--batch", type=int, default=10_000, help="adds per build commit")
    p.add_argument("--commits", type=int, default=1_000)
    p.add_argument("--adds", type=int, default=10, help="adds per measured commit")
    p.add_argument("--workdir", default="/tmp/airflow_txnlog-bench-uniform")
    p.add_argument("--profile", type=int, default=0, help="then cProfile this many more commits on each")
    p.add_argument("--json", help="write the raw figures here")
    p.add_argument("--write", action="store_true", help="write the section of docs/benchmarks.md")
    p.add_argument("--worker", choices=("uniform", "plain"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker_main(args.worker, args.workdir)
    data = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(data))
    text = report(args, data)
    print(text)
    if args.profile:
        for kind, prof in data["profile"].items():
            print(f"\n### profile: {kind}, {args.profile} commits, {prof['seconds']:.2f} s\n")
            print(prof["tottime"])
            print(prof["cumulative"])
    if args.write:
        from benchmarks.doc_sections import replace_section

        replace_section(DOC, START, END, text, heading=HEADING)
    return 0


if __name__ == "__main__":
    sys.exit(main())
