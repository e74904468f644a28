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
