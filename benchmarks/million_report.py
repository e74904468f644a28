# ruff: noqa: PLC0415, RUF001
"""The report of the million-file rows (S1..S7, `benchmarks.million` measures them): one row per
benchmark with both engines' medians, its ratio and verdict, why a missed target is missed (as found
by profiling), the checks and every sample, written into its own section of docs/benchmarks.md
between ``<!-- million-files:start -->`` and ``<!-- million-files:end -->`` (the rest is left alone).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from benchmarks.million import (
    BIG_CHECKPOINT_VERSION,
    BIG_TAIL,
    END,
    S4_FILTER,
    S4_LOADED_FILTER,
    S_KEYS,
    START,
    TARGETS,
    engine_fingerprint,
)

if TYPE_CHECKING:
    from benchmarks.runner import Runner


def _fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def _median_line(out: list[str], label: str, samples: list[float] | None) -> None:
    """Append "- label <median>" when there are samples."""
    if samples:
        out.append(f"- {label} " + _fmt_s(statistics.median(samples)))


def _fmt_rss(kb: float | None) -> str:
    if kb is None:
        return "—"
    return f"{kb / 1024:.0f} MB" if kb < 1024 * 1024 else f"{kb / 1024 / 1024:.2f} GB"


RSS_ATTRS = ("rss_kb", "growth_kb")  # Measurement attributes in KiB (the others are seconds)


# Why a row misses its target, as found by profiling our worker (`"profile"` in its spec) at 1M files;
# they describe the engine as of the measured commit and must be re-checked when it changes.
WHY = {
    "S1": "listing reads only `add.path` / `remove.path` / deletion vectors from the checkpoint; what "
    "is left is the parquet decode of 1M paths and the list of 1M Python `str`s.",
    "S2": "delta-rs's checkpoint here has no `stats_parsed`, so `add_actions()` parses the 1M stats JSON "
    "strings (195 MB) with `pyarrow.json`: ~1.3 s of CPU when its memory is warm, ~1.7 s when it is "
    "fresh, ~0.65-0.85 s on the 2 cores at best, most of our wall time and the floor we found "
    "(Polars' `str.json_decode` ~4.2 s and `read_ndjson` ~2.1 us a row, msgspec ~2.2 us and orjson ~3.2 "
    "us a row to Python objects alone, an Arrow-kernel template decoder ~1.3 s of CPU; DuckDB's "
    "`json_transform` ~0.6 us a row, but it casts leniently, `true` to 1 and `1.5` to 2 for a BIGINT "
    "bound, even in its strict form, and with VARCHAR leaves, to check them strictly ourselves, it is "
    "~1.3 us a row, no faster); delta-rs decodes them in Rust. Measured in isolation the parse is "
    "~43 ms of CPU per batch of 32,768 rows (1.33 s for 1M); in the load the two parsing threads "
    "take ~2.1 s between them (the main thread and the batch reader share the 2 cores), so "
    "`add_actions()` is CPU-bound: ~1.6 s user + ~0.25 s system in ~1.0 s. On this VM first-touched "
    "memory is expensive (the host backs guest pages on first use); the checkpoint's columns and "
    "the parse now allocate from jemalloc (`engine/log/bulk_memory.py`): mimalloc's huge-page arena "
    "made S2 1.16-1.72 s after a delta-rs process, jemalloc 1.24-1.33 s. delta-rs ran 2.54-2.58 s "
    "at git 27a5a86 (3.42-4.15 s in the run at 2f643af), so the ratio sits at the target's edge. "
    'See "Where the time goes" below; on the same log checkpointed with `stats_parsed` (Delta\'s '
    "default) the target is met: row S2S.",
    "S3": "the parsed columns of 1M files and their paths (the stats text is parsed batch by batch and "
    "not kept: the struct holds all of it); with `stats_parsed` (S3S) the text is never read.",
    "S4": "the first filtered call parses the stats JSON of all 1M files (a narrow schema, only the "
    "predicate's column, but the JSON reader still tokenizes every string). Once the file state is "
    "loaded the same pruning meets the target (row S4L).",
    "S4S": "with `stats_parsed` the pruning reads only the predicate column's stats leaves (~30 ms); "
    "the rest is making the 2 matching `AddFile`s, which reads the other add columns of all 1M rows "
    "(the whole `stats_parsed` struct, to render their JSON stats, and `partitionValues`): delta-rs "
    "wrote the checkpoint as one row group, and parquet cannot read single rows of it. Once the "
    "file state is loaded the same pruning meets the target (row S4SL).",
    "S2S": "reading the add columns and `stats_parsed` of 1M rows (~0.9 s) plus the Arrow assembly.",
    "S5": "the directory walk is Python (`os.scandir`; referenced files are no longer stat-ed).",
    "S6": "the table sets no stats format, so ours also writes `stats_parsed` (Delta's default) and, "
    "the old checkpoint having none, parses the 1M JSON stats for it (~1.33 s of CPU) which delta-rs, "
    "writing JSON stats only, never does. The call takes ~2.75 s of CPU (parse 1.33 s, pyarrow's "
    "single-threaded writer ~0.95 s, reading the old checkpoint ~0.3 s), so 2 cores cannot finish it "
    "in under ~1.4 s: the target (half of delta-rs's 1.7-1.9 s in these runs) is out of reach while "
    "both the parse and `stats_parsed` stay. The parse has no cheaper library: Polars' `json_decode` "
    "and arrow-rs (arro3-io) took 39 and 27 ms for a batch pyarrow parses in 33 ms, and arrow-rs "
    "casts leniently. On the like-for-like table (S6S) both write the same.",
    "S6F": "pyarrow's single-threaded writer: ~0.9-0.95 s to encode and compress this checkpoint's 1M "
    "rows, however it is called (see S6S), is the call's floor, and half of delta-rs's 1.7-1.8 s is "
    "~0.88 s. With the stats `add_actions()` parsed written as they are, the rest of the call (reading "
    "the old checkpoint's other columns, typing partition values) runs beside the writer: ~1.5 s of "
    "CPU in ~1.0 s. Before git 2bdf480 the call parsed the 1M JSON stats again (~1.6-1.8 s).",
    "S7": "the in-flight batches (a few of 32,768 adds, each with its stats text and parsed stats) "
    "and a row group of 65,536 rows buffered by the writer.",
    "S7S": "as S7.",
    "S6V": "as S6: the 1M JSON stats parsed for `stats_parsed` (~1.3 s of CPU) bound the call; the "
    "sidecars' writers encode on both cores, so the writer is no longer the floor (S6VF).",
    "S6VF": "the call uses ~1.5 s of CPU (the sidecars' writers ~0.95 s, reading and converting the "
    "old checkpoint's other columns ~0.5 s), so 2 cores cannot finish it in under ~0.75 s, about half "
    "of delta-rs's 1.6-1.8 s: runs land on either side of the target.",
    "S6S": "encoding and snappy-compressing the 1M rows into one parquet file: pyarrow's writer "
    "encodes a file's row groups on one thread, ~0.95-1.05 s for this checkpoint, and it is busy from "
    "~0.1-0.2 s into the call to its end (per column, written alone: paths 184 ms, stats text 232 ms, "
    "`stats_parsed` 205 ms, the ~40 all-null leaves of the other actions 165 ms; neither dictionary "
    "choices, column statistics, page or batch sizes change it; no compression would save ~0.2 s "
    "for a 2.7x bigger file; the C++ writer can encode columns on threads but pyarrow does not expose "
    "that option). Reading and converting the old checkpoint's rows (~0.4 s of CPU) runs beside it. "
    "Two parts would write on two threads, but PROTOCOL.md deprecates multi-part checkpoints and "
    "splitting costs ~0.3 s of CPU (Spark's path hash and a copy), so the checkpoint is one file, as "
    "Delta on Spark writes by default. Until git c373cde the writer waited ~0.3 s for the plan: "
    "`partitionValues_parsed` typed for all 1M files (~215 ms) and the tombstones collected, before "
    "any row was written (S6S 1.34 s in the run at 29ad3b5). Until git e3ff0bb the final fsync of "
    "the part waited ~55 ms for the disk to write all of it (now the kernel writes each row group "
    "back as it is written, `engine.writeback`), and until 83b167d the tombstones were looked for "
    "by decoding every `remove` field of the old checkpoint's 1M rows (~67 ms, with the writer "
    "idle) although loading had found none.",
}

# Where the time goes, as profiled (cProfile and stage timers, `perf` for the native side) on the
# 1M-file table of this section; static text: re-check when the engine changes.
PROFILE = [
    "**S2 before issue 43** (git d5a8d1e, profiled run 2.58 s, peak RSS 1.37 GB): open 370 ms "
    "(checkpoint keys and small actions 220 ms, the 5 JSON commits 60 ms); `add_actions()` 2,210 ms: "
    "the stats text read whole and kept (~500 ms), a newline-delimited copy of it for the JSON reader "
    "(437 ms), `pyarrow.json` (820 ms on 2 threads), the checkpoint's and the tail's texts joined into "
    "one more copy (165 ms), the other add columns (220 ms), three copies of the path buffer to search "
    "it for `%` (130 ms), the Arrow assembly (`_core` 95 ms, partitions 63 ms, paths 54 ms).",
    "**S2 at git 4810410** (the previous session's end; stage timers on this VM, 1.3-1.6 s, peak RSS "
    "~0.71 GB): open ~230 ms; `add_actions()` ~1.0-1.4 s, the stats text read batch by batch, "
    "each batch parsed in place and kept zstd-compressed (~0.4 s of CPU) for the `AddFile`s a later "
    "`files()` makes; the parsed batches joined into one array on the caller's thread (~0.14 s).",
    "**S2 at git d3cce2c** (the previous session's end; stage timers on this VM: 1.1-1.5 s, peak RSS "
    "~0.55 GB): open ~200 ms: the checkpoint's keys read through a native file, optional fields no "
    "row has never decoded (by the part's null counts), the small actions read in batches keeping "
    "only their rows, the paths scanned for `%` with numpy; `add_actions()` ~0.9-1.2 s: the stats "
    "parse on 2 worker threads, the text not kept (`AddFile`s render it from the struct), the "
    "parsed batches kept as chunks; meanwhile the main thread reads the other add columns. Of the "
    "CPU samples (`perf`), ~25% was the JSON tokenizer and its converters and ~25% the kernel "
    "zeroing fresh 2 MB pages: pyarrow's default pool (mimalloc) advises its arena for huge pages "
    "and returns freed memory to the system ~10 ms after a free, so each batch faulted in fresh "
    "2 MB pages, and opens took 170-690 ms by how costly those were.",
    "**S2 now** (after a delta-rs process, as measured: 1.24-1.33 s, system time ~0.4 s, peak RSS "
    "~0.5 GB): checkpoint parts decode into jemalloc's pool and the JSON reader allocates from it "
    "(`bulk_memory`); the commits after the checkpoint are parsed on another thread while the "
    "checkpoint's keys decode, and its small actions are read beside the keys through a second "
    "open of the part: open ~200 ms (~250 ms before the overlaps); `add_actions()` ~1.0 s, "
    "CPU-bound (see S2 above). The parse threads and the early thread that feeds them are kept for "
    "the process (and renewed in a forked child: a child of a process that had loaded a table hung "
    "on its own load before).",
    "**S6/S6S before issue 43**: 10.25 s and 1.79 GB of RSS growth for S6 (the whole checkpoint "
    "materialized as one Arrow table, then each part serialized whole). **Now** streamed: batches "
    "of 32,768 adds read from the old checkpoint, converted on 2 worker threads (stats parsed, or the "
    "old `stats_parsed` kept where it sits beside the JSON, `partitionValues_parsed` typed), written in "
    "row groups of 65,536 rows (the first half that, so the writer starts sooner) by a writer thread "
    "(one file, unless a `checkpoint_part_size` asks for parts, then a thread per part); a row group "
    "and a few batches in memory. Nothing is decided for all files before the first row is written "
    "(since c373cde): a partition value not of its type, met later, restarts the checkpoint without "
    "`partitionValues_parsed`. The part's writeback to disk is started after each row group "
    "(Linux `sync_file_range`), so the fsync before the rename finds ~1 ms left instead of ~55 ms; "
    "an action no row of the old checkpoint holds (tombstones, in a delta-rs checkpoint) is not "
    "decoded again; the live mask of the old rows is computed while the first batch is read. S6S "
    "medians over "
    "alternating processes: 1.235 s at git 9a6d00c, 1.08-1.16 s with these three (e3ff0bb, 83b167d; "
    "the mask since 6cb3335); 1.08-1.19 s in the run at 6cb3335.",
]


def _row_specs(n: int, api: str) -> list[tuple[str, str, str, str, str, str]]:
    """(key, label, delta-rs measurement, our measurement, Measurement attribute, note) per S row."""
    return [
        ("S1", f"S1 open + list paths, {n:,} files", "S1", "S1", "samples",
         "delta-rs `DeltaTable(p).file_uris()` · ours `Table.open(p).snapshot().file_paths()`"),
        ("S2", f"S2 open + full add metadata, {n:,} files", "S2", "S2", "samples",
         f"delta-rs `get_add_actions(flatten=True)` · ours `snapshot().{api}` (measured API)"),
        ("S3", "S3 peak RSS of the S2 process", "S2", "S2", "rss_kb",
         "peak RSS of the fresh worker process at its end (`VmHWM`: imports + warm-up + S2)"),
        ("S4", f'S4 `files(filter="{S4_FILTER}")` on a loaded snapshot, vs delta-rs\'s S2', "S2", "S4",
         "samples", "ours: first call after `Table.open(p).snapshot()` (load untimed); ratio to delta-rs's "
         "S2 time, as the issue sets it (delta-rs's Python API has no stats-pruned file listing)"),
        ("S4L", "S4 on a snapshot whose file state is loaded (after `add_actions()`), vs delta-rs's S2",
         "S2", "S4L", "samples", f'ours: `files(filter="{S4_LOADED_FILTER}")` (another range) after '
         "`Table.open(p).snapshot().add_actions()` (untimed): the pruning compiler on parsed stats, as "
         "delta-rs holds them after its load"),
        ("S5", f"S5 open + vacuum dry-run plan, {n:,} files", "S5", "S5", "samples",
         "delta-rs `DeltaTable(p).vacuum(dry_run=True, full=True)` · ours "
         "`Table.open(p).vacuum(dry_run=True)`; default 7-day retention"),
        ("S1S", f"S1 on the struct-stats table, {n:,} files", "S1S", "S1S", "samples",
         "as S1, on the same log checkpointed by delta-rs with `writeStatsAsStruct=true` (Delta's default)"),
        ("S2S", f"S2 on the struct-stats table, {n:,} files", "S2S", "S2S", "samples",
         "as S2 on that table: the checkpoint's `stats_parsed` replaces the JSON parse"),
        ("S3S", "S3 peak RSS of the S2 process, struct-stats table", "S2S", "S2S", "rss_kb", "as S3"),
        ("S4S", "S4 on the struct-stats table, vs delta-rs's S2 there", "S2S", "S4S", "samples",
         "as S4: the first filtered call after `Table.open(p).snapshot()` (load untimed)"),
        ("S4SL", "S4L on the struct-stats table, vs delta-rs's S2 there", "S2S", "S4SL", "samples",
         "as S4L"),
        ("S6", f"S6 checkpoint write, {n:,} files (the table's defaults)", "S6", "S6", "samples",
         "delta-rs `DeltaTable(p).create_checkpoint()` · ours `Table.open(p).checkpoint()`, each after "
         "loading the state untimed (open + `snapshot()`), on a hard-linked copy of the log; the table "
         "sets no stats format, so delta-rs writes JSON stats only and ours JSON + `stats_parsed` + "
         "`partitionValues_parsed` (Delta's default `writeStatsAsStruct=true`)"),
        ("S7", "S7 peak RSS growth during the S6 checkpoint call", "S6", "S6", "growth_kb",
         "the process's peak RSS reset just before the call (`/proc/self/clear_refs` 5), read after it, "
         "less the RSS just before it: what the checkpoint call itself allocates (ours also reads "
         "the old checkpoint's other columns then, since its load reads only the file keys)"),
        ("S6F", f"S6 after a full load, {n:,} files (both hold every file's parsed stats)", "S6F", "S6F",
         "samples", "as S6, but ours loads untimed with `Table.open(p).snapshot().add_actions()` too, so "
         "both engines start the checkpoint holding every file's parsed stats (delta-rs's `DeltaTable(p)` "
         "parses them at load; ours writes the ones `add_actions()` parsed as `stats_parsed`)"),
        ("S7F", "S7 peak RSS growth during the S6F checkpoint call", "S6F", "S6F", "growth_kb", "as S7"),
        ("S6V", f"S6 on a `checkpointPolicy=v2` table, {n:,} files (ours: V2, sidecars)", "S6V", "S6V",
         "samples", "as S6, on the same log plus one commit adding the `v2Checkpoint` feature with "
         "`delta.checkpointPolicy=v2`: ours writes a UUID-named V2 checkpoint whose file actions are "
         "streamed into sidecars (one per 262,144 files, each written on its own thread); delta-rs "
         "writes a classic checkpoint"),
        ("S7V", "S7 peak RSS growth during the S6V checkpoint call", "S6V", "S6V", "growth_kb", "as S7"),
        ("S6VF", f"S6V after a full load, {n:,} files (both hold every file's parsed stats)", "S6VF",
         "S6VF", "samples", "as S6V, with the loads of S6F"),
        ("S7VF", "S7 peak RSS growth during the S6VF checkpoint call", "S6VF", "S6VF", "growth_kb",
         "as S7"),
        ("S6S", f"S6 on the struct-stats table, {n:,} files (both write `stats_parsed`)", "S6S", "S6S",
         "samples", "as S6, on the table with `writeStatsAsStruct=true`: both engines write JSON stats, "
         "`stats_parsed` and `partitionValues_parsed`, from a checkpoint that has them"),
        ("S7S", "S7 peak RSS growth during the S6S checkpoint call", "S6S", "S6S", "growth_kb", "as S7"),
    ]  # fmt: skip


def rows(runner: Runner) -> list[dict[str, Any]]:
    """One dict per S row: label, delta-rs and our figure (formatted), ratio, target, verdict."""
    res, only = runner.results, set(runner.args.only)

    def med(key: str, engine: str, attr: str) -> float | None:
        m = res.get((key, engine))
        vals = getattr(m, attr, None) if m is not None and m.ok else None
        return statistics.median(vals) if vals else None

    api = next(iter(getattr(res.get(("S2", "ours")) or res.get(("S2S", "ours")), "apis", []) or []), "?")
    out: list[dict[str, Any]] = []
    for key, label, d_key, o_key, attr, note in _row_specs(runner.args.big_files, api):
        if key not in only:
            continue
        d, o = med(d_key, "deltars", attr), med(o_key, "ours", attr)
        m = res.get((o_key, "ours"))
        err = m.error if m is not None and m.error else None
        ratio = o / d if d and o is not None else None
        t = TARGETS[key]
        verdict = "**failed**" if err else "—" if ratio is None else "met" if ratio <= t else "**missed**"
        fmt = _fmt_rss if attr in RSS_ATTRS else _fmt_s
        out.append(
            {"key": key, "label": label, "d": fmt(d), "o": fmt(o), "ratio": ratio, "target": t,
             "verdict": verdict, "note": note, "error": err}
        )  # fmt: skip
    return out


def _header(runner: Runner, load: str, command: str) -> list[str]:
    from benchmarks.runner import machine_info

    info, m = runner.big_info, machine_info()
    lines = [
        START,
        "## Million-file table (issues 11 and 43)",
        "",
        f"`{command}` — {m['date']}, git {m['git']}, deltalake {m['deltalake']}, pyarrow "
        f"{m['pyarrow']}; load average {load}. Median of {runner.args.s_reps} measured fresh processes "
        "per engine after one discarded warm-up process; each worker first runs the same operation on a "
        "tiny table (one-time process costs untimed). Lower is better; ratio = ours / delta-rs.",
        "",
        f"Table: {info.get('files', runner.args.big_files):,} live files — {BIG_CHECKPOINT_VERSION} JSON "
        f"commits, a checkpoint of version {BIG_CHECKPOINT_VERSION} written by delta-rs, then {BIG_TAIL} "
        f"JSON commits (version {info.get('version', '?')}); partitioned by `part` (100 values), JSON stats "
        "for `id`, `value`, `name`; file k holds ids [100k, 100k+149], so S4's predicate may match 2 files. "
        "Built by `benchmarks/million.py` and validated with delta-rs"
        + (
            f"; for S5, {info['data_files']:,} empty data files + {info['orphans']:,} orphans dated 30 "
            "days back."
            if "orphans" in info
            else "."
        ),
        "",
    ]
    if any(n.startswith("**The machine was busy") for n in runner.notes):
        lines += [
            "**The machine was busy (load average above the core count); timings are noisy.** The "
            "engines are measured interleaved, so both see similar load.",
            "",
        ]
    before, after = info.get("engine_before"), engine_fingerprint()
    if before and before != after:
        moved = ", ".join(info.get("moved", [])) or "none (the change came between rows)"
        lines += [
            f"**The engine's sources changed during this run** (fingerprint {before} → {after}; someone "
            f"was editing `airflow_txnlog/engine/`). Rows during whose measurement they changed: {moved}.",
            "",
        ]
    return lines


def _samples(runner: Runner) -> list[str]:
    lines = [
        "| key | engine | n | min | median | max | peak RSS (median) | RSS growth in the call (median) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (key, engine), m in sorted(runner.results.items()):
        if key in S_KEYS and m.ok:
            s = [x * 1000 for x in m.samples]
            rss = _fmt_rss(statistics.median(m.rss_kb)) if m.rss_kb else "—"
            growth = _fmt_rss(statistics.median(m.growth_kb)) if m.growth_kb else "—"
            lines.append(
                f"| {key} | {engine} | {len(s)} | {min(s):.1f} | {statistics.median(s):.1f} | "
                f"{max(s):.1f} | {rss} | {growth} |"
            )
    for (key, engine), m in sorted(runner.results.items()):
        if key in S_KEYS and m.error:
            lines.append(f"\n- **{key} / {engine} failed**: `{m.error.splitlines()[0][:300]}`")
    return lines


def section(runner: Runner, load: str, command: str) -> str:
    """The markdown section (with its markers) for docs/benchmarks.md."""
    rs = rows(runner)
    lines = _header(runner, load, command)
    lines += ["| benchmark | delta-rs | ours | ratio | target | result |", "|---|---:|---:|---:|---:|---|"]
    for r in rs:
        ratio = f"{r['ratio']:.2f}×" if r["ratio"] is not None else "—"
        ours = r["o"] if not r["error"] else "failed"
        lines.append(f"| {r['label']} | {r['d']} | {ours} | {ratio} | ≤ {r['target']}× | {r['verdict']} |")
    lines += ["", "What each row calls:", ""] + [f"- **{r['key']}** — {r['note']}" for r in rs]
    if any(r["key"] in ("S2", "S6", "S6S") for r in rs):
        lines += ["", "Where the time goes (issue 43, profiled):", ""] + [f"- {p}" for p in PROFILE]
    missed = [r for r in rs if r["verdict"] == "**missed**"]
    if missed:
        lines += ["", "Why the missed targets are missed (today's engine):", ""]
        lines += [
            f"- **{r['key']}** ({r['ratio']:.2f}×, {r['ratio'] / r['target']:.1f}× its target): "
            + WHY.get(r["key"], "")
            for r in missed
        ]
    lines += ["", "Checks and extra figures:", "", *_checks(runner), "", *_samples(runner)]
    return "\n".join([*lines, END, ""])


def _checks(runner: Runner) -> list[str]:
    out, res = [], runner.results
    for key in ("S1", "S2", "S4", "S4L", "S5", "S1S", "S2S", "S4S", "S4SL"):
        counts = {
            e: res[(key, e)].counts[0]
            for e in ("deltars", "ours")
            if (key, e) in res and res[(key, e)].ok and res[(key, e)].counts
        }
        if counts:
            out.append(f"- {key}: files listed — " + ", ".join(f"{e} {c:,}" for e, c in counts.items()))
    for key in ("S4", "S4S"):
        m4 = res.get((key, "ours"))
        if m4 is None or not m4.ok:
            continue
        _median_line(out, f"{key}: open + load before the timed call (untimed)", m4.open_seconds)
        _median_line(out, f"{key}: the same query a second time on the same snapshot", m4.again)
    for key in ("S6", "S6V", "S6S"):
        for engine in ("deltars", "ours"):
            m = res.get((key, engine))
            if m is None or not m.ok:
                continue
            _median_line(
                out, f"{key} {engine}: open + load before the timed checkpoint (untimed)", m.open_seconds
            )
            if m.written:
                parts, size = m.written[0]
                out.append(f"- {key} {engine}: checkpoint written as {parts} file(s), {size / 1e6:,.0f} MB")
            for check in m.checks[:1]:
                out.append(
                    f"- {key}: delta-rs opens our checkpoint alone (commits before it removed): version "
                    f"{check['version']}, {check['files']:,} live files"
                )
    if "S5" in runner.args.only:
        out.append(
            "- S5: both plans should list exactly the orphans; the live (empty) files are referenced "
            "and the log is never a candidate."
        )
    return out
