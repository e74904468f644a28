"""`airflow_txnlog._shown`: the one rule by which the engine, Spark and Airflow argument checks show a
value in an error (a repr cut to 80 characters; accepted values as `'a', 'b' or 'c'`)."""

from __future__ import annotations

import pytest

from airflow_txnlog import arguments
from airflow_txnlog._shown import listed, shown
from airflow_txnlog.engine import InvalidArgumentError
from airflow_txnlog.engine.spi import check_choice


def test_shown_cuts_a_long_repr_to_80_characters() -> None:
    assert shown("abc") == "'abc'"
    long = shown(list(range(1000)))
    assert len(long) == 80 and long.endswith("...") and long.startswith("[0, 1, 2")


def test_listed_names_one_two_or_more_values() -> None:
    assert listed(["a"]) == "'a'"
    assert listed(["a", "b"]) == "'a' or 'b'"
    assert listed(["a", "b", "c"]) == "'a', 'b' or 'c'"


def test_engine_and_airflow_checks_show_a_huge_value_cut() -> None:
    huge = "x" * 10_000
    with pytest.raises(InvalidArgumentError) as engine_error:
        check_choice("mode", huge, arguments.WriteMode)
    with pytest.raises(InvalidArgumentError) as airflow_error:
        arguments.check_choice("mode", huge, arguments.WriteMode)
    for error in (engine_error, airflow_error):
        assert shown(huge) in str(error.value) and len(str(error.value)) < 200
    assert "'append' or 'overwrite'" in str(airflow_error.value)
