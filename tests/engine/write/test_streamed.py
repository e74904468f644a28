"""One data file written from a stream of pieces (engine.write.streamed, issue 41 item 2): the same
rows and stats as `write_data_files` writes from the pieces at once, nothing left behind when a
piece fails or none has a row, and a planned compaction of the engine reads its bin one input file
at a time."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.log.stats import StatsAccumulator, compute_stats
from airflow_txnlog.engine.maintenance import rewrite_run
from airflow_txnlog.engine.storage import storage_for
from airflow_txnlog.engine.write.streamed import write_streamed

SCHEMA = pa.schema(
    [
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("d", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ("p", pa.string()),
    ]
)


def _piece(start: int, n: int, *, nan: bool = False, long: bool = False) -> pa.Table:
    base = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "i": [start + k if k % 5 else None for k in range(n)],
            "f": [float("nan") if nan and k == 0 else (start + k) / 3 for k in range(n)],
            "s": [("z" * 40 if long and k == 1 else f"v{start + k:05d}") for k in range(n)],
            "d": [decimal.Decimal(start + k) / 4 for k in range(n)],
            "ts": [base + dt.timedelta(hours=start + k) for k in range(n)],
            "st": [None if k % 7 == 0 else {"x": start - k, "y": f"y{k}"} for k in range(n)],
            "p": ["a"] * n,
        },
        schema=SCHEMA,
    )


@pytest.mark.parametrize(
    "pieces",
    [
        [_piece(0, 10), _piece(100, 7), _piece(-50, 3)],
        [_piece(0, 10), _piece(100, 7, nan=True)],  # (NaN in one piece: no float bounds at all)
        [_piece(0, 4, long=True), _piece(10, 4)],  # (a string past 32 characters: truncated once)
        [_piece(0, 1)],
    ],
)
def test_accumulated_stats_are_those_of_all_the_rows(pieces: list[pa.Table]) -> None:
    acc = StatsAccumulator(SCHEMA)
    for p in pieces:
        acc.add(p)
    assert json.loads(acc.json()) == json.loads(compute_stats(pa.concat_tables(pieces)))


def test_a_streamed_file_holds_the_rows_and_the_stats_of_all_pieces(tmp_path: Path) -> None:
    storage = storage_for(str(tmp_path / "t"))
    pieces = [_piece(0, 10), _piece(0, 0), _piece(100, 7)]
    add = write_streamed(storage, iter(pieces), {"p": "a"}, ["p"], {})
    assert add is not None and add.path.startswith("p=a/") and add.partition_values == {"p": "a"}
    written = pq.read_table(tmp_path / "t" / add.path)
    assert written.to_pylist() == pa.concat_tables(pieces).drop_columns(["p"]).to_pylist()
    assert json.loads(add.stats or "") == json.loads(
        compute_stats(pa.concat_tables(pieces).drop_columns(["p"]))
    )
    assert add.size == (tmp_path / "t" / add.path).stat().st_size


def test_no_rows_no_file_and_a_failing_piece_leaves_nothing(tmp_path: Path) -> None:
    storage = storage_for(str(tmp_path / "t"))
    assert write_streamed(storage, iter([_piece(0, 0)]), {"p": "a"}, ["p"], {}) is None

    def failing() -> Iterator[pa.Table]:
        yield _piece(0, 2000)
        raise OSError("the source went away")

    with pytest.raises(OSError, match="went away"):
        write_streamed(storage, failing(), {"p": "a"}, ["p"], {})
    assert not list((tmp_path / "t").rglob("*.parquet"))


def _counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many files each read of a rewrite took (rewrite_run.read_for_rewrite, counted)."""
    reads: list[int] = []
    real = rewrite_run.read_for_rewrite

    def counting(storage: Any, snap: Any, files: Any) -> Any:
        reads.append(len(files))
        return real(storage, snap, files)

    monkeypatch.setattr(rewrite_run, "read_for_rewrite", counting)
    return reads


def test_a_planned_compaction_reads_its_bin_one_file_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["p"])
    for k in range(5):
        t.write(_piece(100 * k, 20))
    rows = sorted(t.snapshot().to_arrow().column("i").to_pylist(), key=str)
    action = next(
        a for a in t.plan_maintenance(quiet_minutes=0).to_dict()["actions"] if a["kind"] == "compact"
    )
    reads = _counted_reads(monkeypatch)
    done = t.run_maintenance(action, dry_run=False)
    assert reads == [1] * 5 and done["actual"]["files_after"] == 1
    (out,) = t.snapshot().files()
    assert pq.ParquetFile(tmp_path / "t" / out.path).metadata.num_row_groups == 1  # (100 rows: one group)
    assert sorted(t.snapshot().to_arrow().column("i").to_pylist(), key=str) == rows


def test_a_plain_optimize_past_the_memory_budget_streams_runs_of_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Table.optimize() of a partition larger than the rewrite memory budget: one file per run of
    input files of about equal rows, each streamed one input at a time (never the partition at once)."""
    props = {"txnlog.maintenance.rewriteMemoryBytes": "1"}
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["p"], properties=props)
    for k in range(8):
        t.write(_piece(100 * k, 25))
    rows = sorted(t.snapshot().to_arrow().column("i").to_pylist(), key=str)
    size = sum(f.size for f in t.snapshot().files())
    reads = _counted_reads(monkeypatch)
    done = t.optimize(target_file_size=size // 4)
    assert reads == [1] * 8 and done.files_removed == 8 and 2 <= done.files_added <= 5
    counts = [f.num_records for f in t.snapshot().files()]
    assert sum(counts) == 200 and max(counts) - min(counts) <= 50  # (runs of about equal rows)
    assert sorted(t.snapshot().to_arrow().column("i").to_pylist(), key=str) == rows
