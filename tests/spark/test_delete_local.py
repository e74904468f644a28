"""DELETE's in-process lever (spark.delete_local): taken only where the engine's answer is Spark's,
and then equal to delta-rs's DELETE on an identical copy; Spark runs otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql.types import LongType, StructField

from airflow_txnlog.engine import PredicateError, Table
from airflow_txnlog.spark import SparkTable, conditions
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


# --------------------------------------------------------------- Spark's check of the predicate
# It runs on a helper thread while the engine plans (spark.conditions.check_condition_meanwhile);
# the in-process lever waits for it before writing anything, and a pass is remembered only for the
# engine's SQL, keyed by the settings that change Spark's answer.


@pytest.fixture
def case_sensitive(spark) -> Iterator[None]:
    old = spark.conf.get("spark.sql.caseSensitive")
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.caseSensitive", old)


def _files(path: Path) -> set[Path]:
    return {p for p in path.rglob("*") if p.is_file()}


def test_what_spark_refuses_fails_before_the_lever_writes(spark, pair, monkeypatch, case_sensitive) -> None:
    """The engine resolves `ID` to `id` (Spark's default); a case-sensitive session does not: the
    check's error is raised, and the lever, which found matches, wrote and committed nothing."""
    ours, _ = pair(False)
    before, version = _files(ours), Table.open(str(ours)).snapshot().version
    monkeypatch.setattr(delete, "matched_files", _no_spark_job)
    with pytest.raises(PredicateError, match="unknown column `ID` in the DELETE predicate"):
        SparkTable(spark, str(ours)).delete("ID < 5")
    assert _files(ours) == before and Table.open(str(ours)).snapshot().version == version


def test_a_remembered_pass_holds_only_under_its_settings(spark, pair) -> None:
    ours, other = pair(False)
    predicate = "ID < 7 AND id >= 0"  # (a text no other test checks)
    assert SparkTable(spark, str(ours)).delete(predicate).metrics["numDeletedRows"] == 7
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        with pytest.raises(PredicateError, match="unknown column `ID`"):
            SparkTable(spark, str(other)).delete(predicate)
    finally:
        spark.conf.set("spark.sql.caseSensitive", "false")


def test_passes_are_remembered_for_the_engines_sql_only(spark, copy_table, monkeypatch) -> None:
    analysed: list[str] = []
    real = conditions.check_condition

    def counted(rows: Any, sql: str | None, what: str, columns: str | None = None) -> None:
        analysed.append(str(sql))
        real(rows, sql, what, columns)

    monkeypatch.setattr(conditions, "check_condition", counted)
    parsed, unparsed = "id >= 11 AND id < 14", "levenshtein(name, 'name-011') < 1 AND id < 100"
    for i in range(2):
        for predicate in (parsed, unparsed):
            SparkTable(spark, str(copy_table(False, f"t{i}{len(predicate)}"))).delete(predicate)
    assert analysed.count(parsed) == 1  # the engine parses it: the second DELETE reuses the pass
    assert analysed.count(unparsed) == 2  # (a function the engine lacks: Spark's answer may change)


def test_the_empty_frame_is_built_once_per_session_and_columns(spark, pair) -> None:
    ours, _ = pair(False)
    table = SparkTable(spark, str(ours))
    ctx = table._handle.context(table.table.snapshot())
    assert ctx.empty_df() is ctx.empty_df()
    extra = StructField("x", LongType())
    assert ctx.empty_df([extra]) is ctx.empty_df([extra]) is not ctx.empty_df()
    assert ctx.empty_df([extra]).columns == [*ctx.schema.names, "x"]
