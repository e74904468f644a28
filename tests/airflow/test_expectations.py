"""Expectations on the Spark write and merge operators (issue 26, item 5): fail / drop / quarantine
with exact counts, the quarantine committed first with the task's idempotency id (a retry neither
loses nor duplicates a row), counts in the XCom, the asset event and the commit's operationMetrics."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.assets import table_asset
from airflow_txnlog.engine import ConstraintViolationError, InvalidArgumentError, Table
from airflow_txnlog.operators.spark import TxnLogSparkMergeOperator, TxnLogSparkWriteOperator
from tests.airflow.spark_operators import plain_context

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SCHEMA = "id long, amount double, country string"
# id 1 ok; 2 NULL amount (drop); 3 negative (drop); 4 unknown country (quarantine);
# 5 negative AND unknown country (quarantine wins: both rules count it); 6 ok
ROWS = [(1, 10.0, "DE"), (2, None, "FR"), (3, -1.0, "DE"), (4, 5.0, "XX"), (5, -2.0, "YY"), (6, 7.0, "FR")]
RULES = {
    "positive_amount": ("amount > 0", "drop"),
    "known_country": ("country IN ('DE', 'FR')", "quarantine"),
    "has_id": "id IS NOT NULL",
}


def _context(day: int = 1) -> dict[str, Any]:
    return plain_context(day)


def _source(rows: list[tuple[Any, ...]]) -> Any:
    return lambda spark, _: spark.createDataFrame(rows, SCHEMA)


def _ids(uri: str) -> list[int]:
    return sorted(Table.open(uri).snapshot().to_arrow().column("id").to_pylist())


def test_drop_and_quarantine_with_exact_counts_and_a_safe_retry(spark: Any, tmp_path: Path) -> None:
    uri, quarantine = str(tmp_path / "orders"), str(tmp_path / "orders_quarantine")
    op = TxnLogSparkWriteOperator(
        task_id="load", table_uri=uri, source=_source(ROWS), spark_conn_id=None,
        expectations=RULES, quarantine_table_uri=quarantine,
    )  # fmt: skip
    out = op.execute(ctx := _context())
    report = {
        "rules": {
            "positive_amount": {"action": "drop", "rows": 3},  # ids 2, 3, 5
            "known_country": {"action": "quarantine", "rows": 2},  # ids 4, 5
        },
        "quarantined_rows": 2,
    }
    assert out["expectations"] == report
    assert ctx["outlet_events"][table_asset(uri)].extra["expectations"] == report
    assert _ids(uri) == [1, 6]
    quarantined = sorted(Table.open(quarantine).snapshot().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["_broken_rules"]) for r in quarantined] == [
        (4, ["known_country"]),
        (5, ["known_country"]),
    ]
    metrics = Table.open(uri).history(1)[0]["operationMetrics"]
    assert (
        metrics["expectations.positive_amount.dropped"],
        metrics["expectations.known_country.quarantined"],
    ) == (
        "3",
        "2",
    )
    # the quarantine commit came first, with the task's idempotency id scoped to the quarantine
    q_commit, t_commit = Table.open(quarantine).history(1)[0], Table.open(uri).history(1)[0]
    assert q_commit["timestamp"] <= t_commit["timestamp"]
    app_id = f"{op.dag_id}.load@20240601T000000.000000Z"  # (the task's key and the run's date)
    version = int(dt.datetime(2024, 6, 1, tzinfo=dt.UTC).timestamp() * 1000)
    q_snap, t_snap = Table.open(quarantine).snapshot(), Table.open(uri).snapshot()
    assert q_snap.txn_version(app_id + "/quarantine") == version and q_snap.txn_version(app_id) is None
    assert t_snap.txn_version(app_id) == version and t_snap.txn_version(app_id + "/quarantine") is None
    again = op.execute(_context())  # a retry of the same run: both writes are found committed
    assert again["skipped"] and _ids(uri) == [1, 6] and len(Table.open(quarantine).snapshot().to_arrow()) == 2


def test_a_retry_after_only_the_quarantine_landed_loses_and_duplicates_nothing(
    spark: Any, tmp_path: Path
) -> None:
    uri, quarantine = str(tmp_path / "orders"), str(tmp_path / "orders_quarantine")
    op = TxnLogSparkWriteOperator(
        task_id="load", table_uri=uri, source=_source(ROWS), spark_conn_id=None,
        expectations=RULES, quarantine_table_uri=quarantine,
    )  # fmt: skip
    original = op._write

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("worker lost after the quarantine commit")

    op._write = crash  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        op.execute(_context())
    assert len(Table.open(quarantine).snapshot().to_arrow()) == 2  # the quarantine landed first
    op._write = original  # type: ignore[method-assign]
    op.execute(_context())
    assert _ids(uri) == [1, 6] and len(Table.open(quarantine).snapshot().to_arrow()) == 2


def test_a_fail_expectation_writes_nothing(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "orders")
    op = TxnLogSparkWriteOperator(
        task_id="load", table_uri=uri, source=_source(ROWS), spark_conn_id=None,
        expectations={"known_country": "country IN ('DE', 'FR')"},
    )  # fmt: skip
    with pytest.raises(ConstraintViolationError, match=r"expectation known_country .* violated by 2 rows"):
        op.execute(_context())
    assert not (tmp_path / "orders").exists()


def test_merge_checks_its_source(spark: Any, tmp_path: Path) -> None:
    uri, quarantine = str(tmp_path / "orders"), str(tmp_path / "orders_quarantine")
    TxnLogSparkWriteOperator(
        task_id="seed", table_uri=uri, source=_source(ROWS[:1]), spark_conn_id=None
    ).execute(_context(1))
    op = TxnLogSparkMergeOperator(
        task_id="upsert", table_uri=uri, source=_source(ROWS), on="t.id = s.id", spark_conn_id=None,
        when_matched_update="*", when_not_matched_insert="*",
        expectations=RULES, quarantine_table_uri=quarantine,
    )  # fmt: skip
    out = op.execute(_context(2))
    assert out["expectations"]["rules"]["positive_amount"]["rows"] == 3 and _ids(uri) == [1, 6]
    assert Table.open(uri).history(1)[0]["operationMetrics"]["expectations.known_country.quarantined"] == "2"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"expectations": {"r": ("x > 0", "ignore")}}, "action 'ignore' is not one of"),
        ({"expectations": {"r": "x > 0", "R": "x < 0"}}, "given twice"),
        ({"expectations": {"r": ""}}, "non-empty SQL string"),
        ({"expectations": {"r": ("x > 0", "quarantine")}}, "needs quarantine_table_uri"),
        ({"expectations": ["x > 0"]}, "must be a mapping"),
    ],
)
def test_bad_expectations_fail_when_the_dag_is_parsed(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogSparkWriteOperator(task_id="load", table_uri="t", source="SELECT 1", **kwargs)


def test_two_runs_creating_the_quarantine_table_at_once_both_land(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dated and a manual run at once (the deployment check does it): both find no quarantine table;
    the one that loses the race for its version 0 appends to the winner's table."""
    from airflow_txnlog.hooks.txnlog import TxnLogHook  # noqa: PLC0415

    uri, quarantine = str(tmp_path / "orders"), str(tmp_path / "orders_quarantine")
    real = TxnLogHook.create_table

    def create_then_lose_the_race(self: TxnLogHook, table_uri: str, **kwargs: Any) -> Table:
        deferred = real(self, table_uri, **kwargs)
        if table_uri == quarantine:  # the other run commits its version 0 first
            Table.create(table_uri, schema=kwargs["schema"])
        return deferred

    monkeypatch.setattr(TxnLogHook, "create_table", create_then_lose_the_race)
    op = TxnLogSparkWriteOperator(
        task_id="load", table_uri=uri, source=_source(ROWS), spark_conn_id=None,
        expectations=RULES, quarantine_table_uri=quarantine,
    )  # fmt: skip
    op.execute(_context())
    assert _ids(uri) == [1, 6] and len(Table.open(quarantine).snapshot().to_arrow()) == 2


def test_an_expectation_named_in_words_is_reported_by_that_name(spark: Any, tmp_path: Path) -> None:
    """Issue 38: a name is a label (reports, metrics, `_broken_rules`), never SQL: spaces are fine."""
    uri, quarantine = str(tmp_path / "orders"), str(tmp_path / "orders_quarantine")
    rules = {
        "amount is positive": ("amount > 0", "drop"),
        "known country (ISO)": ("country = 'DE'", "quarantine"),
    }
    out = TxnLogSparkWriteOperator(
        task_id="load", table_uri=uri, source=_source(ROWS), spark_conn_id=None,
        expectations=rules, quarantine_table_uri=quarantine,
    ).execute(_context())  # fmt: skip
    assert out["expectations"]["rules"]["amount is positive"] == {"action": "drop", "rows": 3}  # 2, 3, 5
    metrics = Table.open(uri).history(1)[0]["operationMetrics"]
    assert metrics["expectations.amount is positive.dropped"] == "3" and _ids(uri) == [1]
    broken = Table.open(quarantine).snapshot().to_arrow().column("_broken_rules").to_pylist()
    assert sorted(broken) == [["known country (ISO)"]] * 4  # ids 2, 4, 5, 6 (2: NULL amount, country FR)
