"""`TxnLogConstraintsOperator` (issue 26): ADD / DROP CONSTRAINT as a task, safe to retry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import ConstraintViolationError, InvalidArgumentError, Table
from airflow_txnlog.operators.constraints import TxnLogConstraintsOperator
from tests.conftest import SCHEMA, rows

CONTEXT: Any = {}  # no asset event by default: nothing is read from the context


@pytest.fixture
def table(tmp_path: Path) -> str:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1, 2]))
    return str(tmp_path / "t")


def test_adds_and_drops_and_a_retry_commits_nothing_more(table: str) -> None:
    op = TxnLogConstraintsOperator(
        task_id="c", table_uri=table, add={"positive": "value > 0", "small": "id < 10"}
    )
    assert op.execute(CONTEXT) == {
        "versions": [2, 3],
        "constraints": {"positive": "value > 0", "small": "id < 10"},
    }
    assert op.execute(CONTEXT) == {
        "versions": [],
        "constraints": {"positive": "value > 0", "small": "id < 10"},
    }
    with pytest.raises(ConstraintViolationError):
        Table.open(table).write(rows([11]))
    drop = TxnLogConstraintsOperator(task_id="d", table_uri=table, drop=["SMALL", "never_there"])
    assert drop.execute(CONTEXT) == {"versions": [4], "constraints": {"positive": "value > 0"}}
    assert Table.open(table).write(rows([11])) == 5


def test_a_changed_expression_under_an_existing_name_is_refused(table: str) -> None:
    TxnLogConstraintsOperator(task_id="c", table_uri=table, add={"positive": "value > 0"}).execute(CONTEXT)
    with pytest.raises(InvalidArgumentError, match="already exists"):
        TxnLogConstraintsOperator(task_id="c", table_uri=table, add={"positive": "value > 1"}).execute(
            CONTEXT
        )


def test_existing_rows_that_break_it_fail_the_task(table: str) -> None:
    op = TxnLogConstraintsOperator(task_id="c", table_uri=table, add={"big": "id > 1"})
    with pytest.raises(ConstraintViolationError, match="1 existing row breaks it"):
        op.execute(CONTEXT)
    assert Table.open(table).constraints() == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give constraints to add or drop"),
        ({"drop": "positive"}, "drop must be a list"),
        ({"add": {"p": 1}}, "add must be a mapping of str to str"),
    ],
)
def test_bad_arguments_fail_when_the_dag_is_parsed(table: str, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogConstraintsOperator(task_id="c", table_uri=table, **kwargs)
