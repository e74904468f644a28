"""Predicate literals in the column's type, SQL NULL logic, and file pruning that agrees with the rows."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

from airflow_txnlog.engine import PredicateError, Table, UnsupportedExpressionError
from airflow_txnlog.engine.sql.literals import stats_value
from airflow_txnlog.engine.sql.predicates import Range, may_match, parse_predicate

D = decimal.Decimal
F32_MAX = 3.4028234663852886e38


@pytest.mark.parametrize(
    ("text", "t", "leaf"),
    [
        # the comparison type is Spark's (engine.sql.expressions.comparable), the constant in it
        ("x < 3000000000", pa.int32(), ("cmp", "<", "x", 3_000_000_000, pa.int64())),
        ("x = 2.5", pa.int32(), ("cmp", "=", "x", D("2.5"), pa.decimal128(11, 1))),
        ("x = 0.1", pa.float32(), ("cmp", "=", "x", 0.1, pa.float64())),  # FLOAT vs DECIMAL: DOUBLE
        ("x = 0.12345678901", pa.decimal128(20, 10),
         ("cmp", "=", "x", D("0.12345678901"), pa.decimal128(21, 11))),
        ("x < TIMESTAMP '2023-12-31 10:00:00'", pa.date32(),
         ("cmp", "<", "x", dt.datetime(2023, 12, 31, 10, tzinfo=dt.UTC), pa.timestamp("us", "UTC"))),
        ("x = DATE '2023-12-31'", pa.date32(), ("cmp", "=", "x", dt.date(2023, 12, 31), pa.date32())),
    ],
)  # fmt: skip
def test_a_comparison_leaf_is_typed_as_spark_compares(
    text: str, t: pa.DataType, leaf: tuple[Any, ...]
) -> None:
    tree = parse_predicate(text, pa.schema([("x", t)])).tree
    assert tree[:4] == leaf[:4] and tree[4] == leaf[4]


def _nulls_table(root: Path) -> Table:
    schema = pa.schema([("id", pa.int64()), ("x", pa.int32())])
    t = Table.create(str(root), schema=schema)
    t.write(pa.table({"id": [1, 2, 3], "x": [1, 2, None]}, schema=schema))
    return t


@pytest.mark.parametrize(
    ("predicate", "ids"),
    [
        ("NOT (x IN (1))", [2]),
        ("x IN (1, NULL)", [1]),
        ("NOT (x IN (1, NULL))", []),
        ("x NOT IN (3000000000)", [1, 2]),
        ("NOT (x = 2.5)", [1, 2]),
        ("x = 1 OR NULL", [1]),
        ("NOT (x = 1 AND NULL)", [2]),
        ("x < 3000000000", [1, 2]),
        ("NOT (x < 3000000000)", []),
    ],
)
def test_sql_null_logic_in_rows_and_pruning(tmp_path: Path, predicate: str, ids: list[int]) -> None:
    snap = _nulls_table(tmp_path / "t").snapshot()
    assert sorted(snap.to_arrow(filter=predicate).column("id").to_pylist()) == ids
    assert len(snap.files(filter=predicate)) == (1 if ids else 0)


def test_what_the_engine_cannot_compare_as_spark_does_is_refused_when_parsed() -> None:
    """Spark casts a string to a number under ANSI ('abc' fails, '011' is 11): not reproduced, so
    refused when the predicate is parsed, never while rows are read."""
    schema = pa.schema([("i", pa.int32()), ("s", pa.string())])
    with pytest.raises(UnsupportedExpressionError, match=r"i < s"):
        parse_predicate("i < s", schema)
    with pytest.raises(UnsupportedExpressionError, match=r"i < 'abc'"):
        parse_predicate("i < 'abc'", schema)


def test_float_stats_never_rule_out_nan_but_a_single_known_value_does() -> None:
    """Spark's order: NaN is above every number and equal to itself; stats leave NaN out."""
    schema = pa.schema([("f", pa.float64())])
    blind = {"f": Range(1.5, 1.5, 0, 2)}  # delta-rs: [1.5, NaN] has min = max = 1.5
    nan = "CAST('NaN' AS DOUBLE)"
    for text in ("f != 1.5", "NOT (f = 1.5)", "f NOT IN (1.5)", "f > 1.5", "f >= 100", f"f = {nan}",
                 f"f IN (2.5, {nan})", "NOT (f < 100)"):  # fmt: skip
        assert may_match(parse_predicate(text, schema).tree, blind), text
    for text in ("f < 1.5", "f = 2.5", "NOT (f >= 1.5)", "f > CAST('NaN' AS DOUBLE)"):
        assert not may_match(parse_predicate(text, schema).tree, blind), text
    partition = {"f": Range(1.5, 1.5, 0, 1)}
    assert not may_match(parse_predicate("f != 1.5", schema).tree, partition)
    assert not may_match(parse_predicate("f > 1.5", schema).tree, partition)


def test_float32_values_compare_with_a_decimal_literal_as_doubles() -> None:
    """Spark: FLOAT vs DECIMAL compares as DOUBLE, so the float32 0.1 (0.10000000149) != 0.1."""
    schema = pa.schema([("p", pa.float32())])
    one = {"p": Range(0.10000000149011612, 0.10000000149011612, 0, 1)}  # the float32 0.1, exactly
    assert not may_match(parse_predicate("p = 0.1", schema).tree, one)
    assert may_match(parse_predicate("p > 0.1", schema).tree, one)
    assert may_match(parse_predicate("p = CAST(0.1 AS FLOAT)", schema).tree, one)


def test_decimal_stats_that_may_be_rounded_doubles_are_widened() -> None:
    t = pa.decimal128(20, 10)
    lo = stats_value(D("12345678.12345679"), t, is_max=False)  # delta-rs: a double's shortest form
    assert lo is not None and lo < D("12345678.1234567891")
    assert stats_value(D("12345678.1234567891"), t, is_max=False) == D("12345678.1234567891")
    assert stats_value(D("1.5"), pa.decimal128(10, 2), is_max=True) == D("1.5")


@pytest.mark.compat
def test_decimal_filters_are_exact_on_tables_written_by_delta_rs(tmp_path: Path) -> None:
    root = tmp_path / "t"
    dec = pa.decimal128(20, 10)
    data = pa.table(
        {"id": [1, 2], "dec": pa.array([D("12345678.1234567891"), D("9999999999.9999999999")], dec)}
    )
    deltalake.write_deltalake(str(root), data)
    snap = Table.open(str(root)).snapshot()
    for text, ids in [
        ("dec = 12345678.1234567891", [1]),
        ("dec <= 12345678.1234567891", [1]),
        ("dec >= 9999999999.9999999999", [2]),
        ("dec > 9999999999.9999999998", [2]),
    ]:
        assert sorted(snap.to_arrow(filter=text).column("id").to_pylist()) == ids, text


def test_float32_pruning_compares_as_spark_does() -> None:
    # Spark compares a float column with a decimal literal as doubles: the float32 0.7 (0.699999988)
    # is below 0.7, so `f < 0.7` matches it and `f = 0.7` does not.
    schema = pa.schema([("f", pa.float32())])
    f07 = {"f": Range(0.699999988079071, 0.699999988079071, 0, 1)}
    assert may_match(parse_predicate("f < 0.7", schema).tree, f07)
    assert may_match(parse_predicate("f NOT IN (0.7)", schema).tree, f07)
    assert not may_match(parse_predicate("f = 0.7", schema).tree, f07)
    assert not may_match(parse_predicate("f > 0.7", schema).tree, f07)


@pytest.mark.parametrize(
    ("text", "shown", "date"),
    [
        ("d >= 2026-11-27", "2026-11-27 without quotes parsed as arithmetic (2026 - 11 - 27)", "2026-11-27"),
        ("2026-1-7 < d", "2026-1-7 without quotes parsed as arithmetic (2026 - 1 - 7)", "2026-01-07"),
        ("d BETWEEN DATE '2026-01-01' AND 2026-02-01", "2026-02-01 without quotes", "2026-02-01"),
        ("d IN (DATE '2026-01-01', 2026-02-01)", "2026-02-01 without quotes", "2026-02-01"),
    ],
)
def test_an_unquoted_date_says_it_parsed_as_arithmetic_and_how_to_write_it(
    tmp_path: Path, text: str, shown: str, date: str
) -> None:
    schema = pa.schema([("d", pa.date32())])
    t = Table.create(str(tmp_path / "t"), schema=schema)
    t.write(pa.table({"d": pa.array([None], pa.date32())}))
    with pytest.raises(PredicateError) as err:
        t.snapshot().to_arrow(filter=text)
    assert shown in str(err.value)
    assert str(err.value).endswith(
        f"not as a date. Help: write DATE '{date}' (or the quoted string '{date}')"
    )


def test_other_arithmetic_is_computed_as_spark_computes_it(tmp_path: Path) -> None:
    """One SQL room: a filter computes what a constraint computes (`n > 2026 - 11` is `n > 2015`)."""
    schema = pa.schema([("d", pa.date32()), ("n", pa.int64())])
    t = Table.create(str(tmp_path / "t"), schema=schema)
    t.write(pa.table({"d": pa.array([None, None], pa.date32()), "n": [2015, 2016]}, schema=schema))
    assert t.snapshot().to_arrow(filter="n > 2026 - 11").column("n").to_pylist() == [2016]
    with pytest.raises(PredicateError, match=r"does not parse") as err:
        parse_predicate("d > '2026-11-27 00:00:00' AND", schema)
    assert "Help" not in str(err.value)  # the date and time is quoted: no hint
