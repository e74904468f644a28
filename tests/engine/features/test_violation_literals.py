"""A violating row is shown with Spark SQL literals, not Python reprs (issue 38, item 2): what the
engine's writes say for a CHECK constraint, a column invariant and a generated column, and the one
helper that writes the literals (engine.sql.literal_text)."""

from __future__ import annotations

import datetime as dt
import decimal
import zoneinfo
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import ConstraintViolationError, Table
from airflow_txnlog.engine.spi import RowRule, row_rule_violation
from airflow_txnlog.engine.sql.literal_text import sql_literal

TS = dt.datetime(2026, 11, 27, tzinfo=zoneinfo.ZoneInfo("UTC"))
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("local", pa.timestamp("us")),
        ("day", pa.date32()),
        ("amount", pa.decimal128(10, 2)),
        ("name", pa.string()),
        ("raw", pa.binary()),
        ("info", pa.struct([("n", pa.int32()), ("tags", pa.list_(pa.string()))])),
        ("attrs", pa.map_(pa.string(), pa.int64())),
        ("note", pa.string()),
    ]
)
ROW_SHOWN = (
    "id=7, ts=TIMESTAMP '2026-11-27 00:00:00', local=TIMESTAMP_NTZ '2026-11-27 08:30:00.000500', "
    "day=DATE '2026-11-27', amount=12.50, name='O\\'Brien', raw=X'00FF', "
    "info=struct(1 AS n, array('x', NULL) AS tags), attrs=map('k', 2), note=NULL"
)


def _row(schema: pa.Schema = SCHEMA) -> pa.Table:
    values: dict[str, Any] = {
        "id": [7],
        "ts": [TS],
        "local": [dt.datetime(2026, 11, 27, 8, 30, 0, 500)],
        "day": [dt.date(2026, 11, 27)],
        "amount": [decimal.Decimal("12.50")],
        "name": ["O'Brien"],
        "raw": [b"\x00\xff"],
        "info": [{"n": 1, "tags": ["x", None]}],
        "attrs": [[("k", 2)]],
        "note": [None],
    }
    return pa.table(values, schema=schema)


def test_a_check_constraint_violation_shows_the_row_as_sql_literals(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.add_constraint("before_2026", "ts < TIMESTAMP '2026-01-01 00:00:00'")
    with pytest.raises(ConstraintViolationError) as err:
        t.write(_row())
    message = str(err.value)
    assert message == (
        "CHECK constraint before_2026 (ts < TIMESTAMP '2026-01-01 00:00:00') is violated by 1 row; one of "
        f"them: {ROW_SHOWN}. Nothing was committed"
    )
    assert "datetime" not in message and "Decimal" not in message and "None" not in message
    assert err.value.row is not None and err.value.row["ts"] == TS  # the values themselves stay Python's
    assert t.latest_version() == 1


def test_an_invariant_violation_shows_the_row_as_sql_literals(tmp_path: Path) -> None:
    rule = '{"expression": {"expression": "day < DATE \'2026-01-01\'"}}'
    day = pa.field("day", pa.date32(), metadata={"delta.invariants": rule})
    schema = SCHEMA.set(SCHEMA.get_field_index("day"), day)
    t = Table.create(str(tmp_path / "t"), schema=schema)
    with pytest.raises(ConstraintViolationError, match="invariant on column day") as err:
        t.write(_row(schema))
    assert str(err.value).endswith(f"is violated by 1 row; one of them: {ROW_SHOWN}. Nothing was committed")


def test_a_generated_column_violation_shows_the_row_as_sql_literals(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, generated_columns={"day": "CAST(ts AS DATE)"})
    wrong = _row().set_column(3, "day", pa.array([dt.date(2026, 11, 28)], pa.date32()))
    with pytest.raises(ConstraintViolationError, match="generated column day = CAST") as err:
        t.write(wrong)
    assert "ts=TIMESTAMP '2026-11-27 00:00:00', " in str(err.value)
    assert "day=DATE '2026-11-28', " in str(err.value)


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (None, "NULL"),
        (False, "FALSE"),
        (-3, "-3"),
        (-2.5, "-2.5"),
        (float("nan"), "CAST('NaN' AS DOUBLE)"),
        (float("-inf"), "CAST('-Infinity' AS DOUBLE)"),
        (decimal.Decimal("1E+3"), "1000"),  # (1E+3 would be a double in Spark SQL)
        ("a\\b\nc\x01", "'a\\\\b\\nc\\u0001'"),  # one line, as Spark SQL reads it back
        (bytearray(b"\x0a"), "X'0A'"),
        (dt.date(1, 1, 1), "DATE '0001-01-01'"),
        # a zoned timestamp in UTC, as the engine reads a TIMESTAMP literal
        (
            dt.datetime(2026, 11, 27, 1, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")),
            "TIMESTAMP '2026-11-27 00:00:00'",
        ),
        ({"a b": 1, "c": {"d": None}}, "struct(1 AS `a b`, struct(NULL AS d) AS c)"),
        ({1: "x"}, "map(1, 'x')"),  # keys other than names: a map, not a struct
        ([], "array()"),
        (dt.time(1, 2), "datetime.time(1, 2)"),  # no Delta type: its repr
    ],
)
def test_values_as_spark_sql_literals(value: object, literal: str) -> None:
    assert sql_literal(value) == literal


def test_a_long_value_is_cut_and_a_huge_one_is_not_written_whole() -> None:
    shown = sql_literal(list(range(1_000_000)), limit=50)
    assert len(shown) == 50 and shown.startswith("array(0, 1, 2, ") and shown.endswith("...")
    assert sql_literal("x" * 300) == "'" + "x" * 196 + "..."


def test_the_spark_layers_violation_uses_the_same_literals() -> None:
    """SparkTable's paths build their error with `row_rule_violation`, the engine's own."""
    error = row_rule_violation(RowRule("expectation", "recent", "d > DATE '2027-01-01'"), {"d": TS.date()}, 2)
    assert str(error) == (
        "expectation recent (d > DATE '2027-01-01') is violated by 2 rows; one of them: d=DATE '2026-11-27'. "
        "Nothing was committed"
    )
