"""TxnLogPublishOperator: which publications emit the table's asset event (no Spark, no DB).

Runs `execute` with a plain dict context (as tests/airflow/test_asset_events.py does); "no event"
means the table's asset left the task instance's outlets.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_txnlog.assets import table_asset
from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.engine.write.provenance import provenance
from airflow_txnlog.operators.publish import TxnLogPublishOperator
from tests.conftest import SCHEMA, rows

pytestmark = pytest.mark.airflow
RUN = "manual__2024-06-01"


def _context(run_id: str = RUN) -> dict[str, Any]:
    return {
        "dag": SimpleNamespace(dag_id="orders_dag"),
        "run_id": run_id,
        "outlet_events": defaultdict(lambda: SimpleNamespace(extra=None)),
    }


@pytest.fixture
def uri(tmp_path: Path) -> str:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1, 2, 3]))  # version 1
    t.write(rows([4]))  # version 2
    return str(tmp_path / "t")


def _publish(uri: str, version: object, run_id: str = RUN) -> tuple[TxnLogPublishOperator, dict[str, Any]]:
    op = TxnLogPublishOperator(task_id="publish", table_uri=uri, version=version)  # type: ignore[arg-type]
    context = _context(run_id)
    with provenance(dag_id="orders_dag", task_id="publish", run_id=run_id):
        assert op.execute(context) == Table.open(uri).publication().version  # type: ignore[union-attr]
    return op, context


def test_publishing_emits_the_version_and_the_figures_since_the_last_publication(uri: str) -> None:
    _, context = _publish(uri, "1")  # a rendered XCom is text
    extra = context["outlet_events"][table_asset(uri)].extra
    assert (extra["version"], extra["previous_version"], extra["operation"]) == (1, None, "PUBLISH")
    assert (extra["num_added_rows"], extra["channel"], extra["task_id"]) == (3, "published", "publish")
    _, later = _publish(uri, 2, run_id="scheduled__2024-06-02")
    extra = later["outlet_events"][table_asset(uri)].extra
    assert (extra["version"], extra["previous_version"], extra["num_added_rows"]) == (2, 1, 1)


def test_a_retry_of_the_publishing_run_emits_again(uri: str) -> None:
    _publish(uri, 2)  # try 1 published, then (say) its worker died before the event was recorded
    op, context = _publish(uri, 2)  # try 2 of the same run
    assert table_asset(uri) in op.outlets
    assert context["outlet_events"][table_asset(uri)].extra["version"] == 2


def test_a_version_another_run_published_emits_nothing(uri: str) -> None:
    _publish(uri, 2, run_id="other_run")
    op, context = _publish(uri, 2)
    assert table_asset(uri) not in op.outlets
    assert context["outlet_events"][table_asset(uri)].extra is None


@pytest.mark.parametrize("version", ["None", "two", 2.5])
def test_a_version_that_is_not_an_integer_publishes_nothing(uri: str, version: object) -> None:
    op = TxnLogPublishOperator(task_id="publish", table_uri=uri, version=version)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="integer table version"):
        op.execute(_context())
    assert Table.open(uri).publication() is None


def test_a_bad_channel_publishes_nothing(uri: str) -> None:
    op = TxnLogPublishOperator(task_id="publish", table_uri=uri, version=1, channel="a/b")
    with pytest.raises(InvalidArgumentError, match="invalid publication channel"):
        op.execute(_context())
    assert not (Path(uri) / "_published").exists()
