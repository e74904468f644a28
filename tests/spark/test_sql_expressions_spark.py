"""The engine's Spark SQL expression evaluator (engine.sql.expressions) against Spark
itself: the same expressions over the same rows give the same values, of the same type, row by row
(session time zone UTC, ANSI mode on, as Spark 4's defaults for a Delta writer).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.schema import schema_from_json
from airflow_txnlog.engine.sql.expressions import compile_expression

D = decimal.Decimal
UTC = dt.UTC
VIEW = "sql_expressions_rows"


def _field(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": t, "nullable": True, "metadata": {}}


_FIELDS = [
    ("id", "integer", "INT"),
    ("i", "integer", "INT"),
    ("l", "long", "BIGINT"),
    ("b", "byte", "TINYINT"),
    ("d", "double", "DOUBLE"),
    ("f", "float", "FLOAT"),
    ("m", "decimal(10,2)", "DECIMAL(10,2)"),
    ("s", "string", "STRING"),
    ("day", "date", "DATE"),
    ("ts", "timestamp", "TIMESTAMP"),
    ("ntz", "timestamp_ntz", "TIMESTAMP_NTZ"),
    ("flag", "boolean", "BOOLEAN"),
]
SCHEMA = schema_from_json(json.dumps({"type": "struct", "fields": [_field(n, t) for n, t, _ in _FIELDS]}))
DDL = ", ".join(f"{name} {spark_type}" for name, _, spark_type in _FIELDS)
ROWS = pa.table(
    {
        "id": [0, 1, 2, 3, 4, 5, 6],
        "i": [1, -7, None, 0, 2147483647, 3, -1],
        "l": [10, None, -3, 2**40, -(2**40), 7, 0],
        "b": [1, -128, None, 127, 0, 5, -5],
        "d": [1.5, float("nan"), None, -0.0, -2.5, 2.675, 1e300],
        "f": [1.5, -2.25, None, 0.0, 3.0, 1.005, -0.5],
        "m": [D("1.25"), D("-2.50"), None, D("0.00"), D("99999999.99"), D("-0.05"), D("7.45")],
        "s": ["Hello", " x ", None, "héllo wörld", "", "a%b_c", "2024-02-29"],
        "day": [
            dt.date(2024, 1, 1),
            dt.date(2024, 12, 31),
            None,
            dt.date(1969, 12, 31),
            dt.date(2000, 2, 29),
            dt.date(2024, 3, 10),
            dt.date(1, 1, 1),
        ],
        "ts": [
            dt.datetime(2024, 1, 1, 23, 59, 59, 999999, tzinfo=UTC),
            dt.datetime(2024, 6, 30, 0, 0, tzinfo=UTC),
            None,
            dt.datetime(1969, 12, 31, 23, 0, 0, 500000, tzinfo=UTC),
            dt.datetime(2000, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
            dt.datetime(2024, 12, 31, 23, 59, 59, tzinfo=UTC),
            dt.datetime(1970, 1, 1, tzinfo=UTC),
        ],
        "ntz": [
            dt.datetime(2024, 1, 1, 0, 0, 1),
            None,
            dt.datetime(2023, 5, 6, 7, 8, 9, 10),
            dt.datetime(1999, 12, 31, 23, 59, 59, 999999),
            dt.datetime(2024, 2, 29, 12, 0),
            dt.datetime(1970, 1, 1),
            dt.datetime(2010, 10, 10, 10, 10, 10),
        ],
        "flag": [True, False, None, True, False, None, True],
    },
    schema=SCHEMA,
)

EXPRESSIONS = [
    # arithmetic, with Spark's result types (decimal precision, INT / INT = DOUBLE)
    "i + l",
    "b * 2",
    "i / 2",
    "-7 % 3 + i % -3 + MOD(b, 4)",
    "l / 3 + b / 2",
    "f * f",
    "m * 2 + m / 3",
    "m / 0.3",
    "m - i",
    "CAST(m AS DECIMAL(20,10)) * CAST(m AS DECIMAL(20,10))",
    "CASE WHEN l = 0 THEN NULL ELSE i / l END",  # the branch Spark skips does not fail
    "l <> 0 AND 10 / l > 1",
    # comparisons and three-valued logic
    "i < l OR flag",
    "NOT (i > 1.5) AND flag IS NOT FALSE",
    "d > 1e299 OR d = 0",
    "d = CAST('NaN' AS DOUBLE) OR d < i",
    "i <=> NULL OR i <=> b",
    "i IN (1, 3, NULL)",
    "i NOT IN (-7, 0)",
    "day BETWEEN '2000-01-01' AND DATE '2024-06-30'",
    "ts < '2024-01-02T00:00:00Z' AND ts > day",
    "ntz < ts",
    # text
    "s LIKE '%l_o%' OR s LIKE 'a\\\\%b\\\\_c'",
    "s ILIKE 'HÉ%' OR s RLIKE '^[0-9]{4}-'",
    "s = 'O''Brien' OR s <> 'He' 'llo'",
    "LENGTH(s) + CHAR_LENGTH(TRIM(s))",
    "UPPER(CONCAT(s, 'ß')) || LOWER(s)",
    "CONCAT(RTRIM(s), '|', LTRIM(s), '|', i, day)",
    "SUBSTRING(s, -3, 2) || SUBSTR(s, 0, 2) || SUBSTRING(s, 2) || LEFT(s, 2) || RIGHT(s, 3)",
    "STARTSWITH(s, 'He') OR ENDSWITH(s, 'd') OR CONTAINS(s, '%')",
    # numbers
    "ABS(d) + ABS(i)",
    "FLOOR(d) + CEIL(f)",
    "CEIL(m)",
    "ROUND(d, 2)",
    "ROUND(f, 1)",
    "ROUND(m, 1)",
    "ROUND(l, -1)",
    "GREATEST(d, 1e301, i)",
    "LEAST(i, l, 5)",
    "COALESCE(NULLIF(i, 1), l, 0)",
    "IF(flag, m, 1.5)",
    "NVL2(s, 'set', 'unset')",
    "CASE i WHEN 1 THEN 'one' WHEN 0 THEN 'zero' ELSE 'many' END",
    # dates and timestamps (UTC)
    "YEAR(day) * 10000 + MONTH(ts) * 100 + DAY(ts)",
    "HOUR(ts) * 3600 + MINUTE(ts) * 60 + SECOND(ts)",
    "DAYOFWEEK(day) * 10 + QUARTER(ts)",
    "DAYOFYEAR(ts) + WEEKOFYEAR(day)",
    "TO_DATE(ts)",
    "CAST(ts AS DATE) = TO_DATE(ntz)",
    "DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss')",
    "DATE_FORMAT(day, \"EEE dd MMM yy 'at' hh a\")",
    "TRUNC(day, 'WEEK')",
    "TRUNC(ts, 'QUARTER')",
    "DATE_TRUNC('MONTH', ts)",
    "DATE_TRUNC('HOUR', ntz)",
    "DATE_TRUNC('WEEK', day)",
    # casts
    "CAST(m AS STRING) || CAST(day AS STRING) || CAST(flag AS STRING)",
    "CAST(CONCAT(CAST(day AS STRING), ' 10:00') AS TIMESTAMP)",
    "CAST('2024-02-29T23:59:59.5+02:00' AS TIMESTAMP) < ts",
    "CAST(d / 1e299 AS DECIMAL(10, 3))",  # NaN: NULL, as Spark
    "CAST(f AS DECIMAL(6, 2))",
    "CAST(CAST(d AS FLOAT) AS DECIMAL(6, 2)) IS NULL",
    "CAST(CAST(i AS STRING) AS INT) = i",
    "CAST(f AS INT) + CAST(m AS INT)",
    "CAST(ts AS TIMESTAMP_NTZ)",
]

FAILING = [
    "i + 1",  # 2147483647 + 1
    "10 / l",  # l = 0 in one row
    "m / i",  # i = 0 in one row
    "i % l",
    "CAST(s AS INT)",
    "CAST(l AS INT)",
    "TO_DATE(s)",
    "ABS(b)",  # ABS(-128Y)
    "ROUND(b, -1)",  # -130 is not a TINYINT
    "CAST(d AS DECIMAL(38, 3))",  # 1e300
]


@pytest.fixture(scope="module")
def spark_view(spark: Any) -> Iterator[Any]:
    """ROWS as a Spark temporary view, the session in UTC with ANSI on (both restored after)."""
    before = {key: spark.conf.get(key) for key in ("spark.sql.session.timeZone", "spark.sql.ansi.enabled")}
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    spark.createDataFrame(ROWS, schema=DDL).createOrReplaceTempView(VIEW)
    yield spark
    spark.catalog.dropTempView(VIEW)
    for key, value in before.items():
        spark.conf.set(key, value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, D) and isinstance(b, D):  # same value and same scale
        return a == b and a.as_tuple().exponent == b.as_tuple().exponent
    return bool(a == b) and type(a) is type(b)


def _plain(t: pa.DataType) -> pa.DataType:
    return pa.string() if pa.types.is_large_string(t) else t


@pytest.mark.spark
@pytest.mark.slow
class TestSameAsSpark:
    @pytest.mark.parametrize("text", EXPRESSIONS)
    def test_every_row_and_the_type_match_spark(self, spark_view: Any, text: str) -> None:
        compiled = compile_expression(text, SCHEMA)
        ours = compiled.evaluate(ROWS)
        theirs = spark_view.sql(f"SELECT {text} AS r FROM {VIEW} ORDER BY id").toArrow()
        assert _plain(compiled.result_type) == _plain(theirs.schema.field("r").type)
        expected, got = theirs.column("r").to_pylist(), ours.to_pylist()
        assert len(got) == len(expected) == ROWS.num_rows
        mismatches = [
            (row, g, e) for row, (g, e) in enumerate(zip(got, expected, strict=True)) if not _same(g, e)
        ]
        assert not mismatches, mismatches

    @pytest.mark.parametrize("text", FAILING)
    def test_ansi_failures_fail_in_both(self, spark_view: Any, text: str) -> None:
        with pytest.raises(Exception, match=r"ARITHMETIC|BY_ZERO|CAST_|OVERFLOW|OUT_OF_RANGE"):
            spark_view.sql(f"SELECT {text} AS r FROM {VIEW}").toArrow()
        with pytest.raises(InvalidArgumentError):
            compile_expression(text, SCHEMA).evaluate(ROWS)


# --- issue 39: what Spark computes is computed exactly, or refused when the expression is declared --

_EDGE_FIELDS = [
    ("id", pa.int32(), "INT"),
    ("d", pa.float64(), "DOUBLE"),
    ("f", pa.float32(), "FLOAT"),
    ("i", pa.int32(), "INT"),
    ("l", pa.int64(), "BIGINT"),
    ("n", pa.int8(), "TINYINT"),
    ("m", pa.decimal128(10, 2), "DECIMAL(10,2)"),
    ("w", pa.decimal128(38, 6), "DECIMAL(38,6)"),
    ("txt", pa.string(), "STRING"),
    ("bin", pa.binary(), "BINARY"),
    ("dat", pa.date32(), "DATE"),
    ("ts", pa.timestamp("us", tz="UTC"), "TIMESTAMP"),
    ("ntz", pa.timestamp("us"), "TIMESTAMP_NTZ"),
    ("flag", pa.bool_(), "BOOLEAN"),
]
EDGE_SCHEMA = pa.schema([(name, t) for name, t, _ in _EDGE_FIELDS])
EDGE_DDL = ", ".join(f"{name} {spark_type}" for name, _, spark_type in _EDGE_FIELDS)
NAN, INF = float("nan"), float("inf")
_BIG = D("9" * 32 + "." + "9" * 6)  # DECIMAL(38,6)'s largest
_DAYS = [
    None,
    0,
    -1,
    19782,
    19722,
    19723,
    -141427,
    -719162,
    2932896,
    2932897,
    -719528,
    -719893,
    11016,
    -25508,
]
_MICROS = [None, 0, -1, 1, 1_704_067_199_999_999, 1_709_164_800_000_000, -62_135_596_800_000_000]
_MICROS += [253_402_300_799_999_999, 253_402_300_800_000_000, -62_167_219_200_000_000, -6 * 10**18]
_NTZ = [None, 0, -1, 1, 951_782_400_000_000, 1_709_251_199_999_999, -62_135_596_800_000_000]
_NTZ += [253_402_300_799_999_999, 253_402_300_800_000_001, -62_167_219_200_000_000, -5 * 10**18]
_WIDE = [None, "0", "1.5", "-1.5", str(_BIG), f"-{_BIG}", "12345678901234567890.123456", "-0.000001"]
_WIDE += ["0.000001", "100", "3.333333", "0.5", "-0.5", "12.34", "2", "5.55"]
# fmt: off
EDGE = pa.table(
    {
        "id": list(range(16)),
        "d": [None, NAN, INF, -INF, -0.0, 1e23, 5e-324, 123456789.0, 1e7, 9999999.999999998, 0.001,
              0.0009999999999999998, 1.7976931348623157e308, 0.1, 7.397728558447245e18, 2e23],
        "f": [None, NAN, INF, -INF, -0.0, 0.0, 1.23456792e8, 1e10, 3.4028235e38, 1.4e-45, 0.1,
              1e7, 9999999.0, 0.001, 16777216.0, 1e-5],
        "i": [None, 0, 1, -1, 2**31 - 1, -(2**31), 16777217, 7, -7, 100, 3, 12, -12, 365, 2, 5],
        "l": [None, 0, 2**63 - 1, -(2**63), 1, -1, 2**53 + 1, 7, -7, 100, 3, 12, -12, 365, 2, 5],
        "n": [None, 1, -2, 3, 7, -1, 2, -128, 127, 5, -5, 4, 9, 11, 13, -1],
        "m": [None, *map(D, ["0.00", "1.25", "-1.25", "99999999.99", "-99999999.99", "0.01", "7.45", "-7.45",
                             "100.00", "3.33", "0.50", "-0.50", "12.34", "2.00", "5.55"])],
        "w": pa.array(_WIDE, pa.string()).cast(pa.decimal128(38, 6)),
        "txt": [None, "", "a", "abcd", "abcde", "héllo", "日本語", "x" * 37, "O'Brien", " ", "\x00", "1",
                "-0", "NaN", "2024-01-01", "ß"],
        "bin": [None, b"", b"\x00\xff", b"abcd", b"abcde", b"\x80", b"\xff" * 9, b"a", b"ab", b"abc", b"\x00",
                b"\x7f\x80\x81", b"1", b"0", b"zz", bytes(range(1, 9))],
        "dat": pa.array([*_DAYS, 18630, 18627], pa.int32()).view(pa.date32()),
        "ts": pa.array([*_MICROS, 6 * 10**18 + 123, 500_000, 123_000, -500_000, 1_000_000], pa.int64())
              .view(pa.timestamp("us", tz="UTC")),
        "ntz": pa.array([*_NTZ, 5 * 10**18, 10_000, 120_000, -1_500_000, 59_999_999], pa.int64())
               .view(pa.timestamp("us")),
        "flag": [None, *([True, False] * 7), True],
    },
    schema=EDGE_SCHEMA,
)
# fmt: on
EDGE_VIEW = "sql_expressions_edges"
_UNITS = ["YEAR", "YYYY", "YY", "QUARTER", "MONTH", "MM", "MON", "WEEK", "DAY", "DD", "HOUR", "MINUTE"]
_UNITS += ["SECOND", "MILLISECOND", "MICROSECOND", "xx"]
EDGE_EXPRESSIONS = [
    # CAST to STRING: Java 17's Double / Float.toString, Spark's timestamp text
    "CAST(d AS STRING)",
    "CAST(f AS STRING)",
    "CAST(CAST(d AS FLOAT) AS STRING)",
    "CAST(-0.0D AS STRING) || CAST(-(-0.0D) AS STRING) || CAST(-0.0F AS STRING) || CAST(-d AS STRING)",
    "CAST(ts AS STRING)",
    "CAST(ntz AS STRING)",
    "CAST(dat AS STRING)",
    "CAST(CAST(dat AS TIMESTAMP) AS STRING)",
    "CAST(ts AS DATE)",
    "CAST(ntz AS DATE)",
    "CAST(w AS DOUBLE)",
    "CAST(m AS DOUBLE)",  # as Java's BigDecimal.doubleValue (Arrow's decimal cast is not)
    "CAST(m AS FLOAT)",
    "m * d + m",
    "CAST(w AS FLOAT)",
    "CAST(l AS FLOAT)",
    # DATE_ADD / DATE_SUB / DATEDIFF (32-bit days, wrapping as Spark's)
    "date_add(dat, i)",
    "date_sub(dat, i)",
    "date_add(dat, n)",
    "date_sub(ts, 1)",
    "date_add(ntz, -1)",
    "date_add('2024-02-28', n)",
    "datediff(dat, DATE '2024-01-01')",
    "datediff(ts, dat)",
    "datediff(ntz, '2000-02-29')",
    # integral division
    "i div n",
    "l div n",
    "m div n",
    "w div 0.3",
    "m div 0.07",
    "w div (m + 0.001)",
    "n div 2",
    # NaN
    "isnan(d)",
    "isnan(f)",
    "isnan(i)",
    "isnan(m)",
    "isnan(NULL)",
    "nanvl(d, 1.5D)",
    "nanvl(f, CAST(2.5 AS FLOAT))",
    "nanvl(f, d)",
    "nanvl(d, i)",
    "nanvl(d, NULL)",
    "nanvl(f, m)",
    # Spark's Murmur3 hash, seed 42
    "hash(i)",
    "hash(l)",
    "hash(n)",
    "hash(d)",
    "hash(f)",
    "hash(m)",
    "hash(w)",
    "hash(txt)",
    "hash(bin)",
    "hash(dat)",
    "hash(ts)",
    "hash(ntz)",
    "hash(flag)",
    "hash(i, txt, d, NULL, dat)",
    "hash(NULL)",
    "hash(txt, txt, w, f)",
    # date parts on the whole calendar
    "YEAR(dat) * 10000 + MONTH(dat) * 100 + DAY(dat)",
    "QUARTER(dat) * 1000 + DAYOFYEAR(dat)",
    "DAYOFWEEK(dat) * 100 + WEEKOFYEAR(dat)",
    "YEAR(ts) * 100 + WEEKOFYEAR(ts)",
    "HOUR(ts) * 10000 + MINUTE(ts) * 100 + SECOND(ts)",
    "HOUR(ntz) * 10000 + MINUTE(dat) * 100 + SECOND(ntz)",
    "FLOOR(l)",
    "CEIL(i) + FLOOR(n)",
    # Spark 4's (ANSI) widening: an integer and a FLOAT meet in DOUBLE; DATE and TIMESTAMP in TIMESTAMP
    "CAST(16777217 AS INT) = CAST(16777216 AS FLOAT)",
    "16777217 = CAST(16777216 AS FLOAT)",
    "i = f",
    "l = f",
    "f = m",
    "f < i",
    "COALESCE(f, i)",
    "IF(flag, f, l)",
    "GREATEST(f, n)",
    "dat = ts",
    "dat < ts",
    "dat <= ntz",
    # decimals meet keeping their integer digits (the scale gives way past 38 digits)
    "w IN (2.5000000001, 0.30000000000000004, 2.5000000000)",
    "w = 0.30000000000000004",
    "COALESCE(w, 0.30000000000000004)",
    "GREATEST(m, CAST(1 AS DECIMAL(38,37)))",
    "m IN (1.0000000000, 12345678901234567890123456789.123456789)",
    # an integer against a decimal literal past BIGINT: a constant, NULL rows too (Spark's analyzer)
    "i > 100000000000000000000",
    "100000000000000000000 < l",
    "n + 1 <= -9223372036854775809",
    "i BETWEEN 1 AND 100000000000000000000",
    "i > 1.5 OR l < -2.5",
    # comparisons group left to right, one precedence level
    "flag <> flag <= flag",
    "i = n < flag",
    "flag <=> flag > flag",
    "flag <=> (i > n)",
    "flag IS NOT DISTINCT FROM i > n",
    "i > n <=> flag",
    "i <=> n = flag",
    *(f"date_trunc('{unit}', {column})" for unit in _UNITS for column in ("dat", "ts", "ntz")),
    *(f"trunc(dat, '{unit}')" for unit in ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY")),
]


@pytest.fixture(scope="module")
def edge_view(spark_view: Any) -> Iterator[Any]:
    """EDGE as a Spark temporary view (UTC, ANSI: the spark_view fixture's settings)."""
    spark_view.createDataFrame(EDGE, schema=EDGE_DDL).createOrReplaceTempView(EDGE_VIEW)
    yield spark_view
    spark_view.catalog.dropTempView(EDGE_VIEW)


def _raw(values: Any) -> list[Any]:
    """Values to compare: dates and timestamps as their integers (any year), the rest as Python."""
    a = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_date32(a.type):
        a = a.view(pa.int32())
    elif pa.types.is_timestamp(a.type):
        a = a.cast(pa.timestamp("us", a.type.tz)).view(pa.int64())
    return list(a.to_pylist())


def _identical(a: Any, b: Any) -> bool:
    """Equal values of one type; NaN is NaN, -0.0 is not 0.0."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return _same(a, b)


def _mismatches(compiled_text: str, sql: str, spark: Any, table: pa.Table, schema: pa.Schema) -> list[Any]:
    compiled = compile_expression(compiled_text, schema)
    theirs = spark.sql(sql).toArrow()
    assert _plain(compiled.result_type) == _plain(theirs.schema.field("r").type), compiled_text
    got, expected = _raw(compiled.evaluate(table)), _raw(theirs.column("r"))
    assert len(got) == len(expected) == table.num_rows
    return [(row, g, e) for row, (g, e) in enumerate(zip(got, expected, strict=True)) if not _identical(g, e)]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("text", EDGE_EXPRESSIONS)
def test_edge_values_match_spark(edge_view: Any, text: str) -> None:
    sql = f"SELECT {text} AS r FROM {EDGE_VIEW} ORDER BY id"
    assert not _mismatches(text, sql, edge_view, EDGE, EDGE_SCHEMA)


_EDGE_FAILING = [
    "l div -1",  # BIGINT's minimum div -1
    "i div (n - n)",
    "m div 0.0",
    "date_add(dat, CAST(txt AS INT))",
    "CAST(txt AS DATE)",
    "CAST(txt AS TIMESTAMP)",
    "-w",  # DECIMAL(38,6)'s largest, rounded to 34 digits by Spark's negation, overflows
    "ABS(w)",
]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("text", _EDGE_FAILING)
def test_edge_ansi_failures_fail_in_both(edge_view: Any, text: str) -> None:
    with pytest.raises(Exception, match=r"ARITHMETIC|BY_ZERO|CAST_|OVERFLOW|OUT_OF_RANGE"):
        edge_view.sql(f"SELECT {text} AS r FROM {EDGE_VIEW}").toArrow()
    with pytest.raises(InvalidArgumentError):
        compile_expression(text, EDGE_SCHEMA).evaluate(EDGE)


_TEXTS = [
    # integers
    *("0x10", " 12 ", "+1", "-0", "1.0", "1e3", "", "+", "12a", "\x7f5\x7f", "9223372036854775807"),
    *("9223372036854775808", "-2147483648", "2147483648", "128", "١٢", "1_000", "007", "-129"),
    # floating point
    *("1.5", ".5", "5.", "5.f", "1.5d", "1e", "1e400", "-1e400", "1e-400", "inf", "+inf", "-INFINITY"),
    *("iNf", "nan", "NaN", "-NaN", "+nan", "Infinity", "+Infinity", "3.4028236e38", "\x01 5 \x01", "1,5"),
    *(".", "e5", "-.5e-3", "1.5D ", "\x7f1.5"),
    # dates
    *("2024-1-5", "2024-02", "2025", " 2025 ", "2024-1-5T10:00", "2024-01-05 garbage", "2024-01-05garbage"),
    *("2024-01-05T", "+2024-01-05", "-2024-01-05", "12024-01-05", "024-01-05", "2024-001-05", "2024-02-30"),
    *("2024-02-29", "2023-02-29", "2024-", "2024-1-", "0000-01-01", "5881580-07-11", "5881580-07-12"),
    *("\t2024-01-05\n", "2024-13-01", "2024-00-10", "2024-1-0", "2024-12-31T23:59:59.999999"),
    # timestamps
    *("2024-1-5 1:2:3", "2024-01-05T10", "2024-01-05 10:00:00.123456789", "2024-01-05 10:00:00Z"),
    *(
        "2024-01-05 10:00:00 UTC",
        "2024-01-05 10:00:00+1",
        "2024-01-05 10:00:00+01",
        "2024-01-05 10:00:00 +01:00",
    ),
    *("2024-01-05 10:00:00+1:30", "2024-01-05 10:00:00+01:3", "2024-01-05 10:00:00Europe/Paris"),
    *("2024-07-05 10:00:00 America/Los_Angeles", "2024-03-10 02:30:00 America/New_York"),
    *("2024-11-03 01:30:00 America/New_York", "2024-01-05 10:00:00 PST", "2024-01-05 10:00:00 EST"),
    *("2024-01-05 10:00:00 GMT+05:30", "2024-01-05 10:00:00 UT-3", "2024-01-05 10:00:00 Mars/Phobos"),
    *("2024-01-05 10:00 garbage", "2024-01-05 10:00Z", "2024-01-05 25:00", "2024-01-05 23:59:60"),
    *("+294247-01-10 04:00:54.775807", "+294247-01-10 04:00:54.775808", "-290308-12-21 19:59:05.224192"),
    *("2024-01-05 10:00:00.", "2024-01-05 10:00:00+18:00", "2024-01-05 10:00:00+18:01"),
    *(
        "2024-01-05 10:00:00+0130",
        "2024-01-05 10:00:00+013000",
        "2024-01-05 10:00:00z",
        "10",
        "1969-12-31 23:59:59.9",
    ),
    *("1582-10-10 12:00:00", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", "2024-01-05 10:00:00 GMT"),
    *("2024-01-05 10:00:00UTC+01:00", "2024-01-05 10:00:00 CET", "2024-01-05 10:00:00 +1:00"),
    # decimals
    *("1.25", "-1.25", "1e2", " 1.5 ", "12345", "99.95", "-99.95", "1E-2"),
]
_TARGETS = [
    "TINYINT",
    "INT",
    "BIGINT",
    "DOUBLE",
    "FLOAT",
    "DECIMAL(4,1)",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP_NTZ",
]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("target", _TARGETS)
def test_text_casts_accept_and_refuse_what_spark_does(spark_view: Any, target: str) -> None:
    """Every text Spark reads as `target` is read as Spark reads it; every text it refuses (ANSI
    CAST_INVALID_INPUT: try_cast's NULL) raises InvalidArgumentError here."""
    texts = pa.table({"id": list(range(len(_TEXTS))), "x": _TEXTS})
    spark_view.createDataFrame(texts, schema="id INT, x STRING").createOrReplaceTempView("cast_texts")
    theirs = spark_view.sql(f"SELECT try_cast(x AS {target}) AS r FROM cast_texts ORDER BY id").toArrow()
    compiled = compile_expression(f"CAST(x AS {target})", texts.schema)
    assert _plain(compiled.result_type) == _plain(theirs.schema.field("r").type)
    expected, mismatches = _raw(theirs.column("r")), []
    for row, text in enumerate(_TEXTS):
        try:
            got = _raw(compiled.evaluate(texts.slice(row, 1)))[0]
        except InvalidArgumentError:
            got = None
        if not _identical(got, expected[row]) and not (got is None and expected[row] is None):
            mismatches.append((text, got, expected[row]))
    assert not mismatches


@pytest.mark.spark
@pytest.mark.slow
def test_negating_wide_decimals_rounds_to_34_digits_as_spark(spark_view: Any) -> None:
    """Spark negates a decimal of more than 34 digits through Scala's BigDecimal (MathContext.DECIMAL128)."""
    texts = ["1234567890123456789012345678.1234567891", "-1234567890123456789012345678.1234565", "2.5", None]
    table = pa.table({"id": [0, 1, 2, 3], "w": pa.array(texts).cast(pa.decimal128(38, 10))})
    z = pa.array(["0.12345678901234567890123456789012345678"] * 4).cast(pa.decimal128(38, 38))
    table = table.append_column("z", z)
    spark_view.createDataFrame(
        table, schema="id INT, w DECIMAL(38,10), z DECIMAL(38,38)"
    ).createOrReplaceTempView("wide")
    for text in ("-w", "ABS(w)", "-z", "-(w + 0)"):
        sql = f"SELECT {text} AS r FROM wide ORDER BY id"
        assert not _mismatches(text, sql, spark_view, table, table.schema), text
