"""XCom stays small whatever the tables' sizes (issue 41, item 3): a rewrite's paths go to a plan file
next to the history table and come back when its stage runs; partitions one rule skipped alike are
one skip (so one history row) per table, kind and rule."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa

from airflow_txnlog.engine import Table
from airflow_txnlog.operators import _maintenance_history as history
from airflow_txnlog.operators._maintenance_work import (
    data_cost,
    summarised,
    with_paths,
    without_paths,
    work_items,
)
from airflow_txnlog.operators.planned_maintenance import (
    ITEMS_KEY,
    TxnLogMaintenanceHistoryOperator,
    TxnLogMaintenancePlanOperator,
    TxnLogPlannedActionsOperator,
)

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
RUN = "manual__2026-11-29T12:00:00+00:00"


class _TaskInstance:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}
        self.returned: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value

    def xcom_pull(self, task_ids: Any, key: str = "return_value") -> Any:
        if key == ITEMS_KEY:
            return self.pushed[ITEMS_KEY]
        return [self.returned[t] for t in task_ids if t in self.returned]


def _context(ti: _TaskInstance) -> Any:
    return {"ti": ti, "run_id": RUN, "dag": SimpleNamespace(dag_id="maint")}


def _fragmented(path: Path) -> Table:
    t = Table.create(str(path), schema=SCHEMA, partition_by=["p"])
    for i in range(6):
        t.write(pa.table({"id": [i, i + 10], "p": ["x", "x"]}, schema=SCHEMA))
    return t


def _plan(tmp_path: Path, ti: _TaskInstance) -> tuple[Table, list[dict[str, Any]]]:
    t = _fragmented(tmp_path / "t")
    op = TxnLogMaintenancePlanOperator(
        task_id="plan", tables=[t.uri], settings={"quiet_minutes": 0, "min_input_files": 2},
        history_uri=str(tmp_path / "history"),
    )  # fmt: skip
    return t, op.execute(_context(ti))


def test_the_paths_go_to_a_plan_file_and_come_back_for_the_stage(tmp_path: Path) -> None:
    ti = _TaskInstance()
    t, (item,) = _plan(tmp_path, ti)
    (compact,) = [a for a in item["actions"] if a["kind"] == "compact"]
    assert "bins" not in compact and (compact["bin_count"], compact["file_count"]) == (1, 6)
    plan_file = tmp_path / "history" / item["plan_file"]["key"]
    (planned_bin,) = json.loads(plan_file.read_text())["paths"][compact["id"]]["bins"]
    assert set(planned_bin) == {f.path for f in t.snapshot().files()}
    stage = TxnLogPlannedActionsOperator(task_id="optimize", item=item, stage="optimize", dry_run=False)
    (done,) = stage.execute(_context(ti))
    assert (done["status"], done["result"]["actual"]["files_removed"]) == ("done", 6)
    assert len(Table.open(t.uri).snapshot().files()) == 1
    ti.returned["optimize"] = [done]
    hist = TxnLogMaintenanceHistoryOperator(
        task_id="history", history_uri=str(tmp_path / "history"), plan_task_id="plan",
        result_task_ids=["optimize"], dry_run=False,
    )  # fmt: skip
    hist.execute(_context(ti))
    assert not plan_file.exists() and not (tmp_path / "history" / "_plans").exists()
    rows = Table.open(str(tmp_path / "history")).snapshot().to_arrow().to_pylist()
    assert [r["status"] for r in rows if r["kind"] == "compact"] == ["done"]


def test_a_plan_file_that_is_gone_fails_the_rewrite_and_changes_nothing(tmp_path: Path) -> None:
    ti = _TaskInstance()
    t, (item,) = _plan(tmp_path, ti)
    (tmp_path / "history" / item["plan_file"]["key"]).unlink()
    version = t.latest_version()
    stage = TxnLogPlannedActionsOperator(task_id="optimize", item=item, stage="optimize", dry_run=False)
    (failed,) = stage.execute(_context(ti))
    assert failed["status"] == "failed" and "Help: plan again" in failed["error"]
    assert failed["error"].startswith("FilesMissingError") and t.latest_version() == version


def test_a_work_item_stays_under_64_kib_however_many_files_it_rewrites() -> None:
    paths = [f"p=x/part-{i:07d}-0123456789abcdef0123456789abcdef.parquet" for i in range(200_000)]
    bins = [paths[i : i + 1000] for i in range(0, len(paths), 1000)]
    plan = {
        "table": "s3://lake/big", "conn_id": None, "version": 9, "planned_at": 0,
        "actions": [
            {"kind": "compact", "partition": {"p": "x"}, "bins": bins, "files": paths,
             "cost": {"bytes_read": 10**12}, "benefit": {"files_removed": 199_800}},
            {"kind": "purge_deletion_vectors", "partition": {"p": "x"}, "files": paths[:50_000]},
        ],
        "skipped": [{"kind": "compact", "partition": {"p": str(n)}, "rule": "min_input_files",
                     "observed": n % 4, "threshold": 5, "reason": f"healthy: {n % 4} small files < 5"}
                    for n in range(50_000)],
    }  # fmt: skip
    (item,) = work_items([plan])
    slim, paths_of = without_paths(item)
    assert len(json.dumps(slim)) < 64 * 1024
    (skip,) = slim["skipped"]
    assert skip["partitions"] == 50_000 and skip["observed"] == {"min": 0, "max": 3}
    assert skip["reason"].startswith("50000 partitions skipped by rule min_input_files; e.g. partition")
    assert with_paths(slim["actions"][0], paths_of)["bins"] == bins
    assert with_paths(slim["actions"][1], paths_of)["files"] == paths[:50_000]
    assert slim["actions"][0]["file_count"] == 200_000 and slim["actions"][1]["file_count"] == 50_000


def test_partitions_skipped_alike_are_one_history_row_per_kind(tmp_path: Path) -> None:
    skips = [
        {"kind": "compact", "partition": {"p": str(n)}, "rule": "min_input_files", "observed": n,
         "threshold": 5, "reason": f"healthy: {n} small files < 5"} for n in range(3)
    ] + [
        {"kind": "compact", "partition": {"p": "q"}, "rule": "quiet_minutes", "observed": 1,
         "threshold": 60, "reason": "written 1 minutes ago"},
        {"kind": "checkpoint", "partition": None, "rule": "checkpoint_interval", "observed": 2,
         "threshold": 100, "reason": "2 commits since the newest checkpoint < 100"},
    ]  # fmt: skip
    out = summarised(skips)
    assert [(s["kind"], s["rule"], s.get("partitions")) for s in out] == [
        ("compact", "min_input_files", 3),
        ("compact", "quiet_minutes", None),  # (one partition: kept as it is)
        ("checkpoint", "checkpoint_interval", None),
    ]
    item = {"table": "/t", "asset_uri": "file:///t", "version": 1, "planned_at": 0, "error": None,
            "actions": [], "over_budget": [], "skipped": out}  # fmt: skip
    now = dt.datetime.now(dt.UTC)
    rows = history.history_rows([item], [], dag_id="d", run_id="r", dry_run=True, now=now)
    assert len(rows) == 3 and json.loads(rows[0]["observed"]) == {"min": 0, "max": 2}


def _compacted(op: TxnLogMaintenancePlanOperator, ti: _TaskInstance) -> list[str]:
    """The tables whose compaction the plan task kept within its budget."""
    op.execute(_context(ti))
    return [i["table"] for i in ti.pushed[ITEMS_KEY] if any(a["kind"] == "compact" for a in i["actions"])]


def test_the_plan_task_reads_who_waited_from_the_history(tmp_path: Path) -> None:
    """Two tables, a budget for one: the one the history says waited last run goes first."""
    ti = _TaskInstance()
    first, second = _fragmented(tmp_path / "a"), _fragmented(tmp_path / "b")
    op = TxnLogMaintenancePlanOperator(
        task_id="plan", tables=[first.uri, second.uri], history_uri=str(tmp_path / "history"),
        settings={"quiet_minutes": 0, "min_input_files": 2},
    )  # fmt: skip
    op.execute(_context(ti))
    costs = [data_cost(a) for i in ti.pushed[ITEMS_KEY] for a in i["actions"] if a["kind"] == "compact"]
    assert len(costs) == 2 and sum(costs) > max(costs)
    op.byte_budget = max(costs)  # room for one table's compaction, not two
    (taken,) = _compacted(op, ti)
    waiting = second.uri if taken == first.uri else first.uri
    earlier = {"dag_id": "maint", "run_id": "earlier", "recorded_at": dt.datetime.now(dt.UTC),
               "table_uri": f"file://{waiting}", "decision": "over_budget", "kind": "compact"}  # fmt: skip
    history.append_history(str(tmp_path / "history"), [earlier])
    assert _compacted(op, ti) == [waiting]


def test_two_dags_runs_of_the_same_run_id_keep_their_own_plan_files(tmp_path: Path) -> None:
    """Run ids repeat across DAGs (`scheduled__<date>`); a history table may serve several DAGs."""
    ti = _TaskInstance()
    _, (item,) = _plan(tmp_path, ti)
    other = {**_context(_TaskInstance()), "dag": SimpleNamespace(dag_id="other maintenance")}
    op = TxnLogMaintenancePlanOperator(
        task_id="plan", tables=[item["table"]], settings={"quiet_minutes": 0, "min_input_files": 2},
        history_uri=str(tmp_path / "history"),
    )  # fmt: skip
    (theirs,) = op.execute(other)
    mine, yours = (tmp_path / "history" / i["plan_file"]["key"] for i in (item, theirs))
    assert mine != yours and mine.exists() and yours.exists()
    ti.returned["optimize"] = []
    TxnLogMaintenanceHistoryOperator(
        task_id="history", history_uri=str(tmp_path / "history"), plan_task_id="plan",
        result_task_ids=["optimize"], fail_on_error=False,
    ).execute(_context(ti))  # fmt: skip
    assert not mine.exists() and yours.exists()  # (the history task of "maint" took only its own)
    second = TxnLogMaintenancePlanOperator(
        task_id="lake.plan", tables=[item["table"]], history_uri=str(tmp_path / "history"),
        settings={"quiet_minutes": 0, "min_input_files": 2},
    )  # fmt: skip
    (group_b,) = second.execute(_context(_TaskInstance()))  # (a second group of the same DAG and run)
    assert group_b["plan_file"]["key"] != item["plan_file"]["key"]
