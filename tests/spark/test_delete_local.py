"""DELETE's in-process lever (spark.delete_local): taken only where the engine's answer is Spark's,
and then equal to delta-rs's DELETE on an identical copy; Spark runs otherwise."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from airflow_txnlog.spark import SparkTable
from airflow_txnlog.spark.dml import delete, delete_local
from airflow_txnlog.spark.read import planning
from tests.spark.helpers import assert_same_as_deltalake

pytestmark = [pytest.mark.spark]


def _no_spark_job(*_: object, **__: object) -> dict[str, int]:
    raise AssertionError("the Spark path ran")


def _no_local(*_: object, **__: object) -> object:
    raise AssertionError("the in-process path ran")


@pytest.mark.parametrize(
    "predicate",
    [
        "id >= 100 AND id < 130",
        "name = 'name-007' OR id > 2390",  # NULL names: not TRUE, kept (as Spark and delta-rs)
        "id IN (1, 2, 3, 2399) AND NOT (part = 'b')",
        "day = DATE '2024-01-05' AND amount >= 100",
        "amount > 200 AND ts < '2024-01-01T20:00:00Z'",  # session zone UTC: exact
        "value / 2 > 500",  # arithmetic: the engine's SQL room computes it as Spark (issue 39)
        "value > 1190.5",  # a double: the engine orders NaN as Spark does (no NaN here: = delta-rs)
    ],
)
def test_in_process_delete_equals_deltalake(spark, pair, monkeypatch, predicate: str) -> None:
    ours, theirs = pair(True)
    monkeypatch.setattr(delete, "matched_files", _no_spark_job)
    monkeypatch.setattr(planning, "matched_files", _no_spark_job)
    result = SparkTable(spark, str(ours)).delete(predicate)
    theirs_metrics = DeltaTable(str(theirs)).delete(predicate)
    assert_same_as_deltalake(ours, theirs)
    assert result.metrics["numDeletedRows"] == theirs_metrics["num_deleted_rows"] > 0
    assert result.metrics["numCopiedRows"] == theirs_metrics["num_copied_rows"]


@pytest.mark.parametrize(
    ("predicate", "setting"),
    [
        ("ts < TIMESTAMP '2024-01-01 01:00:00'", "America/New_York"),  # zone-dependent literal
    ],
)
def test_spark_runs_where_the_engine_might_differ(
    spark, pair, monkeypatch, predicate: str, setting: str | None
) -> None:
    ours, theirs = pair(False)
    monkeypatch.setattr(delete_local, "delete_in_process", _no_local)
    old = spark.conf.get("spark.sql.session.timeZone")
    if setting:
        spark.conf.set("spark.sql.session.timeZone", setting)
    try:
        SparkTable(spark, str(ours)).delete(predicate)
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    if setting is None:  # (delta-rs reads the zone-less literal as UTC: compare only the other case)
        DeltaTable(str(theirs)).delete(predicate)
        assert_same_as_deltalake(ours, theirs)


def test_big_candidates_go_to_spark(spark, pair, monkeypatch) -> None:
    ours, _ = pair(False)
    monkeypatch.setattr(delete_local, "MAX_BYTES", 1)
    monkeypatch.setattr(delete_local, "delete_in_process", _no_local)
    assert SparkTable(spark, str(ours)).delete("id < 50").metrics["numDeletedRows"] == 50


def test_a_number_against_a_string_column_is_neither_pruned_nor_filtered_by_the_engine() -> None:
    """Spark casts the string column to a number ('011' > 10); the engine refuses what it cannot
    compute as Spark does, so Spark evaluates it."""
    from airflow_txnlog.engine import UnsupportedExpressionError, parse_predicate  # noqa: PLC0415
    from tests.spark.conftest import SCHEMA  # noqa: PLC0415

    with pytest.raises(UnsupportedExpressionError):
        parse_predicate("name > 10", SCHEMA)
    assert parse_predicate("name > '10'", SCHEMA).columns == {"name"}
    plan = planning.classify("name > 10", type("Ctx", (), {"schema": SCHEMA, "partition_columns": ()})())  # type: ignore[arg-type]
    assert plan.case is planning.Case.DATA and plan.parsed is None  # no pruning, no in-process lever
