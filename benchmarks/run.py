# ruff: noqa: RUF001
"""Benchmarks of airflow_txnlog's engine against delta-rs on the same synthetic tables, in one run.

Run from the repository root::

    .venv/bin/python -m benchmarks.run            # full sizes, writes docs/benchmarks.md
    .venv/bin/python -m benchmarks.run --quick    # 10x smaller tables, prints only

See benchmarks/README.md for what is measured and how. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # `python benchmarks/run.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import million, million_report
from benchmarks.doc_sections import replace_section
from benchmarks.runner import ENGINES, PYCACHE, REPO_ROOT, Measurement, Runner, log, machine_info

FLAT_FACTOR = 1.5  # P3 counts as flat if ours@large <= FLAT_FACTOR * ours@small + FLAT_SLACK_S
FLAT_SLACK_S = 0.002


# ------------------------------------------------------------------------------------------ reporting
def fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


@dataclass
class Row:
    label: str
    deltars: float | None
    ours: float | None
    target: float | None
    note: str = ""
    ours_error: str | None = None

    @property
    def ratio(self) -> float | None:
        if self.deltars and self.ours is not None:
            return self.ours / self.deltars
        return None

    @property
    def verdict(self) -> str:
        if self.ours_error:
            return "**failed**"
        if self.target is None or self.ratio is None:
            return "info"
        return "met" if self.ratio <= self.target else "**missed**"


def build_rows(r: Runner) -> list[Row]:
    s = r.sizes
    big, small = f"{s['files'] // 1000}k", f"{s['small_files'] // 1000}k"
    ncommits = s["files"] // s["per"]

    def get(key: str, engine: str) -> Measurement | None:
        return r.results.get((key, engine))

    def row(label: str, key: str, target: float | None, note: str = "") -> Row | None:
        d, o = get(key, "deltars"), get(key, "ours")
        if d is None and o is None:
            return None
        err = o.error if o is not None and o.error else None
        return Row(label, d.median if d else None, o.median if o else None, target, note, err)

    specs = [
        (
            f"P1 open + list live files ({big} files: checkpoint + {s['tail']} commits)",
            "P1-paths",
            0.5,
            "delta-rs `DeltaTable(p).file_uris()` · ours `Table.open(p).snapshot().file_paths()`",
        ),
        (
            "P1b same, full add metadata",
            "P1-full",
            0.5,
            "delta-rs `get_add_actions(flatten=True)` · ours `snapshot().add_actions()` (both Arrow)",
        ),
        (
            "P1c first open in a fresh process (P1 incl. one-time costs: lazy imports, runtime start)",
            "P1-cold",
            None,
            "as P1, without the in-process warm-up on a tiny table",
        ),
        (
            f"P2 open + list live files ({ncommits:,} commits × {s['per']} adds, no checkpoint)",
            "P2-paths",
            0.5,
            "as P1",
        ),
        ("P2b same, full add metadata", "P2-full", 0.5, "as P1b"),
        (
            f"P3 one-add commit on an open table, {small} live files",
            "P3-meta-small",
            0.2,
            "metadata-only: delta-rs `create_write_transaction([AddAction])` · ours `transaction()` + "
            "`txn.add(AddFile)` + `commit()`; median per commit",
        ),
        (f"P3 one-add commit on an open table, {big} live files", "P3-meta-big", 0.2, "as above"),
        (
            f"P3b write 2-row table + commit, {small} files",
            "P3-write-small",
            None,
            "delta-rs `write_deltalake(dt, t, mode='append')` · ours `t.write(t)`",
        ),
        (f"P3b write 2-row table + commit, {big} files", "P3-write-big", None, "as above"),
        (
            f"P4 checkpoint write, {big} files ({ncommits:,} JSON commits)",
            "P4",
            0.5,
            "delta-rs `create_checkpoint()` · ours `t.checkpoint()`, state already loaded",
        ),
    ]
    rows = [x for x in (row(*sp) for sp in specs) if x is not None]

    # delta-rs commit + the update_incremental it needs to stay current (ours keeps its snapshot current)
    extra = []
    for size, label in (("small", small), ("big", big)):
        d, o = get(f"P3-meta-{size}", "deltars"), get(f"P3-meta-{size}", "ours")
        if d is not None and d.ok and len(d.refresh) == len(d.samples):
            both = statistics.median(a + b for a, b in zip(d.samples, d.refresh, strict=True))
            extra.append(
                Row(
                    f"P3c one-add commit vs delta-rs commit + `update_incremental()`, {label} files",
                    both,
                    o.median if o else None,
                    None,
                    "delta-rs's commit does not advance its open DeltaTable; this adds the refresh it needs",
                    o.error if o and o.error else None,
                )
            )
    at = next((i for i, x in enumerate(rows) if x.label.startswith("P3b")), len(rows))
    rows[at:at] = extra
    return rows


def flatness(r: Runner) -> list[str]:
    out = []
    for engine in ENGINES:
        a, b = r.results.get(("P3-meta-small", engine)), r.results.get(("P3-meta-big", engine))
        if a and b and a.ok and b.ok:
            ma, mb = a.median, b.median
            assert ma is not None and mb is not None
            flat = mb <= FLAT_FACTOR * ma + FLAT_SLACK_S
            name = "delta-rs" if engine == "deltars" else "ours"
            out.append(
                f"{name}: {fmt_s(ma)} at {r.sizes['small_files']:,} files → {fmt_s(mb)} at "
                f"{r.sizes['files']:,} files (×{mb / ma:.2f}) — {'flat' if flat else 'grows'}"
            )
    return out


def render(r: Runner, rows: list[Row], info: dict[str, str], elapsed: float) -> str:
    a, s = r.args, r.sizes
    lines = [
        "# Benchmarks: airflow_txnlog engine vs delta-rs",
        "",
        "Generated by `python -m benchmarks.run`"
        + (" --quick" if a.quick else "")
        + f" (total {elapsed / 60:.1f} min). Lower is better; ratio = ours / delta-rs; the targets are "
        "DESIGN.md §7's. How the tables are built and what is timed: `benchmarks/README.md`.",
        "",
        "## Machine",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in info.items()]
    lines += [
        "",
        "## Results (medians)",
        "",
        "| benchmark | delta-rs | ours | ratio | target | result |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        ratio = f"{row.ratio:.2f}×" if row.ratio is not None else "—"
        target = f"≤ {row.target}×" if row.target is not None else "—"
        ours = fmt_s(row.ours) if not row.ours_error else "failed"
        lines.append(f"| {row.label} | {fmt_s(row.deltars)} | {ours} | {ratio} | {target} | {row.verdict} |")
    flat = flatness(r)
    if flat:
        lines += [
            "",
            f"P3 flat in table size (target: ours flat; flat = at {s['files']:,} files ≤ {FLAT_FACTOR}× "
            f"the time at {s['small_files']:,} files + {FLAT_SLACK_S * 1000:.0f} ms):",
            "",
        ]
        lines += [f"- {x}" for x in flat]
    lines += ["", "## What each row calls", ""]
    lines += [f"- **{row.label}** — {row.note}" for row in rows if row.note]
    lines += [
        "",
        "## Method",
        "",
        f"- Tables: written directly as commit files by `benchmarks/generate.py` ({s['per']} `add` actions "
        "per commit with partition values and a stats JSON string; reader 1 / writer 2; partitioned by "
        "`part`; `delta.checkpointInterval` set to 10⁹ so nothing checkpoints automatically) and opened with "
        "delta-rs "
        "before any measurement. The P1/P3 checkpoint is written once by delta-rs, so both engines read the "
        "same checkpoint parquet. No data files exist except those the P3b writes create.",
        f"- Every measurement runs in a fresh `python` process (`benchmarks/workers.py`), so no in-process "
        f"cache of either engine survives between measurements; imports are done before the clock starts, "
        f"and for P1, P2 and P4 the worker first runs the same operation on a different tiny table, so "
        f"one-time costs of a fresh process (lazy imports, runtime start-up) are not timed; P1c shows them. "
        f"Workers may cache bytecode (`PYTHONPYCACHEPREFIX={PYCACHE}`) as a normal install does. "
        f"Per benchmark and engine: 1 discarded warm-up process (it also warms the OS page cache), then "
        f"{a.reps} measured process(es) for P1/P2, {a.p4_reps} for P4 (each on a fresh copy of the JSON-only "
        f"table, opened and loaded before timing `checkpoint`), and {a.p3_reps} process(es) × {a.commits} "
        f"commits (after 2 warm-up commits) for P3, each engine on its own copy. Engines alternate order.",
        "- P3 fairest equivalent: a metadata-only commit of one add action on both sides. delta-rs 1.6.6's "
        "`DeltaTable.create_write_transaction` commits but leaves the open `DeltaTable` at its old version, "
        "so the harness calls `update_incremental()` after each commit outside the timed region "
        "(otherwise every further commit pays conflict resolution against all commits since the open); "
        "the P3c rows add that refresh time back for comparison.",
    ]
    notes = list(r.notes)
    growth = {e: r.results[("P4", e)].growth_kb for e in ENGINES if ("P4", e) in r.results}
    if all(growth.get(e) for e in ENGINES):
        d, o = (statistics.median(growth[e]) / 1024 for e in ENGINES)
        notes.append(
            f"P4 peak RSS growth during the checkpoint call (medians): delta-rs {d:.0f} MB, ours {o:.0f} MB "
            f"({o / d:.2f}×; the peak is reset just before the call, see benchmarks/README.md, S7)."
        )
    if notes:
        lines += ["", "## Checks", ""] + [f"- {n}" for n in notes]
    for (key, engine), m in sorted(r.results.items()):
        if m.ok and m.counts and len(set(m.counts)) != 1:
            lines.append(f"- {key} {engine}: inconsistent file counts {sorted(set(m.counts))}")
    counts = {}
    for (key, engine), m in r.results.items():
        if m.ok and m.counts:
            counts.setdefault(key, {})[engine] = m.counts[0]
    for key, by_engine in sorted(counts.items()):
        if len(set(by_engine.values())) > 1:
            lines.append(f"- **{key}: the engines list different numbers of live files: {by_engine}**")
        elif len(by_engine) == 2:
            lines.append(f"- {key}: both engines list {next(iter(by_engine.values())):,} live files.")
    failures = [m for m in r.results.values() if m.error]
    if failures:
        lines += ["", "## Failures", ""]
        for m in failures:
            lines.append(f"- **{m.key} / {m.engine}**: `{m.error.splitlines()[0][:300]}`")
            lines += [f"  - at `{w}`" for w in m.where[-4:]]
    lines += [
        "",
        "## All samples (ms)",
        "",
        "| benchmark | engine | n | min | median | max |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (key, engine), m in sorted(r.results.items()):
        if m.ok:
            ms = [x * 1000 for x in m.samples]
            med = statistics.median(ms)
            lines.append(f"| {key} | {engine} | {len(ms)} | {min(ms):.1f} | {med:.1f} | {max(ms):.1f} |")
            if m.open_seconds:
                o = [x * 1000 for x in m.open_seconds]
                lines.append(
                    f"| {key} (open + load before) | {engine} | {len(o)} | {min(o):.1f} | "
                    f"{statistics.median(o):.1f} | {max(o):.1f} |"
                )
            if m.refresh:
                f = [x * 1000 for x in m.refresh]
                lines.append(
                    f"| {key} (update_incremental after) | {engine} | {len(f)} | {min(f):.1f} | "
                    f"{statistics.median(f):.1f} | {max(f):.1f} |"
                )
    return "\n".join(lines) + "\n"


def print_table(rows: list[Row], flat: list[str]) -> None:
    w = max(len(r.label) for r in rows)
    print(f"\n{'benchmark':<{w}}  {'delta-rs':>10}  {'ours':>10}  {'ratio':>7}  {'target':>7}  result")
    for row in rows:
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
        target = f"<={row.target}x" if row.target is not None else "-"
        ours = fmt_s(row.ours) if not row.ours_error else "failed"
        print(
            f"{row.label:<{w}}  {fmt_s(row.deltars):>10}  {ours:>10}  {ratio:>7}  {target:>7}  "
            f"{row.verdict.strip('*')}"
        )
    for line in flat:
        print("P3 flatness: " + line)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10k-file tables, fewer repetitions; prints only")
    ap.add_argument("--files", type=int, help="live files in the big tables (default 100000; quick 10000)")
    ap.add_argument("--adds-per-commit", type=int, default=50)
    ap.add_argument("--tail", type=int, default=20, help="commits after the P1 checkpoint")
    ap.add_argument("--reps", type=int, help="measured processes per engine for P1/P2 (default 5; quick 3)")
    ap.add_argument("--p4-reps", type=int, help="measured processes per engine for P4 (default 3; quick 2)")
    ap.add_argument("--p3-reps", type=int, help="processes per engine for P3 (default 2; quick 1)")
    ap.add_argument("--commits", type=int, help="timed commits per P3 process (default 15; quick 8)")
    ap.add_argument(
        "--only",
        default="P1,P2,P3,P4,S1,S2,S3,S4,S4L,S5,S6,S7,S6F,S7F,S6V,S7V,S6VF,S7VF,S1S,S2S,S3S,S4S,S4SL,S6S,S7S",
        help="comma-separated subset, e.g. P1,P3 or S1,S2",
    )
    ap.add_argument(
        "--big-files", type=int, help="live files in the S rows' table (default 1000000; quick 50000)"
    )
    ap.add_argument(
        "--big-cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "airflow_txnlog-bench-cache",
        help="where the S rows' table is built once and reused (default $TMPDIR/airflow_txnlog-bench-cache)",
    )
    ap.add_argument(
        "--s-reps", type=int, help="measured processes per engine for S1..S5 (default 3; quick 1)"
    )
    ap.add_argument("--workdir", type=Path, help="where to generate tables (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated tables")
    ap.add_argument("--output", type=Path, help="markdown report (default docs/benchmarks.md unless --quick)")
    ap.add_argument("--no-write", action="store_true", help="don't write the markdown report")
    ap.add_argument("--profile", type=Path, metavar="DIR", help="also cProfile our engine, stats into DIR")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before a measurement is abandoned")
    ap.add_argument(
        "--wait-idle",
        type=float,
        default=0,
        metavar="SECONDS",
        help="first wait up to SECONDS for the 1-min load average to drop below half the cores",
    )
    a = ap.parse_args(argv)
    q = a.quick
    a.files = a.files or (10_000 if q else 100_000)
    a.reps = a.reps or (3 if q else 5)
    a.p4_reps = a.p4_reps or (2 if q else 3)
    a.p3_reps = a.p3_reps or (1 if q else 2)
    a.commits = a.commits or (8 if q else 15)
    a.big_files = a.big_files or (50_000 if q else 1_000_000)
    a.s_reps = a.s_reps or (1 if q else 3)
    a.only = [x.strip().upper() for x in a.only.split(",") if x.strip()]
    if a.output is None and not q:
        a.output = REPO_ROOT / "docs" / "benchmarks.md"
    if a.files % (10 * a.adds_per_commit) or a.files // a.adds_per_commit <= a.tail * 2:
        ap.error("--files must be a multiple of 10 × --adds-per-commit and above 2 × --tail commits")
    return a


def _after_p_report(path: Path) -> str:
    """Everything the report file holds after the P report: from the first section another benchmark
    owns (`<!-- name:start -->`) to the end, the notes written between those sections included (a P
    run rewrites only the P report at the top)."""
    text = path.read_text() if path.exists() else ""
    at = text.find("\n<!-- ")
    return "" if at < 0 else "\n" + text[at + 1 :]


def load_average() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def wait_idle(limit: float) -> None:
    cores = os.cpu_count() or 1
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and os.getloadavg()[0] >= cores / 2:
        log(f"waiting for an idle machine: load {load_average()} on {cores} cores")
        time.sleep(15)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.wait_idle:
        wait_idle(args.wait_idle)
    started = time.perf_counter()
    load_before = load_average()
    load_start = os.getloadavg()[0]
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="run-", dir=args.workdir))
    else:
        workdir = Path(tempfile.mkdtemp(prefix="txnlog-bench-"))
    runner = Runner(args, workdir)
    p_rows = any(k.startswith("P") for k in args.only)
    try:
        if p_rows:  # the S rows build (or reuse) their own cached table: million.run
            runner.prepare()
            runner.run()
        million.run(runner)
        if args.profile:
            log(f"profiling our engine into {args.profile} ...")
            runner.profile(args.profile)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"tables kept in {workdir}")
    rows = build_rows(runner)
    load = f"{load_before} at start, {load_average()} at end (1/5/15 min; {os.cpu_count()} cores)"
    if max(load_start, os.getloadavg()[0]) > (os.cpu_count() or 1):
        runner.notes.insert(
            0,
            f"**The machine was busy during this run (load average {load}); timings are noisy.** The "
            "engines are measured interleaved, so both see similar load; prefer a run on an idle machine.",
        )
    if rows:
        print_table(rows, flatness(runner))
    for r in million_report.rows(runner):
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-"
        print(
            f"{r['label']}: delta-rs {r['d']}, ours {r['o']}, {ratio} "
            f"(target <={r['target']}x) {r['verdict'].strip('*')}"
        )
    for m in runner.results.values():
        if m.error:
            print(f"\n{m.key} / {m.engine} FAILED: {m.error}\n{m.traceback or ''}", file=sys.stderr)
    if args.output and not args.no_write:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        if p_rows:  # a run of S rows alone leaves the P report as it is
            info = {**machine_info(), "load average": load}
            report = render(runner, rows, info, time.perf_counter() - started)
            args.output.write_text(report + _after_p_report(args.output))
        if million_report.rows(runner):
            command = "python -m benchmarks.run " + " ".join(argv if argv is not None else sys.argv[1:])
            replace_section(
                args.output,
                million_report.START,
                million_report.END,
                million_report.section(runner, load, command.strip()),
            )
        print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
