"""Partition pruning through generated partition columns (issue 26, item 3, beyond delta-rs): a
filter on `ts` prunes the partitions of `d = CAST(ts AS DATE)`, as Delta on Spark does.

The tables keep no column stats (`delta.dataSkippingNumIndexedCols=0`), so what is pruned is pruned
by the partition values alone; a twin whose `d` is a plain column shows what is read without it.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import Table, parse_predicate

NO_STATS = {"delta.dataSkippingNumIndexedCols": "0"}
DAYS = 30


def _table(
    path: Path, ts_type: pa.DataType, generated: dict[str, str] | None, extra: list[pa.Field]
) -> Table:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("ts", ts_type), *extra])
    parts = [f.name for f in extra]
    t = Table.create(
        str(path), schema=schema, partition_by=parts, properties=NO_STATS, generated_columns=generated
    )
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC if ts_type.tz else None)
    stamps = [base + dt.timedelta(hours=7 * i + 3) for i in range(DAYS * 24 // 7)]
    data = pa.table({"id": list(range(len(stamps))), "ts": pa.array(stamps, ts_type)})
    if generated is None:  # the twin: the same values, written as a plain column
        computed = Table.open(str(path.parent / "generated")).snapshot().to_arrow().sort_by("id")
        data = data.append_column(extra[0], computed.column(extra[0].name))
    t.write(data)
    return t


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Table, Table]:
    d = [pa.field("d", pa.date32())]
    gen = _table(tmp_path / "generated", pa.timestamp("us", tz="UTC"), {"d": "CAST(ts AS DATE)"}, d)
    return gen, _table(tmp_path / "plain", pa.timestamp("us", tz="UTC"), None, d)


def test_a_filter_on_the_source_reads_a_third_of_the_files(pair: tuple[Table, Table]) -> None:
    gen, plain = pair
    where = "ts >= '2024-01-21 00:00:00'"
    assert len(plain.snapshot().files()) == len(gen.snapshot().files()) == DAYS
    assert len(plain.snapshot().files(where)) == DAYS  # no stats, no derived filter: every file
    # days 20..30: the 21st on, plus one day for a writer whose session time zone is not UTC
    assert sorted(f.partition_values["d"] for f in gen.snapshot().files(where)) == [
        f"2024-01-{day:02d}" for day in range(20, 31)
    ]
    assert gen.snapshot().to_arrow(filter=where).sort_by("id") == plain.snapshot().to_arrow(
        filter=where
    ).sort_by("id").select(gen.snapshot().schema.names)


@pytest.mark.parametrize(
    ("where", "days"),
    [
        ("ts < '2024-01-03'", [1, 2, 3, 4]),  # (strict or not: the bound day itself is kept)
        ("ts = '2024-01-10 10:00:00'", [9, 10, 11]),
        ("ts IN ('2024-01-10 10:00:00', '2024-01-20 10:00:00')", [9, 10, 11, 19, 20, 21]),
        ("ts >= '2024-01-29' OR ts < '2024-01-02'", [1, 2, 3, 28, 29, 30]),
        ("ts >= '2024-01-29' AND id > 0", [28, 29, 30]),
        ("ts >= '2024-01-29' OR id = 3", list(range(1, DAYS + 1))),  # one side derives nothing
        ("NOT (ts < '2024-01-29')", list(range(1, DAYS + 1))),
        ("ts != '2024-01-10 10:00:00'", list(range(1, DAYS + 1))),
    ],
)
def test_what_each_shape_of_filter_prunes(pair: tuple[Table, Table], where: str, days: list[int]) -> None:
    gen, _ = pair
    assert sorted(f.partition_values["d"] for f in gen.snapshot().files(where)) == [
        f"2024-01-{day:02d}" for day in days
    ]


UTC = pa.timestamp("us", tz="UTC")
NTZ = pa.timestamp("us")
ALL = -1


@pytest.mark.parametrize(
    ("ts_type", "column", "expression", "where", "kept"),
    [
        # a timestamp without time zone needs no margin: days 21..30, and days 1..3
        (NTZ, pa.field("d", pa.date32()), "CAST(ts AS DATE)", "ts >= '2024-01-21'", 10),
        (NTZ, pa.field("d", pa.date32()), "TO_DATE(ts)", "ts < '2024-01-03'", 3),
        (NTZ, pa.field("m", pa.string()), "DATE_FORMAT(ts, 'yyyy-MM-dd')", "ts < '2024-01-03'", 3),
        (UTC, pa.field("h", UTC), "DATE_TRUNC('DAY', ts)", "ts < '2024-01-03'", 5),  # + a margin day twice
        (NTZ, pa.field("y", pa.int32()), "YEAR(ts)", "ts < '2023-06-01'", 0),
        (NTZ, pa.field("m", pa.int32()), "MONTH(ts)", "ts < '2023-06-01'", ALL),  # wraps: derives nothing
        (NTZ, pa.field("m", pa.string()), "DATE_FORMAT(ts, 'dd/MM/yyyy')", "ts < '2024-01-03'", ALL),
    ],
)
def test_each_kind_of_expression(
    tmp_path: Path, ts_type: pa.DataType, column: pa.Field, expression: str, where: str, kept: int
) -> None:
    t = _table(tmp_path / "generated", ts_type, {column.name: expression}, [column])
    assert len(t.snapshot().files(where)) == (len(t.snapshot().files()) if kept == ALL else kept)
    everything = t.snapshot().to_arrow()
    expected = parse_predicate(where, everything.schema).filter(everything)
    assert t.snapshot().to_arrow(filter=where).sort_by("id") == expected.sort_by("id")


def test_a_substring_prefix_prunes(tmp_path: Path) -> None:
    schema = pa.schema([("name", pa.string()), ("p", pa.string())])
    t = Table.create(str(tmp_path / "s"), schema=schema, partition_by=["p"], properties=NO_STATS,
                     generated_columns={"p": "SUBSTRING(name, 1, 2)"})  # fmt: skip
    names = [f"{a}{b}-{i}" for a in "abcd" for b in "xyz" for i in range(3)]
    t.write(pa.table({"name": names}, schema=pa.schema([("name", pa.string())])))
    assert sorted({f.partition_values["p"] for f in t.snapshot().files("name >= 'cy'")}) == [
        "cy",
        "cz",
        "dx",
        "dy",
        "dz",
    ]
    assert sorted({f.partition_values["p"] for f in t.snapshot().files("name = 'bz-1'")}) == ["bz"]


def test_pruned_reads_equal_full_reads_for_random_filters(pair: tuple[Table, Table]) -> None:
    """Soundness: whatever the filter, the rows read through the pruned files are the filter's rows."""
    gen, _ = pair
    snap = gen.snapshot()
    everything = snap.to_arrow()
    rng = random.Random(26)
    ops = ["<", "<=", ">", ">=", "="]
    for _ in range(60):
        stamp = dt.datetime(2023, 12, 30) + dt.timedelta(minutes=rng.randrange(0, 33 * 24 * 60))
        other = dt.datetime(2023, 12, 30) + dt.timedelta(minutes=rng.randrange(0, 33 * 24 * 60))
        where = f"ts {rng.choice(ops)} '{stamp:%Y-%m-%d %H:%M:%S}'"
        where += rng.choice(["", f" AND ts {rng.choice(ops)} '{other:%Y-%m-%d %H:%M:%S}'",
                             f" OR ts {rng.choice(ops)} '{other:%Y-%m-%d %H:%M:%S}'"])  # fmt: skip
        kept = parse_predicate(where, everything.schema).filter(everything)
        expected = sorted(kept.column("id").to_pylist())
        assert sorted(snap.to_arrow(filter=where).column("id").to_pylist()) == expected, where


def test_an_inner_function_or_an_empty_prefix_never_loses_a_row(tmp_path: Path) -> None:
    """Review findings: SUBSTRING(lower(s), 1, 1) is not ordered like s ('a' >= 'Z' but 'a' < 'z'),
    and an empty SUBSTRING is stored as a NULL partition."""
    schema = pa.schema([("s", pa.string()), ("g", pa.string()), ("e", pa.string())])
    t = Table.create(str(tmp_path / "t"), schema=schema, partition_by=["g"], properties=NO_STATS,
                     generated_columns={"g": "SUBSTRING(lower(s), 1, 1)"})  # fmt: skip
    t.write(pa.table({"s": ["a", "Zz"]}, schema=pa.schema([("s", pa.string())])))
    assert sorted(r["s"] for r in t.snapshot().to_arrow(filter="s >= 'Z'").to_pylist()) == ["Zz", "a"]
    u = Table.create(str(tmp_path / "u"), schema=schema, partition_by=["g"], properties=NO_STATS,
                     generated_columns={"g": "SUBSTRING(s, 1, 2)"})  # fmt: skip
    u.write(pa.table({"s": ["", "abc"]}, schema=pa.schema([("s", pa.string())])))
    assert [r["s"] for r in u.snapshot().to_arrow(filter="s <= 'a'").to_pylist()] == [""]
