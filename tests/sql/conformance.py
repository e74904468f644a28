"""Spark SQL conformance (issue 39): generators of rows, predicates and scalar expressions over edge
values, Spark as the oracle, the engine's public paths under test, and the classification of each case.

The pieces, in the order the test (tests/sql/test_conformance_spark.py) uses them:

- `COLUMNS` / `SCHEMA` / `DDL`: one column per Spark type the engine reads (TINYINT ... BIGINT, FLOAT,
  DOUBLE, DECIMAL(10,2), DECIMAL(38,10), STRING, BOOLEAN, DATE, TIMESTAMP, TIMESTAMP_NTZ), plus `id`.
- `EDGES`: per column the values where engines tend to differ (NULL aside): NaN, +-inf, -0.0, the
  type's extremes, decimals at their precision, strings empty / long / unicode / quoted, the first
  and last dates and microseconds. `row_set` lays them out in files (one write per file): edge rows,
  a file of only NULLs, a file of NaNs, files of one row, files of random rows (hypothesis), files of
  "plain" rows (moderate values: where an expression raises on an edge row, these still give values).
- `predicate_cases` / `expression_cases`: hypothesis strategies of `Case`s (the SQL text and a
  category naming its shape, e.g. `cmp float vs decimal`: a FLOAT column against a decimal literal),
  drawn by `sample` (hypothesis with a fixed seed per sample; TXNLOG_SQL_SEED moves it).
- `SparkOracle`: the rows as a Spark DataFrame with the explicit Spark schema; many expressions are
  evaluated in one `select` (a boolean column per predicate); analysis errors and ANSI runtime errors
  are isolated per expression (the error's query context names the failing column, else halving).
  A predicate whose batched select raises is asked again alone with `df.filter`.
- `EngineTable`: the rows written into a table through `Table.create` / `Table.write`, read back with
  `Snapshot.to_arrow(filter=)` and pruned with `Snapshot.files(filter=)`.
- `classify_*`: each check's class: `agree`, `refused` (the engine refuses the SQL where it is
  declared: PredicateError / UnsupportedExpressionError) or `DISAGREE` with a subclass (wrong rows,
  wrong value, wrong type, missing raise, spurious raise, pruning loss, refused at evaluation, crash).
- `summary` / `disagreement_report`: the counts per class and category, and the first disagreeing
  cases with the rows or values of both sides.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import math
import os
import re
import struct
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from airflow_txnlog.engine import (
    InvalidArgumentError,
    PredicateError,
    Table,
    TxnLogError,
    UnsupportedExpressionError,
)
from airflow_txnlog.engine.sql.expressions import compile_expression

D = decimal.Decimal
UTC = dt.UTC

# ----------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # int float double decimal string bool date ts ntz
    arrow: pa.DataType
    ddl: str


COLUMNS: tuple[Column, ...] = (
    Column("ti", "int", pa.int8(), "TINYINT"),
    Column("si", "int", pa.int16(), "SMALLINT"),
    Column("i", "int", pa.int32(), "INT"),
    Column("l", "int", pa.int64(), "BIGINT"),
    Column("f", "float", pa.float32(), "FLOAT"),
    Column("d", "double", pa.float64(), "DOUBLE"),
    Column("d2", "double", pa.float64(), "DOUBLE"),
    Column("m", "decimal", pa.decimal128(10, 2), "DECIMAL(10,2)"),
    Column("w", "decimal", pa.decimal128(38, 10), "DECIMAL(38,10)"),
    Column("s", "string", pa.string(), "STRING"),
    Column("s2", "string", pa.string(), "STRING"),
    Column("b", "bool", pa.bool_(), "BOOLEAN"),
    Column("dt", "date", pa.date32(), "DATE"),
    Column("ts", "ts", pa.timestamp("us", tz="UTC"), "TIMESTAMP"),
    Column("ntz", "ntz", pa.timestamp("us"), "TIMESTAMP_NTZ"),
)
BY_NAME = {c.name: c for c in COLUMNS}
SCHEMA = pa.schema([pa.field("id", pa.int64()), *(pa.field(c.name, c.arrow) for c in COLUMNS)])
DDL = "id BIGINT, " + ", ".join(f"{c.name} {c.ddl}" for c in COLUMNS)
_COLUMN_WORD = re.compile(r"\b(" + "|".join(sorted(BY_NAME, key=len, reverse=True)) + r")\b")


# ----------------------------------------------------------------------------- edge values

NAN, INF = float("nan"), float("inf")
F32_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
F32_TINY = struct.unpack("<f", struct.pack("<I", 1))[0]  # the smallest subnormal float32
F32_NORMAL = struct.unpack("<f", struct.pack("<I", 0x00800000))[0]


def f32(x: float) -> float:
    """`x` rounded to the nearest float32 (as a Python float)."""
    return float(struct.unpack("<f", struct.pack("<f", x))[0]) if math.isfinite(x) else x


def _int_edges(bits: int) -> list[int]:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return [0, 1, -1, lo, hi, lo + 1, hi - 1, 7, -7, 100, 127 if bits > 8 else 99]


_TS = [
    dt.datetime(1, 1, 1),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1970, 1, 1),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(2024, 1, 1),
    dt.datetime(2024, 1, 1, 10, 0),
    dt.datetime(2024, 2, 29, 12, 34, 56, 789012),
    dt.datetime(2024, 1, 1, 0, 0, 0, 999),
    dt.datetime(2024, 1, 1, 0, 0, 0, 1000),
    dt.datetime(2024, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1582, 10, 10, 12),
    dt.datetime(2000, 1, 1, 0, 0, 1),
]
STRINGS = [
    "",
    " ",
    "a",
    "A",
    "ab",
    "b",
    "O'Brien",
    'say "hi"',
    "back\\slash",
    "héllo",
    "e\u0301",  # e + combining acute: not "é"
    "日本語",
    "😀 emoji",
    "x" * 40,  # past the 32 characters stats keep
    "y" * 33,
    "z" * 300,
    "1",
    "01",
    " 7 ",
    "1.5",
    "1e3",
    "NaN",
    "-0.0",
    "2024-01-01",
    "2024-01-01 10:00:00",
    "true",
    "a%b_c",
    "tab\there",
    "\U0010ffff",
    "~",
]
LITERAL_STRINGS = [s for s in STRINGS if s.isprintable() or s == ""]

EDGES: dict[str, list[Any]] = {
    "ti": _int_edges(8),
    "si": _int_edges(16),
    "i": _int_edges(32),
    "l": [*_int_edges(64), 2**53 + 1, -(2**31)],
    "f": [
        *(NAN, INF, -INF, -0.0, 0.0, F32_MAX, -F32_MAX, F32_TINY, F32_NORMAL, f32(0.1), 1.5, -2.5),
        *(f32(2.675), f32(1e10), 16777216.0, f32(0.3), 1.0),
    ],
    "d": [
        *(NAN, INF, -INF, -0.0, 0.0, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324),
        *(2.2250738585072014e-308, 0.1, 0.30000000000000004, 1.5, -2.5, 2.675, 1e3, float(2**53 + 1)),
        *(1e300, f32(0.1), 1.0),
    ],
    "d2": [0.0, -0.0, 0.1, 1.0, NAN, INF, -INF, 1e3, -2.5, f32(0.1), 3.0],
    "m": [D(x) for x in ("0.00", "0.01", "-0.01", "0.10", "1.00", "2.50", "99999999.99", "-99999999.99")]
    + [D("1.01"), D("1000.00"), D("2.68")],
    "w": [D(x) for x in ("0E-10", "1E-10", "-1E-10", "0.1000000000", "1.0000000000", "2.5000000000")]
    + [D("9999999999999999999999999999.9999999999"), D("-9999999999999999999999999999.9999999999")]
    + [D("12345678901234567890.1234567890"), D("0.1000000015"), D("2.6750000000")],
    "s": STRINGS,
    "s2": ["", "a", "b", "O'Brien", "x" * 40, "héllo", "1", "2024-01-01", "Z"],
    "b": [True, False],
    "dt": [x.date() for x in _TS] + [dt.date(2024, 3, 1), dt.date(2023, 12, 31)],
    "ts": [x.replace(tzinfo=UTC) for x in _TS],
    "ntz": list(_TS),
}

# ----------------------------------------------------------------------------- literals


def sql_string(s: str, doubled: bool = False) -> str:
    """A Spark SQL string literal: backslash escapes, or a doubled quote (Spark reads both)."""
    if doubled and "\\" not in s:
        return "'" + s.replace("'", "''") + "'"
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def decimal_text(d: decimal.Decimal) -> str:
    """A decimal literal (never an exponent: Spark reads `1E-10` as a DOUBLE)."""
    return format(d, "f")


def double_text(x: float, style: int) -> str:
    """A DOUBLE literal for a finite `x`: `0.1D`, or an exponent form `1E-1`."""
    if style == 0:
        return f"{x!r}D"
    text = f"{D(repr(x)):E}"
    return text if "E" in text else f"{text}E0"


def nonfinite_text(x: float, spark_type: str) -> str:
    name = "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    return f"CAST('{name}' AS {spark_type})"


def time_text(v: dt.datetime, style: int = 0) -> str:
    """'yyyy-MM-dd HH:mm:ss[.ffffff]' of a naive or UTC datetime; styles: 0 plain, 1 'T' and 'Z',
    2 a +02:00 offset (the same instant), 3 date only when at midnight."""
    if style == 2 and v < dt.datetime(9999, 12, 31, 22):
        v = v.replace(tzinfo=None) + dt.timedelta(hours=2)
    elif style == 2:
        style = 0
    if style == 3 and v.time() == dt.time(0):
        return f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    frac = f".{v.microsecond:06d}" if v.microsecond else ""
    sep = "T" if style == 1 else " "
    text = f"{v.year:04d}-{v.month:02d}-{v.day:02d}{sep}{v.hour:02d}:{v.minute:02d}:{v.second:02d}{frac}"
    return text + {1: "Z", 2: "+02:00"}.get(style, "")


def date_text(v: dt.date, short: bool = False) -> str:
    return f"{v.year:04d}-{v.month}-{v.day}" if short else f"{v.year:04d}-{v.month:02d}-{v.day:02d}"


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    kind: str  # "filter" (a predicate) or "expr" (a scalar expression)
    text: str
    category: str


def _weighted(pairs: Sequence[tuple[Any, int]]) -> st.SearchStrategy[Any]:
    return st.sampled_from([v for v, w in pairs for _ in range(w)])


def _int_suffixed(v: int, draw: Any) -> str:
    fits = [s for s, bits in (("Y", 8), ("S", 16), ("L", 64)) if -(2 ** (bits - 1)) <= v < 2 ** (bits - 1)]
    if fits and draw(st.integers(0, 3)) == 0:
        return f"{v}{draw(st.sampled_from(fits))}"
    return str(v)


_INT_LITERALS = sorted({*EDGES["ti"], *EDGES["si"], *EDGES["i"], *EDGES["l"], 2, 3, 10, 128, 32768})
_INT_LITERALS += [2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 10**20]
_DEC_LITERALS = [
    *EDGES["m"],
    *EDGES["w"],
    *(D(x) for x in ("0.1", "-0.0", "0.5", "2.675", "1.005", "99999999.995", "0.12345678901")),
    *(D(x) for x in ("1.5", "1000.0", "2.5000000001", "100.00", "127.5", "0.30000000000000004")),
    D(f32(0.1)),  # 0.100000001490116119384765625: the float32 0.1, exactly
    D(f32(2.675)),
    D("12345678901234567890123456789.123456789"),
]
_DOUBLE_LITERALS = [
    *(x for x in EDGES["d"] + EDGES["f"] if math.isfinite(x)),
    1e-3,
    2.5,
    1e10,
    3.4028235e38,
    3.4028236e38,
    1.401298464324817e-45,
    -1e308,
    9.223372036854776e18,
    2147483647.5,
]
_NONFINITE = [NAN, INF, -INF]
_NUMBER_STRINGS = ["5", "1.5", "NaN", " 7 ", "abc", "-0.0", "1e3", "Infinity", "127", "2147483648"]


@st.composite
def literal(draw: Any, lit_kind: str) -> str:
    """A Spark SQL literal of `lit_kind`: int decimal double nonfinite numstr string date timestamp
    ntz bool null."""
    if lit_kind == "int":
        return _int_suffixed(draw(st.sampled_from(_INT_LITERALS)), draw)
    if lit_kind == "decimal":
        d = draw(st.sampled_from(_DEC_LITERALS))
        return decimal_text(d) + ("BD" if draw(st.integers(0, 7)) == 0 else "")
    if lit_kind == "double":
        return double_text(draw(st.sampled_from(_DOUBLE_LITERALS)), draw(st.integers(0, 1)))
    if lit_kind == "nonfinite":
        x = draw(st.sampled_from(_NONFINITE))
        form = draw(st.integers(0, 4))
        if form == 4:  # a string Spark casts to the column's float type
            return sql_string("NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity"))
        return nonfinite_text(x, "FLOAT" if form == 3 else "DOUBLE")
    if lit_kind == "numstr":
        return sql_string(draw(st.sampled_from(_NUMBER_STRINGS)))
    if lit_kind == "string":
        return sql_string(draw(st.sampled_from(LITERAL_STRINGS)), doubled=draw(st.integers(0, 4)) == 0)
    if lit_kind in ("date", "datestr"):
        v = draw(st.one_of(st.sampled_from(EDGES["dt"]), st.dates()))
        text = date_text(v, short=draw(st.integers(0, 9)) == 0)
        return f"'{text}'" if lit_kind == "datestr" else f"DATE '{text}'"
    if lit_kind in ("timestamp", "ntz", "tsstr"):
        v = draw(st.one_of(st.sampled_from(_TS), st.datetimes()))
        style = draw(st.integers(0, 3)) if lit_kind == "timestamp" else draw(st.sampled_from([0, 0, 1, 3]))
        text = time_text(v, style)
        if lit_kind == "ntz":
            text = text.removesuffix("Z")
            return f"TIMESTAMP_NTZ '{text}'"
        return f"'{text}'" if lit_kind == "tsstr" else f"TIMESTAMP '{text}'"
    if lit_kind == "bool":
        return draw(st.sampled_from(["TRUE", "FALSE"]))
    assert lit_kind == "null", lit_kind
    return "NULL"


# Which literals are compared with a column of each kind (weights).
LITERALS_FOR: dict[str, list[tuple[str, int]]] = {
    "int": [("int", 6), ("decimal", 4), ("double", 2), ("nonfinite", 1), ("numstr", 1), ("null", 1)],
    "float": [("int", 3), ("decimal", 5), ("double", 4), ("nonfinite", 3), ("numstr", 1), ("null", 1)],
    "double": [("int", 3), ("decimal", 5), ("double", 4), ("nonfinite", 3), ("numstr", 1), ("null", 1)],
    "decimal": [("int", 3), ("decimal", 6), ("double", 2), ("nonfinite", 1), ("numstr", 1), ("null", 1)],
    "string": [("string", 10), ("int", 1), ("datestr", 1), ("date", 1), ("null", 1)],
    "bool": [("bool", 6), ("null", 1), ("int", 1)],
    "date": [("date", 6), ("timestamp", 4), ("datestr", 2), ("ntz", 1), ("tsstr", 1), ("null", 1)],
    "ts": [("timestamp", 6), ("date", 4), ("ntz", 1), ("tsstr", 2), ("datestr", 1), ("null", 1)],
    "ntz": [("ntz", 5), ("timestamp", 3), ("date", 3), ("tsstr", 2), ("null", 1)],
}
# Column pairs Spark compares (and a few it does not).
COLUMN_PAIRS = [
    ("i", "l"),
    ("ti", "si"),
    ("f", "d"),
    ("d", "d2"),
    ("i", "d"),
    ("l", "f"),
    ("m", "w"),
    ("m", "i"),
    ("w", "d"),
    ("m", "f"),
    ("s", "s2"),
    ("dt", "ts"),
    ("ts", "ntz"),
    ("dt", "ntz"),
    ("s", "dt"),
    ("b", "i"),
]
COMPARISONS = ["=", "==", "!=", "<>", "<", "<=", ">", ">="]
_DATA_COLUMNS = st.sampled_from(COLUMNS)


@st.composite
def _comparison(draw: Any) -> tuple[str, str]:
    col = draw(_DATA_COLUMNS)
    lit_kind = draw(_weighted(LITERALS_FOR[col.kind]))
    lit = draw(literal(lit_kind))
    op = draw(st.sampled_from(COMPARISONS))
    text = f"{lit} {_flip(op)} {col.name}" if draw(st.integers(0, 4)) == 0 else f"{col.name} {op} {lit}"
    return text, f"cmp {col.kind} vs {lit_kind}"


def _flip(op: str) -> str:
    return {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)


@st.composite
def _null_safe(draw: Any) -> tuple[str, str]:
    col = draw(_DATA_COLUMNS)
    lit_kind = draw(st.sampled_from(["null", *(k for k, _ in LITERALS_FOR[col.kind])]))
    text = f"{col.name} <=> {draw(literal(lit_kind))}"
    return (f"NOT ({text})" if draw(st.booleans()) else text), f"null-safe {col.kind} vs {lit_kind}"


@st.composite
def _column_vs_column(draw: Any) -> tuple[str, str]:
    a, b = draw(st.sampled_from(COLUMN_PAIRS))
    a, b = (b, a) if draw(st.booleans()) else (a, b)
    op = draw(st.sampled_from([*COMPARISONS, "<=>"]))
    return f"{a} {op} {b}", f"col-col {BY_NAME[a].kind}~{BY_NAME[b].kind}"


@st.composite
def _membership(draw: Any) -> tuple[str, str]:
    col = draw(_DATA_COLUMNS)
    kinds = draw(st.lists(_weighted(LITERALS_FOR[col.kind]), min_size=1, max_size=5))
    items = [draw(literal(k)) for k in kinds]
    negate = draw(st.integers(0, 2)) == 0
    extras = [x for x in ("null", "nonfinite") if x in kinds]
    category = f"{'not-in' if negate else 'in'} {col.kind}" + "".join(f" +{x}" for x in extras)
    return f"{col.name} {'NOT IN' if negate else 'IN'} ({', '.join(items)})", category


@st.composite
def _between(draw: Any) -> tuple[str, str]:
    col = draw(_DATA_COLUMNS)
    lo_kind, hi_kind = (draw(_weighted(LITERALS_FOR[col.kind])) for _ in range(2))
    low, high = draw(literal(lo_kind)), draw(literal(hi_kind))
    negate = "NOT " if draw(st.integers(0, 3)) == 0 else ""
    return f"{col.name} {negate}BETWEEN {low} AND {high}", f"between {col.kind} vs {lo_kind}"


@st.composite
def _is_null(draw: Any) -> tuple[str, str]:
    col = draw(_DATA_COLUMNS)
    negate = draw(st.booleans())
    return f"{col.name} IS {'NOT ' if negate else ''}NULL", f"is-null {col.kind}"


LEAF_SHAPES: list[tuple[Callable[[], st.SearchStrategy[tuple[str, str]]], int]] = [
    (_comparison, 12),
    (_null_safe, 1),
    (_column_vs_column, 3),
    (_membership, 3),
    (_between, 2),
    (_is_null, 1),
]


@st.composite
def predicate_leaf(draw: Any) -> tuple[str, str]:
    shape = draw(_weighted(LEAF_SHAPES))
    return draw(shape())


@st.composite
def predicate_text(draw: Any, depth: int = 0) -> tuple[str, str]:
    """A predicate (text, category of its first leaf); AND / OR / NOT nest it up to depth 2."""
    text, category = draw(predicate_leaf())
    roll = draw(st.integers(0, 9))
    if depth >= 2 or roll < 5:
        return text, category
    if roll < 7:
        return f"NOT ({text})", category
    other, _ = draw(predicate_text(depth + 1))
    op = draw(st.sampled_from(["AND", "OR"]))
    parts = (f"({text})", f"({other})")
    return f"{parts[0]} {op} {parts[1]}", category


@st.composite
def predicate_cases(draw: Any) -> Case:
    text, category = draw(predicate_text())
    return Case("filter", text, category)


# ------------------------------------------------------------- scalar expressions (typed generator)

CAST_TARGETS = {
    "num": [
        *("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10,2)", "DECIMAL(38,10)"),
        *("DECIMAL(5,0)", "DECIMAL(4,4)"),
    ],
    "str": ["STRING"],
    "bool": ["BOOLEAN"],
    "date": ["DATE"],
    "ts": ["TIMESTAMP", "TIMESTAMP_NTZ"],
}
_SOURCE_KIND = {
    "int": "num",
    "float": "num",
    "double": "num",
    "decimal": "num",
    "string": "str",
    "bool": "bool",
    "date": "date",
    "ts": "ts",
    "ntz": "ts",
}
_COARSE_LITERALS = {
    "num": [("int", 4), ("decimal", 3), ("double", 2), ("nonfinite", 1), ("null", 1)],
    "str": [("string", 6), ("null", 1)],
    "bool": [("bool", 4), ("null", 1)],
    "date": [("date", 4), ("null", 1)],
    "ts": [("timestamp", 3), ("ntz", 1), ("null", 1)],
}
KINDS = ("num", "str", "bool", "date", "ts")
DATE_UNITS = ["'YEAR'", "'QUARTER'", "'MONTH'", "'WEEK'", "'DAY'", "'HOUR'", "'MINUTE'", "'SECOND'"]
DATE_UNITS += ["'MM'", "'yyyy'", "'mon'", "'DD'", "'MILLISECOND'", "'MICROSECOND'"]
TRUNC_UNITS = ["'YEAR'", "'yyyy'", "'QUARTER'", "'MONTH'", "'MM'", "'mon'", "'WEEK'"]
DATE_PATTERNS = ["'yyyy-MM-dd'", "'yyyy-MM-dd HH:mm:ss'", "'yyyyMMdd'", "'EEE'", "'MMM d, yyyy'"]
DATE_PATTERNS += ["'HH:mm:ss.SSSSSS'", "'yyyy-MM'", "'D'"]
Gen = tuple[str, str]  # (text, category)


@st.composite
def small_int(draw: Any) -> str:
    """An INT-typed argument (date_add's days, a substring position...)."""
    roll = draw(st.integers(0, 5))
    if roll == 0:
        return draw(st.sampled_from(["ti", "si", "i"]))
    return str(draw(st.sampled_from([0, 1, -1, 2, 3, 5, 30, 365, -400, 10000, 2147483647])))


@st.composite
def scalar(draw: Any, kind: str, depth: int = 0) -> Gen:
    """An expression of the coarse `kind` (num str bool date ts) and its category (its outermost
    construct). Leaves (a column or a literal) get likelier with depth."""
    if depth >= 2 or (depth > 0 and draw(st.integers(0, 9)) < 3 * depth):
        if draw(st.integers(0, 3)) > 0 or kind == "bool":
            col = draw(st.sampled_from([c for c in COLUMNS if _SOURCE_KIND[c.kind] == kind]))
            return col.name, f"column {col.kind}"
        lit_kind = draw(_weighted(_COARSE_LITERALS[kind]))
        return draw(literal(lit_kind)), f"literal {lit_kind}"
    builders = BUILDERS[kind]
    name, build = draw(_weighted([((n, b), w) for n, b, w in builders]))
    text, category = build(draw, depth + 1)
    return text, category or name


def _sub(draw: Any, kind: str, depth: int) -> str:
    return draw(scalar(kind, depth))[0]


def _arith(draw: Any, depth: int) -> Gen:
    op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
    return f"({_sub(draw, 'num', depth)} {op} {_sub(draw, 'num', depth)})", f"arith {op}"


def _cast(target_kind: str) -> Callable[[Any, int], Gen]:
    def build(draw: Any, depth: int) -> Gen:
        source = draw(st.sampled_from(KINDS))
        to = draw(st.sampled_from(CAST_TARGETS[target_kind]))
        text = f"CAST({_sub(draw, source, depth)} AS {to})"
        return text, f"cast {source}->{to.split('(')[0]}"

    return build


def _call(name: str, *arg_kinds: str, category: str = "") -> Callable[[Any, int], Gen]:
    def build(draw: Any, depth: int) -> Gen:
        args = [
            draw(small_int()) if k == "int" else (k[1:] if k.startswith("=") else _sub(draw, k, depth))
            for k in arg_kinds
        ]
        return f"{name}({', '.join(args)})", category or name.lower()

    return build


def _choice_of(kind: str) -> Callable[[Any, int], Gen]:
    def build(draw: Any, depth: int) -> Gen:
        form = draw(st.integers(0, 5))
        a, b = _sub(draw, kind, depth), _sub(draw, kind, depth)
        if form == 0:
            return f"CASE WHEN {_sub(draw, 'bool', depth)} THEN {a} ELSE {b} END", "case"
        if form == 1:
            return f"CASE WHEN {_sub(draw, 'bool', depth)} THEN {a} END", "case (no else)"
        if form == 2:
            return f"IF({_sub(draw, 'bool', depth)}, {a}, {b})", "if"
        if form == 3:
            return f"COALESCE({a}, {b}, {_sub(draw, kind, depth)})", "coalesce"
        if form == 4:
            return f"NULLIF({a}, {b})", "nullif"
        return f"NVL({a}, {b})", "nvl"

    return build


def _unary(name: str, kind: str) -> Callable[[Any, int], Gen]:
    return _call(name, kind)


def _neg(draw: Any, depth: int) -> Gen:
    return f"-({_sub(draw, 'num', depth)})", "negate"


def _round(draw: Any, depth: int) -> Gen:
    fn = draw(st.sampled_from(["ROUND", "BROUND"]))
    return f"{fn}({_sub(draw, 'num', depth)}, {draw(st.integers(-2, 3))})", fn.lower()


def _div(draw: Any, depth: int) -> Gen:
    return f"({_sub(draw, 'num', depth)} div {_sub(draw, 'num', depth)})", "div"


def _date_part(draw: Any, depth: int) -> Gen:
    fn = draw(st.sampled_from(["YEAR", "MONTH", "DAY", "DAYOFWEEK", "DAYOFYEAR", "QUARTER", "WEEKOFYEAR"]))
    return f"{fn}({_sub(draw, draw(st.sampled_from(['date', 'ts'])), depth)})", "date part"


def _time_part(draw: Any, depth: int) -> Gen:
    fn = draw(st.sampled_from(["HOUR", "MINUTE", "SECOND"]))
    return f"{fn}({_sub(draw, 'ts', depth)})", "time part"


def _extremum(draw: Any, depth: int) -> Gen:
    fn = draw(st.sampled_from(["GREATEST", "LEAST"]))
    args = [_sub(draw, "num", depth) for _ in range(draw(st.integers(2, 3)))]
    return f"{fn}({', '.join(args)})", fn.lower()


def _pattern_test(draw: Any, depth: int) -> Gen:
    form = draw(st.integers(0, 4))
    s = _sub(draw, "str", depth)
    if form == 0:
        pattern = draw(st.sampled_from(["'%a%'", "'a%'", "'_'", "'%'", "''", "'O\\'%'", "'%\\\\%'", "'x%x'"]))
        return f"{s} LIKE {pattern}", "like"
    if form == 1:
        regex = draw(st.sampled_from(["'^a'", "'[0-9]+'", "'^$'", "'e.'"]))
        return f"{s} RLIKE {regex}", "rlike"
    fn = ["STARTSWITH", "ENDSWITH", "CONTAINS"][form - 2]
    return f"{fn}({s}, {draw(literal('string'))})", fn.lower()


def _compare_exprs(draw: Any, depth: int) -> Gen:
    kind = draw(st.sampled_from(KINDS))
    op = draw(st.sampled_from([*COMPARISONS, "<=>"]))
    return f"{_sub(draw, kind, depth)} {op} {_sub(draw, kind, depth)}", f"compare {kind}"


def _logic(draw: Any, depth: int) -> Gen:
    form = draw(st.integers(0, 2))
    if form == 0:
        return f"NOT ({_sub(draw, 'bool', depth)})", "not"
    op = "AND" if form == 1 else "OR"
    return f"({_sub(draw, 'bool', depth)}) {op} ({_sub(draw, 'bool', depth)})", op.lower()


def _predicate(draw: Any, depth: int) -> Gen:
    text, category = draw(predicate_leaf())
    return text, f"predicate {category.split()[0]}"


def _in_list(draw: Any, depth: int) -> Gen:
    kind = draw(st.sampled_from(KINDS))
    items = [_sub(draw, kind, depth + 1) for _ in range(draw(st.integers(1, 3)))]
    return f"{_sub(draw, kind, depth)} IN ({', '.join(items)})", f"in {kind}"


def _is_nan(draw: Any, depth: int) -> Gen:
    return f"ISNAN({_sub(draw, 'num', depth)})", "isnan"


def _is_null_expr(draw: Any, depth: int) -> Gen:
    fn = draw(st.sampled_from(["ISNULL", "ISNOTNULL"]))
    return f"{fn}({_sub(draw, draw(st.sampled_from(KINDS)), depth)})", fn.lower()


def _substring(draw: Any, depth: int) -> Gen:
    s = _sub(draw, "str", depth)
    if draw(st.booleans()):
        return f"SUBSTRING({s}, {draw(small_int())}, {draw(small_int())})", "substring"
    return f"SUBSTR({s}, {draw(small_int())})", "substring"


def _pad(draw: Any, depth: int) -> Gen:
    fn = draw(st.sampled_from(["LPAD", "RPAD"]))
    return f"{fn}({_sub(draw, 'str', depth)}, {draw(st.integers(0, 8))}, {draw(literal('string'))})", "pad"


def _concat(draw: Any, depth: int) -> Gen:
    args = [_sub(draw, draw(st.sampled_from(["str", "str", "num", "date"])), depth) for _ in range(2)]
    if draw(st.booleans()):
        return f"CONCAT({', '.join(args)})", "concat"
    return f"({args[0]} || {args[1]})", "||"


def _date_format(draw: Any, depth: int) -> Gen:
    source = _sub(draw, draw(st.sampled_from(["date", "ts"])), depth)
    return f"DATE_FORMAT({source}, {draw(st.sampled_from(DATE_PATTERNS))})", "date_format"


def _date_trunc(draw: Any, depth: int) -> Gen:
    return f"DATE_TRUNC({draw(st.sampled_from(DATE_UNITS))}, {_sub(draw, 'ts', depth)})", "date_trunc"


def _trunc(draw: Any, depth: int) -> Gen:
    return f"TRUNC({_sub(draw, 'date', depth)}, {draw(st.sampled_from(TRUNC_UNITS))})", "trunc"


def _date_arith(draw: Any, depth: int) -> Gen:
    op = draw(st.sampled_from(["+", "-"]))
    return f"({_sub(draw, 'date', depth)} {op} {draw(small_int())})", f"date {op} int"


def _hash(draw: Any, depth: int) -> Gen:
    args = [_sub(draw, draw(st.sampled_from(KINDS)), depth) for _ in range(draw(st.integers(1, 2)))]
    return f"HASH({', '.join(args)})", "hash"


Builder = Callable[[Any, int], Gen]
BUILDERS: dict[str, list[tuple[str, Builder, int]]] = {
    "num": [
        ("arith", _arith, 8),
        ("negate", _neg, 1),
        ("div", _div, 1),
        ("abs", _unary("ABS", "num"), 1),
        ("floor", _unary("FLOOR", "num"), 1),
        ("ceil", _unary("CEIL", "num"), 1),
        ("sign", _unary("SIGN", "num"), 1),
        ("round", _round, 2),
        ("pmod", _call("PMOD", "num", "num"), 1),
        ("extremum", _extremum, 1),
        ("nanvl", _call("NANVL", "num", "num"), 1),
        ("cast", _cast("num"), 5),
        ("length", _unary("LENGTH", "str"), 1),
        ("instr", _call("INSTR", "str", "=' '"), 1),
        ("date part", _date_part, 2),
        ("time part", _time_part, 1),
        ("datediff", _call("DATEDIFF", "date", "date"), 1),
        ("hash", _hash, 1),
        ("choice", _choice_of("num"), 3),
        ("unix_date", _unary("UNIX_DATE", "date"), 1),
        ("unix_micros", _call("UNIX_MICROS", "ts"), 1),
    ],
    "str": [
        ("upper", _unary("UPPER", "str"), 1),
        ("lower", _unary("LOWER", "str"), 1),
        ("concat", _concat, 2),
        ("substring", _substring, 2),
        ("left", _call("LEFT", "str", "int"), 1),
        ("right", _call("RIGHT", "str", "int"), 1),
        ("trim", _unary("TRIM", "str"), 1),
        ("ltrim", _unary("LTRIM", "str"), 1),
        ("rtrim", _unary("RTRIM", "str"), 1),
        ("pad", _pad, 1),
        ("replace", _call("REPLACE", "str", "='a'", "='bc'"), 1),
        ("reverse", _unary("REVERSE", "str"), 1),
        ("cast", _cast("str"), 4),
        ("date_format", _date_format, 2),
        ("choice", _choice_of("str"), 2),
    ],
    "bool": [
        ("predicate", _predicate, 6),
        ("compare", _compare_exprs, 4),
        ("logic", _logic, 2),
        ("in", _in_list, 1),
        ("isnan", _is_nan, 1),
        ("isnull", _is_null_expr, 1),
        ("pattern", _pattern_test, 2),
        ("cast", _cast("bool"), 1),
        ("choice", _choice_of("bool"), 1),
    ],
    "date": [
        ("date_add", _call("DATE_ADD", "date", "int"), 2),
        ("date_sub", _call("DATE_SUB", "date", "int"), 1),
        ("add_months", _call("ADD_MONTHS", "date", "int"), 1),
        ("last_day", _unary("LAST_DAY", "date"), 1),
        ("to_date", _unary("TO_DATE", "ts"), 1),
        ("cast", _cast("date"), 3),
        ("trunc", _trunc, 1),
        ("date arith", _date_arith, 1),
        ("choice", _choice_of("date"), 1),
    ],
    "ts": [
        ("date_trunc", _date_trunc, 2),
        ("cast", _cast("ts"), 3),
        ("timestamp_seconds", _call("TIMESTAMP_SECONDS", "int"), 1),
        ("choice", _choice_of("ts"), 1),
    ],
}


@st.composite
def expression_cases(draw: Any) -> Case:
    kind = draw(_weighted([("num", 5), ("str", 3), ("bool", 2), ("date", 2), ("ts", 2)]))
    text, category = draw(scalar(kind, depth=0 if draw(st.integers(0, 9)) else 1))
    return Case("expr", text, category)


def sample(strategy: st.SearchStrategy[Any], n: int, *, label: str, unique: bool = False) -> list[Any]:
    """`n` examples of `strategy` (`unique`: `n` different ones, as far as twice as many draws find),
    the same on every run: hypothesis seeded by `label` (and by TXNLOG_SQL_SEED for another sample)."""
    out: list[Any] = []

    @seed(zlib.crc32(label.encode()) + int(os.environ.get("TXNLOG_SQL_SEED", "0")))
    @settings(
        max_examples=2 * n + 10 if unique else n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(example: Any) -> None:
        out.append(example)

    collect()
    return list(dict.fromkeys(out))[:n] if unique else out[:n]


# ----------------------------------------------------------------------------- rows


@st.composite
def random_value(draw: Any, col: Column, plain: bool) -> Any:
    """A value of `col`: NULL, an edge value or a random one ("plain": moderate and finite, so that
    arithmetic, casts and date functions do not overflow on it)."""
    roll = draw(st.integers(0, 9))
    if roll == 0:
        return None
    if roll < 4 and not plain:
        return draw(st.sampled_from(EDGES[col.name]))
    k, t = col.kind, col.arrow
    if k == "int":
        bound = 100 if plain else 2 ** (t.bit_width - 1)
        return draw(st.integers(-bound, bound - 1))
    if k in ("float", "double"):
        width = 32 if k == "float" else 64
        if plain:
            return draw(st.floats(-1e4, 1e4, width=width))
        return draw(st.floats(width=width))
    if k == "decimal":  # an unscaled integer of at most the type's precision
        limit = 10 ** (min(t.scale + 3, t.precision) if plain else t.precision) - 1
        return D(f"{draw(st.integers(-limit, limit))}E-{t.scale}")  # (exact: scaleb rounds to 28 digits)
    if k == "string":
        return draw(st.text(max_size=6 if plain else 40))
    if k == "bool":
        return draw(st.booleans())
    low, high = (
        (dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1)) if plain else (dt.datetime.min, dt.datetime.max)
    )
    if k == "date":
        return draw(st.dates(low.date(), high.date()))
    v = draw(st.datetimes(low, high))
    return v.replace(tzinfo=UTC) if k == "ts" else v


@st.composite
def random_row(draw: Any, plain: bool = False) -> dict[str, Any]:
    return {c.name: draw(random_value(c, plain)) for c in COLUMNS}


@dataclass
class RowSet:
    """Rows (`table`, sorted by id) and how they are written: one write per chunk of ids."""

    table: pa.Table
    chunks: list[list[int]]
    plain_ids: list[int]
    partition_by: tuple[str, ...] = ()

    def rows(self, ids: Iterable[int]) -> pa.Table:
        return self.table.filter(pc.is_in(self.table["id"], pa.array(sorted(ids), pa.int64())))


def _edge_rows() -> list[dict[str, Any]]:
    """Every edge value of every column at least once, columns cycling at different offsets."""
    n = max(len(v) for v in EDGES.values())
    return [
        {c.name: EDGES[c.name][(k + 3 * j) % len(EDGES[c.name])] for j, c in enumerate(COLUMNS)}
        for k in range(n)
    ]


def row_set(random_rows: list[dict[str, Any]], plain_rows: list[dict[str, Any]], layout: int) -> RowSet:
    """Edge rows in files of 4; a file of only NULLs; a file of NaNs; four files of one row; random
    rows in files of 5; plain rows in files of 6. `layout` 1, 2, 3 partition by b, dt, ts."""
    rows: list[dict[str, Any]] = []
    chunks: list[list[int]] = []

    def add(group: list[dict[str, Any]], size: int) -> list[int]:
        ids = list(range(len(rows), len(rows) + len(group)))
        rows.extend(group)
        chunks.extend(ids[i : i + size] for i in range(0, len(ids), size))
        return ids

    add(_edge_rows(), 4)
    add([dict.fromkeys(BY_NAME) for _ in range(2)], 2)
    nan_rows = [{**r, "f": NAN, "d": NAN, "d2": NAN} for r in random_rows[:2]]
    add(nan_rows or [{**dict.fromkeys(BY_NAME), "f": NAN, "d": NAN, "d2": NAN}], 2)
    add(random_rows[2:6], 1)
    add(random_rows[6:], 5)
    plain = add(plain_rows, 6)
    table = pa.Table.from_pylist([{"id": k, **r} for k, r in enumerate(rows)], schema=SCHEMA)
    partition_by = ((), ("b",), ("dt",), ("ts",))[layout % 4]
    return RowSet(table, [c for c in chunks if c], plain, partition_by)


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Raised:
    """An error of either side: where ("analysis", "runtime", "compile", "evaluate") and what."""

    stage: str
    error: str
    message: str

    def short(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        return f"{self.error}@{self.stage}: {first[:160]}"


def raised(stage: str, exc: BaseException) -> Raised:
    return Raised(stage, type(exc).__name__, str(exc))


@dataclass
class SparkValues:
    """One expression's result over rows in id order: `values` (Arrow) or `error`."""

    values: pa.Array | None = None
    error: Raised | None = None


def _spark_error_stage(exc: BaseException) -> str:
    from pyspark.errors import AnalysisException  # noqa: PLC0415 - Spark only here

    return "analysis" if isinstance(exc, AnalysisException) else "runtime"


_ALIAS = re.compile(r"^\(.*\) AS (c\d+)$", re.MULTILINE)


class SparkOracle:
    """Spark SQL over the rows of a RowSet (explicit schema), many expressions per job."""

    BATCH = 100

    def __init__(self, spark: Any, table: pa.Table) -> None:
        self.spark = spark
        self.df = spark.createDataFrame(table, schema=DDL)
        self.jobs = 0
        self.confirm_blame = 3
        self.inconsistencies: list[str] = []  # where batching changed an answer (a harness bug)

    def select(self, texts: Sequence[str]) -> dict[str, SparkValues]:
        """Each text's values over every row (in id order), or its error."""
        out: dict[str, SparkValues] = {}
        unique = list(dict.fromkeys(texts))
        analysed: list[str] = []
        self._analyse(unique, out, analysed)
        for start in range(0, len(analysed), self.BATCH):
            self._run(analysed[start : start + self.BATCH], out)
        return out

    def _columns(self, texts: Sequence[str]) -> list[str]:
        return [f"({t}) AS c{k}" for k, t in enumerate(texts)]

    def _analyse(self, texts: list[str], out: dict[str, SparkValues], ok: list[str]) -> None:
        """Keep in `ok` the texts Spark analyses (halving on an AnalysisException)."""
        if not texts:
            return
        try:
            self.df.selectExpr("id", *self._columns(texts))
        except Exception as exc:
            if len(texts) == 1:
                out[texts[0]] = SparkValues(error=raised(_spark_error_stage(exc), exc))
                return
            if len(texts) <= 3:
                for text in texts:
                    self._analyse([text], out, ok)
                return
            half = len(texts) // 2
            self._analyse(texts[:half], out, ok)
            self._analyse(texts[half:], out, ok)
            return
        ok.extend(texts)

    def _run(self, texts: list[str], out: dict[str, SparkValues]) -> None:
        """Evaluate `texts` in one job; on an error, set aside the one its query context names (or
        halve) and run the rest again."""
        if not texts:
            return
        self.jobs += 1
        try:
            result = self.df.selectExpr("id", *self._columns(texts)).toArrow()
        except Exception as exc:
            if len(texts) == 1:
                out[texts[0]] = SparkValues(error=raised(_spark_error_stage(exc), exc))
                return
            # The error's query context quotes the failing item, alias included (exact: no common
            # subexpression is shared between items, see SPARK_CONF in the test).
            named = _ALIAS.findall(str(exc))
            culprit = int(named[0][1:]) if len(named) == 1 and int(named[0][1:]) < len(texts) else None
            if culprit is not None:
                blamed = texts[culprit]
                out[blamed] = SparkValues(error=raised(_spark_error_stage(exc), exc))
                if self.confirm_blame > 0:  # check the attribution itself, now and then
                    self.confirm_blame -= 1
                    alone: dict[str, SparkValues] = {}
                    self._run([blamed], alone)
                    if alone[blamed].error is None:
                        self.inconsistencies.append(f"{blamed}: blamed for {exc!s:.200}, but runs alone")
                self._run(texts[:culprit] + texts[culprit + 1 :], out)
                return
            half = len(texts) // 2
            self._run(texts[:half], out)
            self._run(texts[half:], out)
            return
        result = result.take(pc.sort_indices(result["id"]))
        for k, t in enumerate(texts):
            out[t] = SparkValues(values=result.column(f"c{k}").combine_chunks())

    def arrow_type(self, text: str) -> pa.DataType | None:
        """The Arrow type of the expression's Spark type (None if Arrow has none)."""
        from pyspark.sql.pandas.types import to_arrow_type  # noqa: PLC0415 - Spark only here

        try:
            return to_arrow_type(self.df.selectExpr(f"({text}) AS v").schema["v"].dataType, timezone="UTC")
        except Exception:
            return None

    def filter_ids(self, text: str) -> tuple[list[int] | None, Raised | None]:
        """`df.filter(text)`'s ids, or Spark's error."""
        self.jobs += 1
        try:
            got = self.df.filter(text).select("id").toArrow()
        except Exception as exc:
            return None, raised(_spark_error_stage(exc), exc)
        return sorted(got["id"].to_pylist()), None


def quiet_pyspark_errors(spark: Any) -> Callable[[], None]:
    """Silence the logging of every expected error (PySpark logs each captured SQL error with a stack
    trace, Spark's executors each failed task); returns the function that restores both."""
    from pyspark.logger import PySparkLogger  # noqa: PLC0415 - Spark only here

    loggers = [PySparkLogger.getLogger(n) for n in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    before = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 10)
    jvm = spark.sparkContext._jvm
    level = str(jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel().toString())
    spark.sparkContext.setLogLevel("OFF")

    def restore() -> None:
        for lg, old in zip(loggers, before, strict=True):
            lg.setLevel(old)
        spark.sparkContext.setLogLevel(level)

    return restore


# ----------------------------------------------------------------------------- the engine


@dataclass
class EngineAnswer:
    ids: list[int] | None = None
    paths: set[str] | None = None
    error: Raised | None = None
    exc: BaseException | None = None


class EngineTable:
    """The rows of a RowSet written into an engine table, one write per chunk (one file or more per
    write), then read and pruned through the public API."""

    def __init__(self, root: Path, rows: RowSet) -> None:
        self.root = root
        table = Table.create(str(root), schema=SCHEMA, partition_by=list(rows.partition_by))
        for chunk in rows.chunks:
            table.write(rows.rows(chunk))
        self.snapshot = Table.open(str(root)).snapshot()
        self.ids_by_file: dict[str, set[int]] = {
            add.path: set(pq.read_table(root / add.path, columns=["id"])["id"].to_pylist())
            for add in self.snapshot.files()
        }
        written = sorted(i for ids in self.ids_by_file.values() for i in ids)
        assert written == rows.table["id"].to_pylist(), "every row is in exactly one live file"

    def filter(self, text: str) -> EngineAnswer:
        try:
            got = self.snapshot.to_arrow(columns=["id"], filter=text)
        except Exception as exc:
            return EngineAnswer(error=raised("filter", exc), exc=exc)
        return EngineAnswer(ids=sorted(got["id"].to_pylist()))

    def files(self, text: str) -> EngineAnswer:
        try:
            return EngineAnswer(paths={a.path for a in self.snapshot.files(filter=text)})
        except Exception as exc:
            return EngineAnswer(error=raised("files", exc), exc=exc)


@dataclass
class Evaluated:
    """The engine's evaluator (engine.sql.expressions) on one expression over rows."""

    values: pa.Array | None = None
    result_type: pa.DataType | None = None
    error: Raised | None = None
    exc: BaseException | None = None


def engine_compile(text: str) -> Any:
    return compile_expression(text, SCHEMA)


def engine_evaluate(compiled: Any, rows: pa.Table) -> Evaluated:
    try:
        values = compiled.evaluate(rows)
    except Exception as exc:
        return Evaluated(error=raised("evaluate", exc), exc=exc)
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return Evaluated(values=values, result_type=compiled.result_type)


# ----------------------------------------------------------------------------- classification

AGREE, REFUSED, DISAGREE = "agree", "refused", "DISAGREE"


@dataclass
class Outcome:
    check: str  # filter | prune | check | expr | generated
    case: Case
    verdict: str  # AGREE | REFUSED | DISAGREE
    why: str = ""  # the disagreement's subclass, or how they agreed ("both raise")
    detail: str = ""  # what each side gave, compactly

    @property
    def label(self) -> str:
        return f"{self.verdict}: {self.why}" if self.why else self.verdict


def is_declaration_refusal(exc: BaseException | None) -> bool:
    return isinstance(exc, PredicateError | UnsupportedExpressionError)


def show_value(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ").replace("+00:00", "Z")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, str):
        return repr(v if len(v) <= 24 else v[:21] + "...")
    return repr(v)


def show_rows(rows: RowSet, ids: Iterable[int], text: str, limit: int = 4) -> str:
    """The referenced columns of a few rows: `#id{col=value, ...}`."""
    names = list(dict.fromkeys(_COLUMN_WORD.findall(text))) or ["id"]
    ids = sorted(ids)
    shown = rows.rows(ids[:limit]).to_pylist()
    parts = ["#{}{{{}}}".format(r["id"], ", ".join(f"{n}={show_value(r[n])}" for n in names)) for r in shown]
    more = f" (+{len(ids) - limit} more)" if len(ids) > limit else ""
    return " ".join(parts) + more


def classify_filter(
    case: Case, rows: RowSet, spark_ids: list[int] | None, spark_error: Raised | None, engine: EngineAnswer
) -> Outcome:
    if spark_error is not None:
        if engine.error is not None:
            if isinstance(engine.exc, TxnLogError):
                if spark_error.stage == "runtime" and is_declaration_refusal(engine.exc):
                    return Outcome("filter", case, AGREE, "both raise (the engine refuses)")
                return Outcome("filter", case, AGREE, "both raise")
            why = f"engine crashes ({engine.error.error})"
            return Outcome("filter", case, DISAGREE, why, engine.error.short())
        why = "accepts what Spark refuses" if spark_error.stage == "analysis" else "missing raise"
        detail = f"spark {spark_error.short()}; engine rows {engine.ids}"
        return Outcome("filter", case, DISAGREE, why, detail)
    assert spark_ids is not None
    if engine.error is not None:
        if is_declaration_refusal(engine.exc):
            return Outcome("filter", case, REFUSED, engine.error.error, engine.error.short())
        return Outcome("filter", case, DISAGREE, f"raises {engine.error.error}", engine.error.short())
    assert engine.ids is not None
    if Counter(engine.ids) == Counter(spark_ids):
        return Outcome("filter", case, AGREE)
    missing = sorted((Counter(spark_ids) - Counter(engine.ids)).elements())
    extra = sorted((Counter(engine.ids) - Counter(spark_ids)).elements())
    detail = []
    if missing:
        detail.append(f"Spark only: {show_rows(rows, missing, case.text)}")
    if extra:
        detail.append(f"engine only: {show_rows(rows, extra, case.text)}")
    return Outcome("filter", case, DISAGREE, "wrong rows", "; ".join(detail))


def classify_pruning(case: Case, table: EngineTable, spark_ids: list[int], engine: EngineAnswer) -> Outcome:
    if engine.error is not None:
        if is_declaration_refusal(engine.exc):
            return Outcome("prune", case, REFUSED, engine.error.error, engine.error.short())
        return Outcome("prune", case, DISAGREE, f"raises {engine.error.error}", engine.error.short())
    assert engine.paths is not None
    wanted = set(spark_ids)
    lost = {p: ids & wanted for p, ids in table.ids_by_file.items() if p not in engine.paths and ids & wanted}
    if not lost:
        return Outcome("prune", case, AGREE)
    ids = sorted(i for found in lost.values() for i in found)
    return Outcome("prune", case, DISAGREE, "pruning loss", f"{len(lost)} file(s) skipped holding rows {ids}")


def same_type(a: pa.DataType, b: pa.DataType) -> bool:
    def plain(t: pa.DataType) -> Any:
        if pa.types.is_large_string(t):
            return pa.string()
        if pa.types.is_large_binary(t):
            return pa.binary()
        if pa.types.is_timestamp(t):
            return ("timestamp", t.unit, t.tz is not None)
        return t

    return bool(plain(a) == plain(b))


def same_value(a: Any, b: Any) -> bool:
    """Equal as Spark shows values: NaN equals NaN, -0.0 differs from 0.0, decimals by value."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, float) != isinstance(b, float):
        return False
    return bool(a == b)


def classify_values(
    check: str,
    case: Case,
    rows: RowSet,
    row_ids: list[int],
    spark: SparkValues,
    engine: Evaluated,
    compile_error: BaseException | None,
    *,
    check_type: bool = True,
) -> Outcome:
    """One expression over `row_ids`: Spark's values or error against the engine's."""
    if compile_error is not None:
        if is_declaration_refusal(compile_error):
            if spark.error is not None and spark.error.stage == "analysis":
                return Outcome(check, case, AGREE, "both refuse")
            return Outcome(check, case, REFUSED, type(compile_error).__name__, str(compile_error)[:200])
        why = f"compile crashes ({type(compile_error).__name__})"
        return Outcome(check, case, DISAGREE, why, str(compile_error)[:200])
    if spark.error is not None and spark.error.stage == "analysis":
        ours = engine.error.short() if engine.error else f"engine type {engine.result_type}"
        detail = f"spark {spark.error.short()}; {ours}"
        return Outcome(check, case, DISAGREE, "accepts what Spark refuses", detail)
    if engine.error is not None:
        if spark.error is not None and isinstance(engine.exc, InvalidArgumentError):
            return Outcome(check, case, AGREE, "both raise")
        if isinstance(engine.exc, InvalidArgumentError):
            return Outcome(check, case, DISAGREE, "spurious raise", engine.error.short())
        if is_declaration_refusal(engine.exc) or isinstance(engine.exc, TxnLogError):
            return Outcome(check, case, DISAGREE, "refused at evaluation", engine.error.short())
        why = f"evaluation crashes ({engine.error.error})"
        return Outcome(check, case, DISAGREE, why, engine.error.short())
    assert engine.values is not None and engine.result_type is not None
    if spark.error is not None:
        detail = f"spark {spark.error.short()}; engine {[shown(engine.values, k) for k in range(6)]}"
        return Outcome(check, case, DISAGREE, "missing raise", detail)
    assert spark.values is not None
    ours, typed = engine.values, same_type(spark.values.type, engine.result_type) or not check_type
    if len(spark.values) != len(ours):
        detail = f"spark {len(spark.values)}, engine {len(ours)}"
        return Outcome(check, case, DISAGREE, "wrong row count", detail)
    if not typed:  # compare the values in Spark's type, if the engine's convert to it
        try:
            ours = ours.cast(spark.values.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            detail = f"spark {spark.values.type}, engine {engine.result_type} (not convertible)"
            return Outcome(check, case, DISAGREE, "wrong type", detail)
    theirs_raw, ours_raw = comparable(spark.values), comparable(ours)
    wrong = [k for k, (a, b) in enumerate(zip(theirs_raw, ours_raw, strict=True)) if not same_value(a, b)]
    if wrong:
        detail = "; ".join(
            f"{show_rows(rows, [row_ids[k]], case.text, 1)}: "
            f"spark {shown(spark.values, k)} engine {shown(engine.values, k)}"
            for k in wrong[:3]
        )
        detail += f" (+{len(wrong) - 3} more rows)" if len(wrong) > 3 else ""
        if not typed:
            detail += f"; and the type: spark {spark.values.type}, engine {engine.result_type}"
        return Outcome(check, case, DISAGREE, "wrong value", detail)
    if not typed:
        detail = f"spark {spark.values.type}, engine {engine.result_type}"
        return Outcome(check, case, DISAGREE, "wrong type", detail)
    return Outcome(check, case, AGREE)


def comparable(values: pa.Array) -> list[Any]:
    """Python values to compare: dates and timestamps as Arrow's integers (Spark's dates and
    timestamps go past year 9999, Python's do not)."""
    t = values.type
    if pa.types.is_date32(t):
        return values.cast(pa.int32()).to_pylist()
    if pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return values.cast(pa.int64()).to_pylist()
    return values.to_pylist()


def shown(values: pa.Array, k: int) -> str:
    """Value `k` of `values`, as `show_value` writes it (its integer where Python has no such date)."""
    if k >= len(values):
        return "-"
    try:
        return show_value(values[k].as_py())
    except (OverflowError, ValueError):
        return f"{values.type}:{comparable(values.slice(k, 1))[0]}"


def worst(a: Outcome, b: Outcome) -> Outcome:
    rank = {DISAGREE: 2, REFUSED: 1, AGREE: 0}
    return b if rank[b.verdict] > rank[a.verdict] else a


# ----------------------------------------------------------------------------- generated columns


def generated_type(t: pa.DataType | None) -> pa.DataType | None:
    """The type of a generated column holding values of Arrow type `t` (None: no such column)."""
    if t is None or pa.types.is_null(t):
        return None
    if pa.types.is_large_string(t):
        return pa.string()
    return t


@dataclass
class GeneratedRun:
    """Generated columns `g0..gN` of one table: each one's values read back, or the error."""

    values: dict[str, pa.Array] = field(default_factory=dict)
    error: Raised | None = None
    exc: BaseException | None = None
    stage: str = ""  # "create" | "write" | "read"


def run_generated(root: Path, rows: pa.Table, exprs: Sequence[tuple[str, pa.DataType]]) -> GeneratedRun:
    """A table with a generated column per expression (of the given type), the rows written without
    them, read back."""
    fields = [pa.field(f"g{k}", t) for k, (_, t) in enumerate(exprs)]
    schema = pa.schema([*SCHEMA, *fields])
    generated = {f"g{k}": text for k, (text, _) in enumerate(exprs)}
    stage = "create"
    try:
        table = Table.create(str(root), schema=schema, generated_columns=generated)
        stage = "write"
        table.write(rows)
        stage = "read"
        got = Table.open(str(root)).snapshot().to_arrow()
    except Exception as exc:
        return GeneratedRun(error=raised(stage, exc), exc=exc, stage=stage)
    got = got.take(pc.sort_indices(got["id"]))
    return GeneratedRun(values={f.name: got[f.name].combine_chunks() for f in fields})


def classify_generated(case: Case, rows: RowSet, spark: SparkValues, run: GeneratedRun, name: str) -> Outcome:
    if run.error is not None:
        if run.stage == "create":
            if is_declaration_refusal(run.exc):
                return Outcome("generated", case, REFUSED, run.error.error, run.error.short())
            return Outcome("generated", case, DISAGREE, f"create raises {run.error.error}", run.error.short())
        if spark.error is not None and isinstance(run.exc, InvalidArgumentError):
            return Outcome("generated", case, AGREE, "both raise")
        if is_declaration_refusal(run.exc):
            return Outcome("generated", case, DISAGREE, "refused only at write", run.error.short())
        why = f"{run.stage} raises {run.error.error}"
        return Outcome("generated", case, DISAGREE, why, run.error.short())
    if spark.error is not None:
        return Outcome("generated", case, DISAGREE, "missing raise", f"spark {spark.error.short()}")
    assert spark.values is not None
    ids = rows.table["id"].to_pylist()
    evaluated = Evaluated(values=run.values[name], result_type=run.values[name].type)
    # (the column has the type Spark gives: the engine casts its result to it, so only values count)
    return classify_values("generated", case, rows, ids, spark, evaluated, None, check_type=False)


# ----------------------------------------------------------------------------- reports


def summary(outcomes: Sequence[Outcome], cases: int, seconds: float, jobs: int) -> str:
    """Counts per check and class, then per check and category."""
    lines = [f"SQL conformance: {cases} cases, {len(outcomes)} checks, {jobs} Spark jobs, {seconds:.0f} s"]
    by_check: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        by_check[o.check][o.label] += 1
    for check in ("filter", "prune", "check", "expr", "generated"):
        counts = by_check.get(check)
        if not counts:
            continue
        total = sum(counts.values())
        lines.append(f"  {check} ({total}):")
        for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"    {n:6d}  {label}")
    lines.append("")
    lines.append(f"  {'check':<9} {'category':<38} {'agree':>6} {'refused':>7} {'DISAGREE':>8}")
    table: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        table[(o.check, o.case.category)][o.verdict] += 1
    for (check, category), counts in sorted(table.items()):
        lines.append(
            f"  {check:<9} {category[:38]:<38} {counts[AGREE]:6d} {counts[REFUSED]:7d} {counts[DISAGREE]:8d}"
        )
    return "\n".join(lines)


def disagreement_report(outcomes: Sequence[Outcome], first: int = 20) -> str:
    """The first `first` disagreements; the shortest case of each (check, subclass) with what both
    sides gave; then the shortest text of each (check, subclass, category) and how many there are."""
    bad = [o for o in outcomes if o.verdict == DISAGREE]
    lines = [f"{len(bad)} disagreement(s); the first {min(first, len(bad))}:"]
    for o in bad[:first]:
        lines.append(f"- [{o.check}] {o.why}: {o.case.text}")
        if o.detail:
            lines.append(f"    {o.detail[:400]}")

    def shortest(key: Callable[[Outcome], tuple[str, ...]]) -> dict[tuple[str, ...], tuple[Outcome, int]]:
        found: dict[tuple[str, ...], tuple[Outcome, int]] = {}
        for o in bad:
            best, n = found.get(key(o), (o, 0))
            found[key(o)] = (o if len(o.case.text) < len(best.case.text) else best, n + 1)
        return found

    by_class = shortest(lambda o: (o.check, o.why))
    lines.append(f"the shortest case of each of the {len(by_class)} (check, subclass):")
    for (check, why), (o, n) in sorted(by_class.items()):
        lines.append(f"- [{check}] {why} (x{n}): {o.case.text}")
        if o.detail:
            lines.append(f"    {o.detail[:300]}")
    by_category = shortest(lambda o: (o.check, o.why, o.case.category))
    lines.append(f"the shortest case of each of the {len(by_category)} (check, subclass, category):")
    for (check, why, category), (o, n) in sorted(by_category.items()):
        lines.append(f"- [{check}] {why} / {category} (x{n}): {o.case.text}")
    return "\n".join(lines)
