"""Spark DELETE and MERGE (airflow_txnlog.spark) vs delta-rs (deltalake) on identical copies.

Builds one table with Spark (default 5M rows in 100 files, range-partitioned by `id` so min/max
stats are selective), copies it, and on a fresh pair of copies per repetition runs:

- D1 DELETE with a selective predicate (`id` range of 20k rows), also with a predicate never seen
  before in the session (Spark's SQL check of it not yet remembered) and with the in-process lever
  off (the Spark path);
- M1 MERGE of 10k source rows into a narrow key range (half update existing rows, half insert:
  the table holds even ids only, the source has consecutive ids);
- D2 DELETE of 0.1% of the rows spread over every file, four ways: ours with deletion vectors (the
  in-process lever, and with it off: one Spark job), ours rewriting the files, delta-rs (time and
  bytes written);

through `SparkTable` (Spark local[2], session started and warmed up before any timing) and through
`deltalake` (`DeltaTable.delete`, `DeltaTable.merge`). Reports medians, the ratio ours / delta-rs,
and the files each rewrote vs the files that held matching rows. Writes its figures into its own
section of docs/benchmarks.md (between `<!-- spark-dml:start -->` and `<!-- spark-dml:end -->`),
leaving the rest of that file alone.

    .venv/bin/python -m benchmarks.spark_dml                 # full size, writes docs/benchmarks.md
    .venv/bin/python -m benchmarks.spark_dml --rows 500000 --files 20 --no-write   # quick look
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyspark
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from airflow_txnlog.engine import Table  # noqa: E402
from airflow_txnlog.spark import SparkTable  # noqa: E402
from airflow_txnlog.spark.dml import delete_local  # noqa: E402
from benchmarks.doc_sections import replace_section  # noqa: E402

START, END = "<!-- spark-dml:start -->", "<!-- spark-dml:end -->"
TARGET_RATIO = 1.5
D2_PREDICATE = "id % 2000 = 0"  # ids are even: 1 row in 1000, in every file


def _session() -> Any:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the txnlog data source's workers
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("spark-dml-benchmark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "3g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def build(spark: Any, path: Path, rows: int, files: int) -> None:
    df = spark.range(rows).select(
        (F.col("id") * 2).alias("id"),
        (F.col("id") % 1000 / 7).cast("double").alias("value"),
        F.concat(F.lit("name-"), (F.col("id") % 5000).cast("string")).alias("name"),
        F.date_add(F.lit("2024-01-01").cast("date"), (F.col("id") % 365).cast("int")).alias("day"),
    )
    st = SparkTable.create(spark, str(path), df)
    st.write(df.repartitionByRange(files, "id"))


def _source_rows(lo: int, n: int) -> pa.Table:
    ids = list(range(lo, lo + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "value": pa.array([-1.0] * n, pa.float64()),
            "name": pa.array([f"merged-{i}" for i in ids], pa.string()),
            "day": pa.array([None] * n, pa.date32()),
        }
    )


def _files_with_matches(path: Path, lo: int, hi: int) -> int:
    """Files holding an id in [lo, hi) (the table is sorted: stats say exactly)."""
    count = 0
    for f in Table.open(str(path)).snapshot().files():
        s = json.loads(f.stats or "{}")
        if s["minValues"]["id"] < hi and s["maxValues"]["id"] >= lo:
            count += 1
    return count


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_delete_spark(spark: Any, template: Path, work: Path, lo: int, hi: int) -> dict[str, Any]:
    """D1 with the in-process lever turned off: the Spark path (find the files, rewrite them)."""
    with _levers_off():
        return run_delete(spark, template, work, lo, hi)


@contextlib.contextmanager
def _levers_off() -> Iterator[None]:
    """The in-process DELETE levers off (both byte bounds 0): Spark runs."""
    saved = delete_local.MAX_BYTES, delete_local.DV_MAX_BYTES
    delete_local.MAX_BYTES = delete_local.DV_MAX_BYTES = 0
    try:
        yield
    finally:
        delete_local.MAX_BYTES, delete_local.DV_MAX_BYTES = saved


def run_delete(spark: Any, template: Path, work: Path, lo: int, hi: int) -> dict[str, Any]:
    ours, theirs = work / "d_ours", work / "d_theirs"
    for p in (ours, theirs):
        shutil.rmtree(p, ignore_errors=True)
        shutil.copytree(template, p)
    predicate = f"id >= {lo} AND id < {hi}"
    t_ours, r = _timed(lambda: SparkTable(spark, str(ours)).delete(predicate))
    t_theirs, m = _timed(lambda: DeltaTable(str(theirs)).delete(predicate))
    return {
        "ours": t_ours,
        "theirs": t_theirs,
        "ours_rewritten": r.metrics["numRemovedFiles"],
        "theirs_rewritten": m["num_removed_files"],
        "deleted": r.metrics["numDeletedRows"],
        "theirs_deleted": m["num_deleted_rows"],
    }


def _new_bytes(path: Path, template: Path) -> int:
    """Bytes of the data and DV files under `path` that the template copy did not have."""
    total = 0
    for f in path.rglob("*"):
        rel = f.relative_to(path)
        if f.is_file() and rel.parts[0] != "_delta_log" and not (template / rel).exists():
            total += f.stat().st_size
    return total


def run_delete_scattered(spark: Any, template: Path, work: Path, predicate: str) -> dict[str, Any]:
    """D2: delete 0.1% of the rows, spread over every file: deletion vectors (in-process, and on
    Spark with the lever off) vs rewrite vs delta-rs."""
    paths = {k: work / f"d2_{k}" for k in ("rewrite", "dv", "dv_spark", "theirs")}
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True)
        shutil.copytree(template, p)
    for k in ("dv", "dv_spark"):
        Table.open(str(paths[k])).set_properties({"delta.enableDeletionVectors": "true"})
    t_rw, r_rw = _timed(lambda: SparkTable(spark, str(paths["rewrite"])).delete(predicate))
    t_dv, r_dv = _timed(lambda: SparkTable(spark, str(paths["dv"])).delete(predicate))
    with _levers_off():
        t_dvs, r_dvs = _timed(lambda: SparkTable(spark, str(paths["dv_spark"])).delete(predicate))
    t_th, m = _timed(lambda: DeltaTable(str(paths["theirs"])).delete(predicate))
    deleted = {
        r_dv.metrics["numDeletedRows"],
        r_dvs.metrics["numDeletedRows"],
        r_rw.metrics["numDeletedRows"],
    }
    assert deleted == {m["num_deleted_rows"]}, (deleted, m["num_deleted_rows"])
    return {
        "rewrite": t_rw,
        "dv": t_dv,
        "dv_spark": t_dvs,
        "theirs": t_th,
        "deleted": r_dv.metrics["numDeletedRows"],
        "dv_files": r_dv.metrics["numDeletionVectorsAdded"],
        "candidate_bytes": sum(f.size for f in Table.open(str(template)).snapshot().files()),
        **{f"{k}_bytes": _new_bytes(p, template) for k, p in paths.items()},
    }


def run_merge(spark: Any, template: Path, work: Path, lo: int, n: int) -> dict[str, Any]:
    ours, theirs = work / "m_ours", work / "m_theirs"
    for p in (ours, theirs):
        shutil.rmtree(p, ignore_errors=True)
        shutil.copytree(template, p)
    source = _source_rows(lo, n)
    source_df = spark.createDataFrame(source).cache()
    source_df.count()

    def ours_merge() -> Any:
        st = SparkTable(spark, str(ours))
        return (
            st.merge(source_df, "t.id = s.id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )

    def theirs_merge() -> Any:
        dt = DeltaTable(str(theirs))
        builder = dt.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        return builder.when_matched_update_all().when_not_matched_insert_all().execute()

    t_ours, r = _timed(ours_merge)
    t_theirs, m = _timed(theirs_merge)
    source_df.unpersist()
    return {
        "ours": t_ours,
        "theirs": t_theirs,
        "ours_rewritten": r.metrics["numTargetFilesRemoved"],
        "theirs_rewritten": m["num_target_files_removed"],
        "updated": r.metrics["numTargetRowsUpdated"],
        "inserted": r.metrics["numTargetRowsInserted"],
        "theirs_updated": m["num_target_rows_updated"],
        "theirs_inserted": m["num_target_rows_inserted"],
    }


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def _fmt_bytes(n: float) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e6 else f"{n / 1e3:,.1f} kB"


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _head(args: argparse.Namespace, results: dict[str, Any], build_s: float) -> list[str]:
    return [
        START,
        "## Spark DML: delete and merge vs delta-rs",
        "",
        "Generated by `python -m benchmarks.spark_dml` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        f"{args.rows:,} rows in {args.files} files (sorted by `id`, built by Spark in {build_s:.0f} s), "
        f"{args.reps} repetitions on fresh identical copies, medians. Ours = `airflow_txnlog.spark` on "
        f"Spark {pyspark.__version__} `local[2]` (session start excluded; one untimed warm-up run of each "
        f"operation first); delta-rs = "
        f"`deltalake` {deltalake.__version__}. Load average (1/5/15 min) {results['load_start']} at start, "
        f"{results['load_end']} at end, on {os.cpu_count()} cores "
        f"({platform.processor() or platform.machine()}).",
    ]


def _operations(results: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "| operation | delta-rs | ours | ratio | target | files rewritten (ours / delta-rs) "
        "| files with matches |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, label, matches in (
        ("delete", "D1 DELETE, 20k-row id range", "delete_matches"),
        ("delete_new", "D1 with a predicate new to the session (Spark's check of it runs)", "delete_matches"),
        ("delete_spark", "D1 with the in-process lever off (Spark finds and rewrites)", "delete_matches"),
        ("merge", "M1 MERGE 10k rows, half update / half insert", "merge_matches"),
    ):
        runs = results[key]
        ours, theirs = _median(runs, "ours"), _median(runs, "theirs")
        ratio = ours / theirs
        verdict = "met" if ratio <= TARGET_RATIO else "**missed**"
        lines.append(
            f"| {label} | {_fmt(theirs)} | {_fmt(ours)} | {ratio:.2f}x | ≤ {TARGET_RATIO}x ({verdict}) | "
            f"{runs[0]['ours_rewritten']} / {runs[0]['theirs_rewritten']} | {results[matches]} |"
        )
    return lines


D2_KINDS = ("dv", "dv_spark", "rewrite", "theirs")


def _scattered(d2: list[dict[str, Any]]) -> list[str]:
    med = {k: _median(d2, k) for k in D2_KINDS}
    size = {k: _median(d2, f"{k}_bytes") for k in D2_KINDS}
    d2_verdict = "met" if med["dv"] / med["theirs"] <= TARGET_RATIO else "**missed**"
    return [
        "",
        f"D2 DELETE of 0.1% of the rows spread over every file (`{D2_PREDICATE}`: "
        f"{d2[0]['deleted']:,} rows): deletion vectors (`delta.enableDeletionVectors=true`) vs rewriting "
        "the files vs delta-rs (which rewrites; it cannot write deletion vectors). Target for deletion "
        f"vectors: ≤ {TARGET_RATIO}x delta-rs ({d2_verdict}).",
        "",
        "| D2 | time | ratio to delta-rs | bytes written |",
        "|---|---:|---:|---:|",
        *[
            f"| {label} | {_fmt(med[k])} | {med[k] / med['theirs']:.2f}x | {_fmt_bytes(size[k])} |"
            for k, label in (
                ("dv", "ours, deletion vectors (in-process lever)"),
                ("dv_spark", "ours, deletion vectors, lever off (one Spark job)"),
                ("rewrite", "ours, rewrite"),
                ("theirs", "delta-rs"),
            )
        ],
        "",
        f"With deletion vectors {d2[0]['dv_files']} files got a DV, all in one DV file; no data file was "
        f"rewritten: {med['rewrite'] / med['dv']:.1f}x faster than our rewrite, "
        f"{size['rewrite'] / max(size['dv'], 1):,.0f}x fewer bytes. The candidates (every file, "
        f"{d2[0]['candidate_bytes'] / 1e6:,.1f} MB) are within `delete_local.DV_MAX_BYTES`, so the driver "
        "reads only their `id` column with pyarrow and marks the matching positions itself, no Spark "
        "job; with the lever off one Spark job collects the positions (their counts are the list "
        "lengths: the separate counting job is gone).",
    ]


def _tail(results: dict[str, Any]) -> list[str]:
    d, m = results["delete"][0], results["merge"][0]
    return [
        "",
        f"Rows: DELETE removed {d['deleted']:,} (delta-rs {d['theirs_deleted']:,}); MERGE updated "
        f"{m['updated']:,} and inserted {m['inserted']:,} "
        f"(delta-rs {m['theirs_updated']:,} / {m['theirs_inserted']:,}).",
        "Per-repetition seconds (ours / delta-rs): "
        + "; ".join(
            f"{k}: " + ", ".join(f"{r['ours']:.3f}/{r['theirs']:.3f}" for r in results[k])
            for k in ("delete", "delete_new", "delete_spark", "merge")
        )
        + "; D2 (dv / dv lever off / rewrite / delta-rs): "
        + ", ".join("/".join(f"{r[k]:.2f}" for k in D2_KINDS) for r in results["delete_dv"]),
        "",
        "Levers (D1): the engine prunes the candidates to the files whose min/max admit the range; they are"
        " small and the predicate has an exact Arrow form, so the driver reads, filters and rewrites them"
        " itself (`spark.delete_local`, no Spark job). Spark's analyser checks the predicate before"
        " anything is written, on a helper thread while the engine plans, and a pass is remembered per"
        " session, columns, text and analysis settings for predicates the engine parses (the row with a"
        " new predicate pays the check each time). With the lever off, Spark runs one job to find the"
        " files holding matches and one to rewrite them through the txnlog data source (executors write the"
        " final files: no staging, footer reads or moves). MERGE (equality-only ON, unconditional WHEN"
        " MATCHED) collects the source keys in one Spark job, finds the touched file on the driver with an"
        " Arrow join (`spark.merge_local`) and rewrites it on Spark: two jobs instead of three. Files"
        " rewritten equal the files holding matches in both engines.",
        END,
    ]


def report(args: argparse.Namespace, results: dict[str, Any], build_s: float) -> str:
    lines = [
        *_head(args, results, build_s),
        *_operations(results),
        *_scattered(results["delete_dv"]),
        *_tail(results),
    ]
    return "\n".join(lines) + "\n"


def _load() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    ap.add_argument("--output", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="spark-dml-"))
    work.mkdir(parents=True, exist_ok=True)
    spark = _session()
    results: dict[str, Any] = {"load_start": _load()}
    try:
        template = work / "template"
        shutil.rmtree(template, ignore_errors=True)
        build_s, _ = _timed(lambda: build(spark, template, args.rows, args.files))
        max_id = 2 * (args.rows - 1)
        lo = max_id // 3 - (max_id // 3) % 2
        hi = lo + 40_000  # 20k even ids
        m_lo = 2 * max_id // 3
        results["delete_matches"] = _files_with_matches(template, lo, hi)
        results["merge_matches"] = _files_with_matches(template, m_lo, m_lo + 10_000)
        run_delete(spark, template, work, lo, hi)  # warm-up (JIT, class loading): not reported
        run_merge(spark, template, work, m_lo, 10_000)
        results["delete"] = [run_delete(spark, template, work, lo, hi) for _ in range(args.reps)]
        results["delete_new"] = [  # (shifted by 2k ids: a text the session has not checked)
            run_delete(spark, template, work, lo + 2 * k, hi + 2 * k) for k in range(1, args.reps + 1)
        ]
        run_delete_spark(spark, template, work, lo, hi)  # warm-up of the Spark path
        results["delete_spark"] = [run_delete_spark(spark, template, work, lo, hi) for _ in range(args.reps)]
        results["merge"] = [run_merge(spark, template, work, m_lo, 10_000) for _ in range(args.reps)]
        run_delete_scattered(spark, template, work, D2_PREDICATE)  # warm-up
        results["delete_dv"] = [
            run_delete_scattered(spark, template, work, D2_PREDICATE) for _ in range(args.reps)
        ]
        results["load_end"] = _load()
        section = report(args, results, build_s)
        print(section)
        if not args.no_write:
            replace_section(args.output, START, END, section)
            print(f"wrote the spark-dml section of {args.output}")
    finally:
        spark.stop()
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
