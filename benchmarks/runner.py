# ruff: noqa: PLC0415
"""The measuring machinery of the benchmarks: a fresh worker process per measurement (no cache of
either engine survives between measurements), warm-up processes, medians, and the machine facts a
report states. `benchmarks.run` (the P rows) and `benchmarks.million` (the S rows, 1M files) both
measure through `Runner`; this module imports neither of them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import generate as gen

REPO_ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("deltars", "ours")
PYCACHE = Path(tempfile.gettempdir()) / "airflow_txnlog-bench-pycache"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ measuring
@dataclass
class Measurement:
    key: str
    engine: str
    samples: list[float] = field(default_factory=list)
    refresh: list[float] = field(default_factory=list)  # delta-rs update_incremental after a commit
    open_seconds: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    error: str | None = None
    where: list[str] = field(default_factory=list)
    traceback: str | None = None
    rss_kb: list[int] = field(default_factory=list)  # peak RSS of each measured process (S rows)
    again: list[float] = field(default_factory=list)  # S4: the same query a second time
    apis: list[str] = field(default_factory=list)  # the API a worker measured (S2: add_actions or files)
    growth_kb: list[int] = field(default_factory=list)  # peak RSS growth during a checkpoint call (P4, S6)
    checks: list[dict[str, Any]] = field(default_factory=list)  # S6: delta-rs reading our checkpoint
    written: list[tuple[int, int]] = field(default_factory=list)  # checkpoint files and bytes written

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.samples)

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.ok else None


def run_worker(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    # Import times as on a normal install: allow bytecode caching, but outside the venv (see README).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", str(PYCACHE))
    cmd = [sys.executable, "-m", "benchmarks.workers", json.dumps(spec)]
    try:
        proc = subprocess.run(
            cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout after {timeout:.0f}s", "where": []}
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {
            "ok": False,
            "error": f"worker exited with {proc.returncode} without a result",
            "where": [],
            "traceback": (proc.stderr or proc.stdout)[-4000:],
        }


def record(m: Measurement, result: dict[str, Any]) -> None:
    if not result.get("ok"):
        if m.error is None:
            m.error = result.get("error", "unknown error")
            m.where = result.get("where", [])
            m.traceback = result.get("traceback")
        return
    m.samples.extend(result["seconds"])
    m.refresh.extend(result.get("refresh_seconds", []))
    if "open_seconds" in result:
        m.open_seconds.append(result["open_seconds"])
    if "count" in result and result["task"] != "commit":
        m.counts.append(result["count"])
    if "max_rss_kb" in result:
        m.rss_kb.append(result["max_rss_kb"])
    if "rss_growth_kb" in result:
        m.growth_kb.append(result["rss_growth_kb"])
    if "deltars_reads" in result:
        m.checks.append(result["deltars_reads"])
    if "bytes" in result:
        m.written.append((len(result.get("files", [])), result["bytes"]))
    if "again_seconds" in result:
        m.again.append(result["again_seconds"])
    if "api" in result and result["api"] not in m.apis:
        m.apis.append(result["api"])


class Runner:
    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.results: dict[tuple[str, str], Measurement] = {}
        self.notes: list[str] = []
        self.big_info: dict[str, Any] = {}
        self.sizes = {"files": args.files, "small_files": args.files // 10, "per": args.adds_per_commit}
        self.sizes["tail"] = args.tail

    def m(self, key: str, engine: str) -> Measurement:
        return self.results.setdefault((key, engine), Measurement(key, engine))

    def engines_for(self, rep: int) -> tuple[str, ...]:
        # alternate which engine goes first, so neither always runs right after the other's warm-up
        return ENGINES if rep % 2 == 0 else ENGINES[::-1]

    def measure(
        self,
        key: str,
        base_spec: dict[str, Any],
        reps: int,
        fresh_copy_of: Path | None = None,
        engines: tuple[str, ...] = ENGINES,
    ) -> None:
        """Warm-up (discarded) + ``reps`` measurements per engine, one process each, engines interleaved."""
        for rep in range(-1, reps):
            for engine in (e for e in self.engines_for(rep) if e in engines):
                m = self.m(key, engine)
                if m.error is not None and engine == "ours":
                    continue  # it failed once: report that failure, don't burn time repeating it
                spec = {**base_spec, "engine": engine}
                if fresh_copy_of is not None:
                    dst = self.workdir / f"copy-{key}-{engine}"
                    shutil.rmtree(dst, ignore_errors=True)
                    gen.copy_table(fresh_copy_of, dst)
                    spec["path"] = str(dst)
                result = run_worker(spec, self.args.timeout)
                result["task"] = spec["task"]
                label = "warm-up" if rep < 0 else f"rep {rep + 1}/{reps}"
                if result.get("ok"):
                    secs = result["seconds"]
                    shown = f"{statistics.median(secs) * 1000:.1f} ms" + (
                        f" (median of {len(secs)})" if len(secs) > 1 else ""
                    )
                else:
                    shown = "FAILED: " + result.get("error", "?").splitlines()[0][:200]
                log(f"  {key:<18} {engine:<8} {label:<10} {shown}")
                if rep >= 0 or not result.get("ok"):
                    record(m, result)
                if fresh_copy_of is not None and rep == 0 and result.get("ok") and engine == "ours":
                    self.cross_check_checkpoint(Path(spec["path"]))
                if fresh_copy_of is not None:
                    shutil.rmtree(spec["path"], ignore_errors=True)

    def cross_check_checkpoint(self, table: Path) -> None:
        """delta-rs must read the checkpoint our engine wrote (only the checkpoint + _last_checkpoint)."""
        try:
            cp = json.loads((table / "_delta_log" / "_last_checkpoint").read_text())
            # hide the commits so delta-rs has to use the checkpoint
            for f in (table / "_delta_log").glob("*.json"):
                f.unlink()
            gen.validate_with_deltalake(table, cp["version"], self.sizes["files"])
            self.notes.append(f"delta-rs reads the checkpoint written by our engine ({cp}).")
        except Exception as exc:
            self.notes.append(f"delta-rs could NOT read our engine's checkpoint: {type(exc).__name__}: {exc}")
        log("  " + self.notes[-1])

    # ------------------------------------------------------------------------------------ tables
    def prepare(self) -> None:
        a = self.args
        big, small, per = a.files, a.files // 10, a.adds_per_commit
        self.sizes = {"files": big, "small_files": small, "per": per, "tail": a.tail}
        w = self.workdir
        t0 = time.perf_counter()
        log(f"generating tables in {w} ...")
        # P1 / P3: checkpoint written by delta-rs, then `tail` more commits; `files` live files in total
        self.big_cp, self.small_cp = w / "big_checkpointed", w / "small_checkpointed"
        for path, files in ((self.big_cp, big), (self.small_cp, small)):
            tail = min(a.tail, files // per // 2)
            spec = gen.TableSpec(files // per - tail, per)
            cpv, latest = gen.generate_checkpointed_table(path, spec, tail)
            gen.validate_with_deltalake(path, latest, files)
            log(f"  {path.name}: checkpoint at {cpv}, version {latest}, {files} live files")
        # a tiny table each worker opens first, so that one-time process costs stay out of the timings
        self.warm = w / "warm"
        gen.generate_checkpointed_table(self.warm, gen.TableSpec(3, 5), 2)
        # P2 / P4: pure JSON log
        self.big_json = w / "big_json"
        latest = gen.generate_table(self.big_json, gen.TableSpec(big // per, per))
        gen.validate_with_deltalake(self.big_json, latest, big)
        log(f"  {self.big_json.name}: version {latest}, {big} live files, no checkpoint")
        log(f"tables generated and validated with delta-rs in {time.perf_counter() - t0:.1f}s")

    # ------------------------------------------------------------------------------- benchmarks
    def run(self) -> None:
        a, only = self.args, set(self.args.only)
        if "P1" in only:
            log("P1: open + list live files, checkpoint + tail commits")
            for variant in ("paths", "full"):
                spec = {
                    "task": "list",
                    "path": str(self.big_cp),
                    "variant": variant,
                    "warm_path": str(self.warm),
                }
                self.measure(f"P1-{variant}", spec, a.reps)
            # first open in a fresh process: includes lazy imports and other one-time costs
            self.measure("P1-cold", {"task": "list", "path": str(self.big_cp), "variant": "paths"}, a.reps)
        if "P2" in only:
            log("P2: open + list live files, JSON replay only")
            for variant in ("paths", "full"):
                spec = {
                    "task": "list",
                    "path": str(self.big_json),
                    "variant": variant,
                    "warm_path": str(self.warm),
                }
                self.measure(f"P2-{variant}", spec, a.reps)
        if "P3" in only:
            log("P3: latency of one more append commit on an open table")
            for size, src in (("small", self.small_cp), ("big", self.big_cp)):
                for variant in ("meta", "write"):
                    # one private copy per engine/variant/size; it grows by a few dozen commits, irrelevant
                    spec = {"task": "commit", "variant": variant, "commits": a.commits, "warmup": 2}
                    key = f"P3-{variant}-{size}"
                    for engine in ENGINES:
                        dst = self.workdir / f"p3-{key}-{engine}"
                        shutil.rmtree(dst, ignore_errors=True)
                        gen.copy_table(src, dst)
                    self.measure_p3(key, spec, a.p3_reps)
        if "P4" in only:
            log("P4: checkpoint write of the 100k-file table (fresh copy each time)")
            spec = {"task": "checkpoint", "path": "", "warm_path": str(self.warm)}
            self.measure("P4", spec, a.p4_reps, fresh_copy_of=self.big_json)

    def measure_p3(self, key: str, spec: dict[str, Any], reps: int) -> None:
        for rep in range(reps):
            for engine in self.engines_for(rep):
                m = self.m(key, engine)
                if m.error is not None:
                    continue
                s = {**spec, "engine": engine, "path": str(self.workdir / f"p3-{key}-{engine}")}
                result = run_worker(s, self.args.timeout)
                result["task"] = "commit"
                if result.get("ok"):
                    secs = result["seconds"]
                    shown = f"median {statistics.median(secs) * 1000:.1f} ms of {len(secs)} commits"
                else:
                    shown = "FAILED: " + result.get("error", "?").splitlines()[0][:200]
                log(f"  {key:<18} {engine:<8} proc {rep + 1}/{reps}  {shown}")
                record(m, result)

    def profile(self, out_dir: Path) -> None:
        """One extra cProfile'd measurement of our engine per benchmark; stats + top-30 text in out_dir."""
        out_dir.mkdir(parents=True, exist_ok=True)
        runs: list[tuple[str, dict[str, Any]]] = [
            ("P1", {"task": "list", "path": str(self.big_cp), "variant": "paths"}),
            ("P2", {"task": "list", "path": str(self.big_json), "variant": "paths"}),
            ("P2-full", {"task": "list", "path": str(self.big_json), "variant": "full"}),
            ("P3", {"task": "commit", "variant": "meta", "commits": 10, "path": ""}),
            ("P4", {"task": "checkpoint", "path": ""}),
        ]
        for name, base in runs:
            if name.split("-")[0] not in self.args.only:
                continue
            spec = {
                **base,
                "engine": "ours",
                "profile": str(out_dir / f"{name}.prof"),
                "warm_path": str(self.warm),
            }
            tmp = None
            if name in ("P3", "P4"):
                tmp = self.workdir / f"profile-{name}"
                shutil.rmtree(tmp, ignore_errors=True)
                gen.copy_table(self.big_cp if name == "P3" else self.big_json, tmp)
                spec["path"] = str(tmp)
            result = run_worker(spec, self.args.timeout)
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            if not result.get("ok"):
                log(f"  profile {name}: FAILED {result.get('error')}")
                continue
            buf = io.StringIO()
            st = pstats.Stats(spec["profile"], stream=buf)
            st.sort_stats("cumulative").print_stats(35)
            buf.write("\n\n---- by own time ----\n")
            st.sort_stats("tottime").print_stats(25)
            (out_dir / f"{name}.txt").write_text(buf.getvalue())
            log(f"  profile {name}: {out_dir / f'{name}.txt'}")


def machine_info() -> dict[str, str]:
    import importlib.metadata as md

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = {}
    for pkg in ("deltalake", "pyarrow", "orjson", "fsspec", "airflow-txnlog"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = "not installed"
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "airflow_txnlog"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        rev += " (engine has uncommitted changes)" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        rev = "no commit yet"
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{cpu}, {os.cpu_count()} cores ({usable} usable)",
        "memory": mem,
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        **{k: v for k, v in versions.items()},
        "git": rev,
    }
