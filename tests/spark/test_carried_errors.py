"""An error the `txnlog` data source raises in a Spark worker comes back whole (`spark.errors`).

Spark hands the driver the worker's traceback as text inside its own exception. Here the traceback is
made as PySpark's worker makes it (`traceback.format_exception`) and wrapped in Spark's sentences, so
the round trip is checked without a Spark session: the class, the message and every field
(`ConstraintViolationError.constraint / expression / row / count`, `UnsupportedFeatureError.feature`,
a conflict's `winning_version`, ...) are what the worker raised.
"""

from __future__ import annotations

import datetime as dt
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from airflow_txnlog.engine import (
    ConcurrentAppendError,
    ConstraintNotFoundError,
    ConstraintViolationError,
    FilesMissingError,
    InvalidArgumentError,
    TxnLogError,
    UnsupportedFeatureError,
)
from airflow_txnlog.spark.errors import (
    CARRIED,
    SparkJobError,
    carried_error,
    carry,
    carrying,
    carrying_iterator,
    spark_failure,
)

ERRORS: list[Callable[[], TxnLogError]] = [
    lambda: ConstraintViolationError(
        "column v is VARCHAR(3): 1 value is longer (EXCEED_LIMIT_LENGTH)",
        constraint="__CHAR_VARCHAR_STRING_LENGTH_CHECK__",
        expression="length(v) <= 3",
        row={"id": 2, "v": "long", "nested": {"a": [1, None]}},
        count=1,
    ),
    lambda: UnsupportedFeatureError("the table uses deletion vectors", feature="deletionVectors"),
    lambda: ConcurrentAppendError("files were added to a partition read", winning_version=7),
    lambda: FilesMissingError("files are gone", missing=["part-0.parquet", "part-1.parquet"]),
    lambda: ConstraintNotFoundError("positive", ["padded"]),
    lambda: InvalidArgumentError("txnlog: unknown read options ['bogus']\nsecond line of the message"),
]


def _spark_text(exc: BaseException) -> str:
    """What a Spark exception says of a data source that raised `exc` (the worker's traceback)."""
    worker = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return (
        "[PYTHON_DATA_SOURCE_ERROR] Failed to plan Python data source `txnlog` read: "
        f"{worker} SQLSTATE: 38000\n\tat org.apache.spark.sql.errors.QueryCompilationErrors$..."
    )


def _raised_in_worker(error: TxnLogError) -> Exception:
    @carrying
    def method() -> None:
        raise error

    with pytest.raises(type(error)) as caught:
        method()
    return Exception(_spark_text(caught.value))


def _fields(error: BaseException) -> dict[str, Any]:
    return {k: v for k, v in vars(error).items() if not k.startswith("_")}


@pytest.mark.parametrize("make", ERRORS, ids=lambda make: type(make()).__name__)
def test_the_class_message_and_fields_come_back(make: Callable[[], TxnLogError]) -> None:
    error = make()
    message, fields = str(error), _fields(error)
    spark_exc = _raised_in_worker(error)
    back = carried_error(spark_exc)
    assert type(back) is type(error)
    assert str(back) == message
    assert _fields(back) == fields
    assert spark_failure(spark_exc, "the write") is not None
    assert type(spark_failure(spark_exc, "the write")) is type(error)


def test_a_yielding_method_carries_too() -> None:
    @carrying_iterator
    def read() -> Iterator[int]:
        yield 1
        raise UnsupportedFeatureError("the table uses variant shredding", feature="variantShredding")

    with pytest.raises(UnsupportedFeatureError) as caught:
        list(read())
    back = carried_error(Exception(_spark_text(caught.value)))
    assert isinstance(back, UnsupportedFeatureError) and back.feature == "variantShredding"


def test_the_note_is_added_once_and_leaves_the_message_alone() -> None:
    error = UnsupportedFeatureError("m", feature="f")
    carry(carry(error))
    assert str(error) == "m"
    assert [n.startswith(CARRIED) for n in error.__notes__] == [True]


def test_values_json_cannot_hold_come_back_as_text() -> None:
    when = dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)
    error = ConstraintViolationError("broken", constraint="c", row={"ts": when, "raw": b"\x00"})
    back = carried_error(_raised_in_worker(error))
    assert isinstance(back, ConstraintViolationError)
    assert back.row == {"ts": str(when), "raw": str(b"\x00")} and back.constraint == "c"


def test_a_forged_note_in_a_row_is_not_taken_for_the_error() -> None:
    forged = (
        CARRIED
        + ' {"class": "airflow_txnlog.engine.errors.InvalidArgumentError", "message": "x", "fields": {}}'
    )
    error = ConstraintViolationError(f"a row breaks c: {forged}", constraint="c", row={"s": forged})
    back = carried_error(_raised_in_worker(error))
    assert isinstance(back, ConstraintViolationError)
    assert back.row == {"s": forged} and str(back) == str(error)


def test_without_the_note_the_class_and_first_line_still_come_back() -> None:
    """A message Spark cut short (or a worker of an older version): the traceback's last line of ours."""
    text = (
        "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback ...\n"
        "airflow_txnlog.engine.errors.InvalidArgumentError: txnlog: no table path; use .load(path) "
        "SQLSTATE: 38000"
    )
    back = carried_error(Exception(text))
    assert isinstance(back, InvalidArgumentError) and str(back) == "txnlog: no table path; use .load(path)"
    assert carried_error(Exception("Division by zero")) is None
    assert isinstance(spark_failure(Exception("Division by zero"), "the write"), SparkJobError)
