"""Stats leaf selection and formats, the writer's conforming of data, partition value forms (issue 10
follow-ups beyond tests/compat/test_protocol_defects.py)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, SchemaMismatchError, Table
from airflow_txnlog.engine.log.stats import compute_stats
from airflow_txnlog.engine.spi import parse_partition_value, serialize_partition_value, stats_columns

_PROP = "delta.dataSkippingStatsColumns"


def test_stats_columns_parse_nested_and_backtick_quoted_names() -> None:
    text = " a , `b.c`.d, `x``y`, s"
    assert stats_columns({_PROP: text}) == [("a",), ("b.c", "d"), ("x`y",), ("s",)]
    assert stats_columns({}) is None and stats_columns({_PROP: " , "}) is None
    for bad in ("`a", "a`b`", "a..b"):
        with pytest.raises(InvalidArgumentError, match=_PROP):
            stats_columns({_PROP: bad})


def test_stats_columns_pick_leaves() -> None:
    st = pa.struct([("x", pa.int64()), ("y", pa.string())])
    data = pa.table({"a": [1, 2], "S": pa.array([{"x": 1, "y": "q"}, None], st), "d": [1.5, 2.5]})
    for chosen, keys in (([("s", "x")], {"S"}), ([("s",), ("D",)], {"S", "d"}), ([("nope",)], set())):
        assert set(json.loads(compute_stats(data, stats_columns=chosen))["nullCount"]) == keys
    assert json.loads(compute_stats(data, stats_columns=[("s", "x")]))["nullCount"] == {"S": {"x": 1}}


def test_short_years_written_by_older_versions_still_read() -> None:
    assert parse_partition_value("999-12-31 00:00:00.000000", pa.timestamp("us")) == dt.datetime(999, 12, 31)
    assert parse_partition_value("999-01-02", pa.date32()) == dt.date(999, 1, 2)
    ts = dt.datetime(5, 1, 1, tzinfo=dt.UTC)
    assert serialize_partition_value(ts, pa.timestamp("us", "UTC")) == "0005-01-01 00:00:00.000000"


def test_binary_partition_forms() -> None:
    assert parse_partition_value(r"\u0063\u0061\u0066\u00C3\u00A9", pa.binary()) == b"caf\xc3\xa9"
    assert serialize_partition_value(decimal.Decimal("0E-10"), pa.decimal128(12, 10)) == "0.0000000000"
    with pytest.raises(InvalidArgumentError, match=r"'b'.*escapes"):
        serialize_partition_value(rb"\u0041", pa.binary(), "b")


def test_nanoseconds_are_floored_at_any_depth(tmp_path: Path) -> None:
    schema = pa.schema([("ts", pa.timestamp("us")), ("s", pa.struct([("t", pa.timestamp("us", "UTC"))]))])
    t = Table.create(str(tmp_path / "t"), schema=schema)
    nested = pa.array([{"t": -1}, None], pa.struct([("t", pa.timestamp("ns", "UTC"))]))
    t.write(pa.table({"ts": pa.array([-1, 1_999], pa.timestamp("ns")), "s": nested}))
    rows = t.snapshot().to_arrow().to_pylist()
    before_1970 = dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    assert rows[0] == {"ts": before_1970, "s": {"t": before_1970.replace(tzinfo=dt.UTC)}}
    assert rows[1] == {"ts": dt.datetime(1970, 1, 1, 0, 0, 0, 1), "s": None}


def test_not_null_fields_under_null_structs_are_fine_and_named_when_violated(tmp_path: Path) -> None:
    inner = pa.struct([pa.field("x", pa.int64(), nullable=False)])
    schema = pa.schema(
        [("id", pa.int64()), ("s", inner), ("l", pa.list_(pa.field("element", pa.int64(), False)))]
    )
    t = Table.create(str(tmp_path / "t"), schema=schema)
    loose = pa.struct([("x", pa.int64())])
    masked = pa.StructArray.from_arrays(
        [pa.array([None, 1], pa.int64())], fields=list(loose), mask=pa.array([True, False])
    )
    t.write(pa.table({"id": [1, 2], "s": masked}))  # a null struct, and `l` missing: both legal
    assert t.snapshot().to_arrow().column("s").to_pylist() == [None, {"x": 1}]
    bad = pa.table({"id": [3], "s": pa.array([{"x": 1}], loose), "l": [[1, None]]})
    with pytest.raises(SchemaMismatchError, match=r"'l\.element' has 1 null"):
        t.write(bad)
    assert t.latest_version() == 1


def test_bulk_stats_parse_reads_sliced_and_non_ascii_columns_like_whole_ones() -> None:
    from airflow_txnlog.engine.log.stats_struct import _document, parse_stats  # noqa: PLC0415

    target = pa.struct([("numRecords", pa.int64()), ("minValues", pa.struct([("s", pa.string())]))])
    texts = ['{"numRecords": 1, "minValues": {"s": "é"}}', None, '{"numRecords": 3}', '{"numRecords": 4}']
    whole = pa.array(["{}", *texts])
    assert parse_stats(whole.slice(1), target).to_pylist() == parse_stats(pa.array(texts), target).to_pylist()
    assert parse_stats(pa.array(texts), target).to_pylist()[0] == {"numRecords": 1, "minValues": {"s": "é"}}
    assert _document(pa.array(["{a}", '{"é"}']).slice(1)).to_pybytes() == '{"é"}'.encode()
