"""Predicate literals in the column's type, SQL NULL logic, and file pruning that agrees with the rows."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

from airflow_txnlog.engine import PredicateError, Table
from airflow_txnlog.engine.sql.literals import fit
from airflow_txnlog.engine.sql.predicates import Range, may_match, parse_predicate, stats_value

D = decimal.Decimal
F32_MAX = 3.4028234663852886e38


@pytest.mark.parametrize(
    ("op", "t", "value", "fitted"),
    [
        ("<", pa.int32(), 3_000_000_000, True),
        (">=", pa.int32(), 3_000_000_000, False),
        ("!=", pa.int32(), -3_000_000_000, True),
        ("=", pa.int32(), D("2.5"), False),
        ("<", pa.int32(), D("2.5"), ("<=", 2)),
        (">", pa.int32(), D("-2.5"), (">=", -2)),
        ("=", pa.int64(), D("7.0"), ("=", 7)),
        (">", pa.uint8(), -1, True),
        ("<", pa.int64(), D("1e999999"), True),
        ("=", pa.decimal128(20, 10), D("0.12345678901"), False),
        (">", pa.decimal128(20, 10), D("0.12345678901"), (">=", D("0.1234567891"))),
        ("<=", pa.decimal128(20, 10), D("0.12345678901"), ("<=", D("0.1234567890"))),
        ("<", pa.decimal128(20, 10), D("1e10"), True),
        ("=", pa.decimal128(20, 10), D("12345678.1234567891"), ("=", D("12345678.1234567891"))),
        ("=", pa.float32(), D("0.1"), ("=", 0.10000000149011612)),
        ("<", pa.float32(), D("1e300"), ("<=", F32_MAX)),
        (">", pa.float32(), D("1e300"), (">", F32_MAX)),
        (">", pa.float32(), D("-1e300"), (">=", -F32_MAX)),
        ("=", pa.float32(), D("1e300"), False),
        ("<", pa.float64(), D("1e400"), ("<=", 1.7976931348623157e308)),
        ("<", pa.float64(), float("nan"), False),
        ("!=", pa.float64(), float("nan"), True),
        ("=", pa.float64(), float("inf"), ("=", float("inf"))),
    ],
)
def test_literals_are_fitted_to_the_column_type(op: str, t: pa.DataType, value: Any, fitted: Any) -> None:
    assert fit(op, t, value) == fitted


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


def test_columns_of_types_arrow_cannot_compare_are_predicate_errors() -> None:
    schema = pa.schema([("i", pa.int32()), ("s", pa.string())])
    with pytest.raises(PredicateError, match=r"'i'.*cannot be compared.*'s'"):
        parse_predicate("i < s", schema)
    with pytest.raises(PredicateError, match=r"'abc'.*int32.*'i'"):
        parse_predicate("i < 'abc'", schema)


def test_float_stats_never_rule_out_nan_but_a_single_known_value_does() -> None:
    schema = pa.schema([("f", pa.float64())])
    blind = {"f": Range(1.5, 1.5, 0, 2)}  # delta-rs: [1.5, NaN] has min = max = 1.5
    for text in ("f != 1.5", "NOT (f = 1.5)", "f NOT IN (1.5)", "NOT (f <= 1.5)"):
        assert may_match(parse_predicate(text, schema).tree, blind), text
    assert not may_match(parse_predicate("f > 1.5", schema).tree, blind)
    partition = {"f": Range(1.5, 1.5, 0, 1)}
    assert not may_match(parse_predicate("f != 1.5", schema).tree, partition)


def test_float32_partition_values_compare_in_float32() -> None:
    schema = pa.schema([("p", pa.float32())])
    tree = parse_predicate("p = 0.1", schema).tree
    assert may_match(tree, {"p": Range(0.1, 0.1, 0, 1)})  # the partition value as written: "0.1"


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


def test_float32_pruning_also_keeps_what_a_double_comparison_would_match() -> None:
    # Spark compares a float column with a literal as doubles: the float32 0.7 (0.699999988) < 0.7.
    # Rows compare in float32 (no match), but the file must survive pruning for a Spark job.
    schema = pa.schema([("f", pa.float32())])
    f07 = Range(0.699999988079071, 0.699999988079071, 0, 1)
    assert may_match(parse_predicate("f < 0.7", schema).tree, {"f": f07})
    assert may_match(parse_predicate("f NOT IN (0.7)", schema).tree, {"f": f07})
    assert may_match(parse_predicate("f = 0.7", schema).tree, {"f": f07})
    assert not may_match(parse_predicate("f > 0.7", schema).tree, {"f": f07})


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


def test_other_arithmetic_is_named_as_such_without_a_date_help() -> None:
    schema = pa.schema([("d", pa.date32()), ("n", pa.int64())])
    with pytest.raises(PredicateError) as err:
        parse_predicate("n > 2026 - 11", schema)
    assert str(err.value) == (
        "predicate 'n > 2026 - 11': unsupported expression '2026 - 11': arithmetic is not supported here "
        "(only columns and literals may be compared)"
    )
    with pytest.raises(PredicateError, match=r"is not valid SQL") as err:
        parse_predicate("d > '2026-11-27 00:00:00' AND", schema)
    assert "Help" not in str(err.value)  # the date and time is quoted: no hint
