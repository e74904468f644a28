"""Parsing stats JSON in bulk (engine.log.stats_struct.parse_stats): the lines' own buffer is handed
to Arrow's JSON reader without a copy only when its objects can only be the lines, one each; any
line that could shift the others (two objects in one line, an object spread over two) makes the
parse go line by line. The reference everywhere is each line parsed alone, which cannot shift."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from airflow_txnlog.engine.log import stats_struct
from airflow_txnlog.engine.log.stats_struct import _document, parse_stats

TARGET = pa.struct(
    [
        ("numRecords", pa.int64()),
        ("minValues", pa.struct([("s", pa.string()), ("x", pa.float64())])),
    ]
)


def _line_by_line(lines: list[str | None]) -> list[object]:
    """Each line parsed on its own: the answer a bulk parse must give."""
    return [parse_stats(pa.array([line], pa.string()), TARGET).to_pylist()[0] for line in lines]


WRITER_SHAPED = [
    '{"numRecords":3,"minValues":{"s":"a","x":1.5}}',
    '{"numRecords":4,"minValues":{"s":"{\\"q\\"}","x":-0.0}}',  # braces and quotes inside a string
    '{"numRecords":5}',
    '{"numRecords":6,\n"minValues":{}}',  # whitespace, a newline included, inside an object
]


@pytest.mark.parametrize(
    "lines",
    [
        WRITER_SHAPED,
        [None, *WRITER_SHAPED, None],
        ['{"minValues":{"s":"}{"}}', '{"numRecords":2}'],  # `}{` in a string: parsed, not in place
        # two objects in one line, one object over two lines: equal counts, shifted rows
        ['{"numRecords":1,', '"minValues":{}}', '{"numRecords":2}{"numRecords":3}'],
        ['{"minValues":{"s":"x}', '{y"}}', '{"numRecords":2} {"numRecords":3}'],
        ['{"numRecords":1}', "", '{"numRecords":2}'],  # an empty line is no object
        [' {"numRecords":1} ', '{"numRecords":2}\n'],  # JSON whitespace around the object
        ['{"numRecords":1}', "5", "[]", '{"numRecords":"x"}'],
        [None, None],
    ],
)
def test_a_bulk_parse_equals_parsing_each_line_alone(lines: list[str | None]) -> None:
    assert parse_stats(pa.array(lines, pa.string()), TARGET).to_pylist() == _line_by_line(lines)


def test_lines_as_writers_write_them_are_parsed_in_place() -> None:
    text = pa.array([None, *WRITER_SHAPED], pa.string())
    doc = _document(text)
    assert doc is not None and doc.address == text.buffers()[2].address  # the same bytes, no copy
    sliced = pa.array(["{}", *WRITER_SHAPED]).slice(1)
    assert _document(sliced).to_pybytes() == "".join(WRITER_SHAPED).encode()  # type: ignore[union-attr]
    for shifty in (['{"a":1}{"a":2}'], ['{"a":1} {"a":2}'], ['{"a":1}', ""], [" {}"], ['{"s":"}{"}']):
        assert _document(pa.array(shifty, pa.string())) is None, shifty


def test_an_object_spread_over_two_lines_is_caught_by_the_count() -> None:
    # Both lines start with `{` and end with `}`, so the buffer is handed over as it is; the two
    # lines hold one object, and the count (1 for 2 lines) sends the parse line by line.
    lines = ['{"minValues":{"s":"x}', '{y"}}']
    assert _document(pa.array(lines, pa.string())) is not None
    assert parse_stats(pa.array(lines, pa.string()), TARGET).to_pylist() == [None, None]


def test_null_lines_with_bytes_behind_them_are_not_parsed_in_place() -> None:
    # (a null slot normally has no bytes; one that has would become an object of its own)
    valid = pa.array(['{"numRecords":1}', '{"numRecords":2}'], pa.string())
    offsets, data = valid.buffers()[1], valid.buffers()[2]
    with_bytes = pa.Array.from_buffers(pa.string(), 2, [pa.py_buffer(b"\x02"), offsets, data])
    assert with_bytes.to_pylist() == [None, '{"numRecords":2}']
    assert _document(with_bytes) is None
    assert parse_stats(with_bytes, TARGET).to_pylist() == [None, {"numRecords": 2, "minValues": None}]


WIDE = pa.struct(
    [
        ("numRecords", pa.int64()),
        ("minValues", pa.struct([("x", pa.float64()), ("big", pa.decimal128(20, 2))])),
    ]
)


def test_stats_parsed_row_by_row_with_a_wide_decimal_column_read_as_arrow_reads_them() -> None:
    # (the "NaN" line makes the bulk parse fail: every line is then parsed alone, its decimals
    # exactly; a deeply nested value makes that line's stats unreadable, not the whole parse)
    lines = [
        '{"numRecords":1,"minValues":{"x":"NaN"}}',
        '{"numRecords":2,"minValues":{"x":123456789012345678901234567890,"big":12345678901234567.89}}',
        '{"numRecords":3,"minValues":{"x":' + "[" * 3000 + "]" * 3000 + "}}",
    ]
    rows = parse_stats(pa.array(lines, pa.string()), WIDE).to_pylist()
    assert rows[1] == {
        "numRecords": 2,
        "minValues": {"x": 1.2345678901234568e29, "big": decimal.Decimal("12345678901234567.89")},
    }
    assert rows[2] is None
    alone = parse_stats(pa.array(lines[1:2], pa.string()), WIDE).to_pylist()[0]  # (Arrow's reader)
    assert rows[1] == alone


def test_a_large_parse_decoded_in_pieces_equals_the_lines_parsed_alone() -> None:
    n = 2 * stats_struct._PIECE_ROWS + 5  # (three pieces: two on the decode pool)
    lines = [f'{{"numRecords":{i},"minValues":{{"s":"v{i % 7}","x":{i}.5}}}}' for i in range(n)]
    lines[40_000] = None  # type: ignore[call-overload]
    parsed = parse_stats(pa.array(lines, pa.string()), TARGET).to_pylist()
    last = {"numRecords": n - 1, "minValues": {"s": f"v{(n - 1) % 7}", "x": n - 0.5}}
    assert parsed[40_000] is None and parsed[-1] == last
    assert [r["numRecords"] for r in parsed if r is not None] == [i for i in range(n) if i != 40_000]
    # one line no decoder reads, in the last piece: every line is parsed alone, the rest still read
    lines[-2] = '{"numRecords":1,"minValues":{"x":"NaN"}'
    parsed = parse_stats(pa.array(lines, pa.string()), TARGET).to_pylist()
    assert parsed[-2] is None and parsed[-3]["numRecords"] == n - 3 and parsed[0]["numRecords"] == 0
