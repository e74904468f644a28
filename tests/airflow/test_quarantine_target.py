"""A quarantine table is never the table a task writes (issue 38: the good rows were lost).

Refused when the DAG is parsed for every spelling of one location (trailing slash, `file://`, `./`,
`..`), and at the start of `execute`, before a Spark session or any write, for what only the
connection can tell (a relative URI under its base location, an absolute one) or only the table can
(two paths to one table: the same table id). Each refusal leaves the target's log as it was and
creates no quarantine table. The quarantine commit's idempotency id is scoped apart from the write's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.assets import table_location
from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.operators import _expectations
from airflow_txnlog.operators.spark import TxnLogSparkMergeOperator, TxnLogSparkWriteOperator
from tests.airflow.spark_operators import plain_context
from tests.conftest import SCHEMA

pytestmark = pytest.mark.airflow
RULES = {"known": ("part = 'a'", "quarantine")}


def _write(table_uri: str, quarantine: str, **kwargs: Any) -> TxnLogSparkWriteOperator:
    return TxnLogSparkWriteOperator(
        task_id="load", table_uri=table_uri, source="SELECT 1 AS id", spark_conn_id=None,
        expectations=RULES, quarantine_table_uri=quarantine, **kwargs,
    )  # fmt: skip


@pytest.mark.parametrize(
    "spelling",
    [
        lambda p: p,
        lambda p: p + "/",
        lambda p: "file://" + p,
        lambda p: "file://" + p + "/",
        lambda p: p + "/../" + os.path.basename(p),
        lambda p: os.path.dirname(p) + "/./" + os.path.basename(p),
        lambda p: os.path.dirname(p) + "//" + os.path.basename(p),
    ],
)
def test_the_same_location_is_refused_when_the_dag_is_parsed(tmp_path: Path, spelling: Any) -> None:
    target = str(tmp_path / "orders")
    with pytest.raises(InvalidArgumentError, match="is the table this task writes"):
        _write(target, spelling(target))


def test_relative_spellings_and_the_merge_operator_are_refused_too() -> None:
    with pytest.raises(InvalidArgumentError, match="is the table this task writes"):
        _write("lake/orders", "./lake/orders/")
    with pytest.raises(InvalidArgumentError, match="is the table this task writes"):
        TxnLogSparkMergeOperator(
            task_id="m", table_uri="s3://lake/orders", on="t.id = s.id", source="SELECT 1 AS id",
            when_not_matched_insert="*", expectations=RULES, quarantine_table_uri="s3a://lake//orders/",
        )  # fmt: skip


def test_other_tables_and_templated_uris_are_accepted(tmp_path: Path) -> None:
    _write(str(tmp_path / "orders"), str(tmp_path / "orders_quarantine"))
    _write(str(tmp_path / "orders"), str(tmp_path / "orders" / "quarantine"))  # (a table of its own)
    _write("{{ params.table }}", str(tmp_path / "orders"))  # (checked at execute)
    assert table_location("s3://b/a/../t/") == table_location("s3a://b//t") == "s3://b/t"


def _refused_at_execute(op: TxnLogSparkWriteOperator | TxnLogSparkMergeOperator, target: Path) -> None:
    before = sorted(p.name for p in (target / "_delta_log").iterdir())
    with pytest.raises(InvalidArgumentError, match="is the table this task writes"):
        op.execute(plain_context(1))  # (before a Spark session: spark_conn_id=None would start one)
    assert sorted(p.name for p in (target / "_delta_log").iterdir()) == before
    assert Table.open(str(target)).latest_version() == 0


def test_a_relative_uri_under_the_connection_is_refused_at_execute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the connection knows that `orders` under its base location is `<base>/orders`."""
    target = tmp_path / "orders"
    Table.create(str(target), schema=SCHEMA)
    conn = {"conn_type": "txnlog", "host": str(tmp_path)}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps(conn))
    op = _write(str(target), "orders", txnlog_conn_id="lake")  # (accepted when parsed)
    _refused_at_execute(op, target)
    merge = TxnLogSparkMergeOperator(
        task_id="m", table_uri="orders/", on="t.id = s.id", source="SELECT 1 AS id", spark_conn_id=None,
        when_not_matched_insert="*", expectations=RULES, quarantine_table_uri=f"file://{target}",
        txnlog_conn_id="lake",
    )  # fmt: skip
    _refused_at_execute(merge, target)
    assert not (tmp_path / "orders_quarantine").exists()


def test_two_paths_to_one_table_are_refused_by_its_id(tmp_path: Path) -> None:
    target = tmp_path / "orders"
    Table.create(str(target), schema=SCHEMA)
    (tmp_path / "alias").symlink_to(target, target_is_directory=True)
    _refused_at_execute(_write(str(target), str(tmp_path / "alias")), target)


def test_the_quarantine_commit_has_an_id_of_its_own() -> None:
    """The write's and the quarantine's commits can never be taken for each other: the quarantine's id
    is scoped (an id found in one table says nothing about the other commit)."""
    txn = ("orders_dag.load@20240601T000000.000000Z", 1717200000000)
    scoped = _expectations.quarantine_txn(txn)
    assert scoped[0] != txn[0] and scoped[0].startswith(txn[0]) and scoped[1] == txn[1]


@pytest.mark.parametrize("name", ["has an id", "montant > 0 (€)", "x"])
def test_expectation_names_are_free_text(name: str) -> None:
    """A name is a label in reports and metrics, never parsed: any non-empty text is a name."""
    op = TxnLogSparkWriteOperator(
        task_id="load", table_uri="t", source="SELECT 1", expectations={name: "id IS NOT NULL"}
    )
    assert list(op.expectations) == [name]


@pytest.mark.parametrize(
    ("expectations", "message"),
    [
        ({"": "x > 0"}, "non-empty strings"),
        ({"  ": "x > 0"}, "non-empty strings"),
        ({"Rule": "x > 0", "rule": "x < 9"}, "given twice"),
    ],
)
def test_bad_expectation_names_say_what_is_wrong(expectations: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogSparkWriteOperator(task_id="load", table_uri="t", source="SELECT 1", expectations=expectations)
