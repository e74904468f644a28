"""Planned maintenance's optimize stage sends big rewrites to Spark (issue 41, item 1): with
`spark_conn_id`, an action reading `spark_min_bytes` or more is written by Spark (the engine's own
writer, which would hold the rows in the task's process, is made to fail) and committed by the
engine; smaller ones, dry runs and the other stages stay in the task's process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from airflow.sdk import DAG

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.engine.maintenance import rewrite_run
from airflow_txnlog.operators import _spark_session
from airflow_txnlog.operators._maintenance_work import bytes_read, work_items
from airflow_txnlog.operators.planned_maintenance import TxnLogPlannedActionsOperator, planned_maintenance
from airflow_txnlog.spark.maintenance import planned

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _item(tmp_path: Path) -> tuple[Table, dict[str, Any]]:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["p"])
    for i in range(6):
        t.write(pa.table({"id": list(range(i * 10, i * 10 + 10)), "p": ["x"] * 10}, schema=SCHEMA))
    plan = t.plan_maintenance(quiet_minutes=0, min_input_files=2, checkpoint_interval=3).to_dict()
    (item,) = work_items([{**plan, "conn_id": None}])
    return t, item


def _forbid(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    def forbidden(*args: Any) -> Any:
        raise AssertionError(f"{module.__name__}.{name} was used")

    monkeypatch.setattr(module, name, forbidden)


def _optimize(item: dict[str, Any], **routing: Any) -> list[dict[str, Any]]:
    op = TxnLogPlannedActionsOperator(task_id="optimize", item=item, stage="optimize", **routing)
    return op.execute({})  # type: ignore[arg-type]


def test_a_rewrite_over_the_threshold_is_written_by_spark(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t, item = _item(tmp_path)
    _forbid(monkeypatch, rewrite_run, "engine_writer")  # (the rows never come to this process)
    (result,) = _optimize(item, dry_run=False, spark_conn_id="spark_default", spark_min_bytes=0)
    assert (result["kind"], result["status"], result["runner"]) == ("compact", "done", "spark")
    assert result["result"]["actual"]["files_removed"] == 6
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == list(range(60))


def test_a_rewrite_under_the_threshold_runs_in_the_task(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t, item = _item(tmp_path)
    (action,) = [a for a in item["actions"] if a["kind"] == "compact"]
    _forbid(monkeypatch, planned, "spark_writer")
    results = _optimize(
        item, dry_run=False, spark_conn_id="spark_default", spark_min_bytes=bytes_read(action) + 1
    )
    assert [(r["runner"], r["status"]) for r in results] == [("engine", "done")]
    assert len(t.snapshot().files()) == 1


def test_a_dry_run_never_starts_spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t, item = _item(tmp_path)

    _forbid(monkeypatch, _spark_session, "spark_session")
    (result,) = _optimize(item, spark_conn_id="spark_default", spark_min_bytes=0)  # (dry run)
    assert (result["status"], result["runner"]) == ("dry_run", "spark")
    assert result["result"]["bins_run"] == 1 and t.latest_version() == 6


@pytest.mark.parametrize(
    ("routing", "message"),
    [
        ({"spark_min_bytes": -1}, "spark_min_bytes must be an int >= 0"),
        ({"spark_min_bytes": "1GB"}, "spark_min_bytes must be an int >= 0"),
        ({"spark_conn_id": ""}, "spark_conn_id must be a connection id or None"),
    ],
)
def test_bad_routing_is_refused_when_the_dag_is_built(routing: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        TxnLogPlannedActionsOperator(task_id="optimize", item={}, stage="optimize", **routing)


def test_only_the_optimize_stage_is_routed() -> None:
    with DAG("routed", schedule=None) as dag:
        planned_maintenance(history_uri="/h", tables=["/t"], spark_conn_id="cluster", spark_min_bytes=7)
    routed = {
        t.task_id: (t.spark_conn_id, t.spark_min_bytes)
        for t in dag.tasks
        if isinstance(t, TxnLogPlannedActionsOperator)
    }
    assert routed == {
        "maintain.checkpoint": (None, 0),
        "maintain.optimize": ("cluster", 7),
        "maintain.vacuum": (None, 0),
        "maintain.cleanup_log": (None, 0),
    }
