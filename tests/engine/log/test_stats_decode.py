"""The bulk stats decoder (engine.log.stats_decode): arrow-rs's JSON decoder first, Arrow C++'s reader
where it refuses. Writer-shaped stats must read the same through both; each value arrow-rs reads
where Arrow C++'s refuses must stay a true bound; the strict read (`complete`) must never accept a
struct that lacks a key or coerced a string."""

from __future__ import annotations

import datetime as dt
import decimal

import orjson
import pyarrow as pa
import pyarrow.json as pj
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_txnlog.engine.log import stats_decode
from airflow_txnlog.engine.log.stats_struct import parse_stats, parse_stats_complete

LEAVES = pa.struct(
    [
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("d", pa.decimal128(12, 3)),
        ("t", pa.timestamp("us", "UTC")),
        ("n", pa.struct([("x", pa.int32())])),
    ]
)
TARGET = pa.struct(
    [
        ("numRecords", pa.int64()),
        ("minValues", LEAVES),
        ("maxValues", LEAVES),
        ("nullCount", pa.struct([("i", pa.int64()), ("s", pa.int64())])),
        ("tightBounds", pa.bool_()),
    ]
)
SCHEMA = pa.schema(list(TARGET))


def _arrow_cpp(lines: list[str]) -> list[object]:
    table = pj.read_json(
        pa.BufferReader("".join(lines).encode()),
        parse_options=pj.ParseOptions(explicit_schema=SCHEMA, newlines_in_values=True),
    )
    return table.to_pylist()


def _decode(lines: list[str], *, complete: bool = False) -> list[object]:
    arr = pa.array(lines, pa.string())
    return stats_decode.decode(arr.buffers()[2], SCHEMA, complete=complete, lines=arr).to_pylist()


@pytest.fixture
def no_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrow C++'s reader unavailable: what is read was read by arrow-rs."""

    def refuse(*_a: object, **_k: object) -> pa.Table:
        raise AssertionError("Arrow C++'s reader was used")

    monkeypatch.setattr(stats_decode.pj, "read_json", refuse)


_ts = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
)
_leaf_values = st.fixed_dictionaries(
    {},
    optional={
        "i": st.integers(-(2**63), 2**63 - 1),
        "f": st.floats(allow_nan=False, allow_infinity=False),
        "s": st.text(alphabet=st.characters(exclude_characters='"\\', codec="utf-8"), max_size=12),
        "d": st.decimals(min_value=-(10**8), max_value=10**8, places=3, allow_nan=False),
        "t": _ts.map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"),
        "n": st.fixed_dictionaries({}, optional={"x": st.integers(-(2**31), 2**31 - 1)}),
    },
)
_stats = st.fixed_dictionaries(
    {"numRecords": st.integers(0, 2**40)},
    optional={
        "minValues": _leaf_values,
        "maxValues": _leaf_values,
        "nullCount": st.fixed_dictionaries({}, optional={"i": st.integers(0, 99), "s": st.integers(0, 9)}),
        "tightBounds": st.booleans(),
    },
)


def _line(stats: dict[str, object]) -> str:
    # (decimals as JSON numbers, as writers write them)
    return orjson.dumps(stats, default=lambda d: orjson.Fragment(str(d))).decode()


@settings(max_examples=60, deadline=None)
@given(st.lists(_stats, min_size=1, max_size=20))
def test_writer_shaped_stats_read_the_same_through_both_decoders(rows: list[dict[str, object]]) -> None:
    lines = [_line(r) for r in rows]
    expected = _arrow_cpp(lines)
    # arrow-rs itself, not `decode` (which would fall back to Arrow C++'s reader on a refusal)
    doc = pa.py_buffer("".join(lines).encode())
    assert pa.table(stats_decode.read_json(pa.BufferReader(doc), SCHEMA)).to_pylist() == expected
    assert _decode(lines) == expected
    assert _decode(lines, complete=True) == expected


def test_writer_shaped_stats_are_read_by_arrow_rs_strict_or_not(no_fallback: None) -> None:
    lines = [
        '{"numRecords":3,"minValues":{"i":-5,"f":1.5,"s":"a:null","d":1.125,"t":"2024-01-01T00:00:00.000Z",'
        '"n":{"x":7}},"maxValues":{"i":9,"s":"z"},"nullCount":{"i":0,"s":null},"tightBounds":true}',
        '{"numRecords":0}',
        '{"numRecords":1,"minValues":{}}',
    ]
    rows = _decode(lines, complete=True)
    assert rows == _decode(lines) and len(rows) == 3
    assert rows[0]["minValues"]["s"] == "a:null" and rows[0]["nullCount"] == {"i": 0, "s": None}


def test_values_arrow_rs_reads_where_arrow_cpp_refuses_stay_true_bounds(no_fallback: None) -> None:
    lines = [
        '{"numRecords":1,"minValues":{"i":-1.5,"d":1.2345},"maxValues":{"i":2.9,"d":-1.2345}}',
        '{"numRecords":2,"minValues":{"f":"NaN","i":"5"},"maxValues":{"f":1e400,"t":5}}',
    ]
    first, second = _decode(lines)
    # truncated toward zero: an integer column's min >= -1.5 is >= -1, its max <= 2.9 is <= 2
    assert first["minValues"]["i"] == -1 and first["maxValues"]["i"] == 2
    assert first["minValues"]["d"] == decimal.Decimal("1.234")
    assert first["maxValues"]["d"] == decimal.Decimal("-1.234")
    # non-finite floats dropped; a string spelling a number read as it, a number as microseconds
    assert second["minValues"]["f"] is None and second["maxValues"]["f"] is None
    assert second["minValues"]["i"] == 5
    assert second["maxValues"]["t"] == dt.datetime(1970, 1, 1, 0, 0, 0, 5, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "line",
    [
        '{"numRecords":1,"extra":2}',  # a key the struct lacks
        '{"numRecords":1,"minValues":{"i":1,"q":{"a":1}}}',
        '{"numRecords":"1"}',  # a string read as a number
        '{"numRecords":1,"minValues":{"t":12}}',  # a number read as a timestamp
        '{"numRecords":1,"numRecords":2}',  # a key twice
    ],
)
def test_the_strict_read_refuses_what_the_struct_does_not_hold(line: str) -> None:
    target = TARGET
    lines = pa.array(['{"numRecords":7}', line], pa.string())
    assert parse_stats_complete(lines, target) is None
    assert parse_stats(lines, target)[0].as_py()["numRecords"] == 7  # (the lenient read still reads)


@pytest.mark.parametrize(
    "line",
    [
        '{"numRecords" : 1}',  # whitespace before a colon: the counts cannot tell, Arrow C++ reads it
        '{"numRecords":1,"minValues":{"s":"a\\"b"}}',  # a backslash: likewise
        '{"numRecords":1,"unknownButNull":null}',  # (a null under an unknown key says nothing)
    ],
)
def test_the_strict_read_accepts_what_the_struct_holds(line: str) -> None:
    parsed = parse_stats_complete(pa.array([line], pa.string()), TARGET)
    assert parsed is not None and parsed[0].as_py()["numRecords"] == 1
