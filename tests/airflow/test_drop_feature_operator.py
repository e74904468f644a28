"""`TxnLogDropFeatureOperator`: DROP FEATURE as a task; a retry (the feature gone) commits nothing, a
name that is no table feature fails before the table is touched, a refusal writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_txnlog.engine import InvalidArgumentError, Table, UnsupportedFeatureError
from airflow_txnlog.operators.drop_feature import TxnLogDropFeatureOperator

CONTEXT: Any = {}  # no asset event by default: nothing is read from the context
SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def ict_table(tmp_path: Path) -> str:
    uri = str(tmp_path / "t")
    Table.create(uri, schema=SCHEMA, properties={"delta.enableInCommitTimestamps": "true"})
    return uri


def test_drops_the_feature_and_a_retry_commits_nothing(ict_table: str) -> None:
    op = TxnLogDropFeatureOperator(task_id="d", table_uri=ict_table, feature="inCommitTimestamp")
    assert op.execute(CONTEXT) == {
        "feature": "inCommitTimestamp", "version": 2, "commits": [1, 2], "protected_before": None,
    }  # fmt: skip
    assert op.execute(CONTEXT)["version"] is None
    assert Table.open(ict_table).latest_version() == 2
    write_deltalake(ict_table, pa.table({"id": [1]}, schema=SCHEMA), mode="append")  # delta-rs writes it now
    assert Table.open(ict_table).latest_version() == 3


def test_a_name_that_is_no_feature_fails_before_the_table_is_touched(ict_table: str) -> None:
    op = TxnLogDropFeatureOperator(task_id="d", table_uri=ict_table, feature="inCommitTimestamps")
    with pytest.raises(InvalidArgumentError, match="nor a Delta table feature this engine knows"):
        op.execute(CONTEXT)
    assert Table.open(ict_table).latest_version() == 0


def test_a_feature_delta_cannot_drop_fails_the_task_and_writes_nothing(ict_table: str) -> None:
    Table.open(ict_table).set_properties({"delta.appendOnly": "true"})
    op = TxnLogDropFeatureOperator(task_id="d", table_uri=ict_table, feature="appendOnly")
    with pytest.raises(UnsupportedFeatureError, match="cannot be dropped"):
        op.execute(CONTEXT)
    assert Table.open(ict_table).latest_version() == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"feature": ""}, "feature must be"), ({"feature": "x", "truncate_history": "yes"}, "truncate_history")],
)
def test_bad_arguments_fail_at_parse_time(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogDropFeatureOperator(task_id="d", table_uri=str(tmp_path / "t"), **kwargs)
