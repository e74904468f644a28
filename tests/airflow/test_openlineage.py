"""OpenLineage events of the txnlog operators, captured with OpenLineage's file transport.

The DAGs (lineage_dags/) run with dag.test() in a subprocess with its own AIRFLOW_HOME and an
`[openlineage] transport` of type file: the provider reads its configuration once per process, and
every other test keeps OpenLineage off (no transport configured means disabled). Each event is one
JSON line; the checks compare the datasets with the table's own log, read back here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from tests.airflow.dag_subprocess import run_dag_script
from tests.conftest import SCHEMA, rows

pytestmark = [pytest.mark.airflow, pytest.mark.slow]
DAGS = Path(__file__).resolve().parent / "lineage_dags"
RUNNER = """
import datetime as dt, json, sys
from airflow.utils.db import initdb
initdb()
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={dags!r})
assert not bag.import_errors, bag.import_errors
states = []
for dag_id in sys.argv[1:]:
    run = bag.dags[dag_id].test(logical_date=dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))
    tis = {{ti.task_id: str(ti.state) for ti in run.get_task_instances()}}
    states.append({{**tis, "run": str(run.state)}})
from tests.airflow.dag_subprocess import emit_result
emit_result(states)
"""


def run_dags(out: Path, dag_ids: list[str], extra_env: dict[str, str]) -> tuple[list[Any], list[Any]]:
    """Run the DAGs in order (same logical date) with OpenLineage on; (states, events) back."""
    events_file = out / "events.jsonl"
    env = {
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "txnlog_test",
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(events_file), "append": True}
        ),
        **extra_env,
    }
    script = RUNNER.format(dags=str(DAGS))
    states, _ = run_dag_script(out / "airflow_home", DAGS, script, env, args=dag_ids, timeout=900)
    events = [json.loads(line) for line in events_file.read_text().splitlines() if line.strip()]
    return states, events


def task_events(events: list[Any], job: str, event_type: str) -> list[dict[str, Any]]:
    return [e for e in events if e["job"]["name"] == job and e["eventType"] == event_type]


def version_of(dataset: dict[str, Any]) -> int:
    return int(dataset["facets"]["version"]["datasetVersion"])


def schema_of(dataset: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["name"], f["type"]) for f in dataset["facets"]["schema"]["fields"]]


@pytest.fixture(scope="module")
def engine_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("lineage_engine")
    lake = out / "lake"
    table = lake / "sales" / "orders"
    Table.create(str(table), schema=SCHEMA).write(rows([1, 2, 3]))  # versions 0, 1
    conn = json.dumps({"conn_type": "txnlog", "host": str(lake)})
    states, events = run_dags(out, ["ol_engine"], {"AIRFLOW_CONN_TXNLOG_LAKE": conn})
    return {"states": states[0], "events": events, "table": str(table)}


def test_engine_tasks_ran(engine_run: dict[str, Any]) -> None:
    states = engine_run["states"]
    assert all(state.endswith("success") for state in states.values()), states
    for task_id in ("savepoint", "restore", "restore_again", "health"):  # one START each, named only
        (start,) = task_events(engine_run["events"], f"ol_engine.{task_id}", "START")
        assert [d["name"] for d in start["inputs"]] == [os.path.abspath(engine_run["table"])]
        assert start["inputs"][0].get("facets") == {} and start["outputs"] == []


def test_a_restore_reports_its_commit_as_output_and_what_it_read_as_input(engine_run: dict[str, Any]) -> None:
    events, table = engine_run["events"], engine_run["table"]
    start = task_events(events, "ol_engine.restore", "START")
    (complete,) = task_events(events, "ol_engine.restore", "COMPLETE")
    assert len(start) == 1
    assert [(d["namespace"], d["name"]) for d in start[0]["inputs"]] == [("file", os.path.abspath(table))]
    restore = next(h for h in Table.open(table).history() if h["operation"] == "RESTORE")
    (output,) = complete["outputs"]
    (read,) = complete["inputs"]
    # The relative table URI resolved against the connection's host: an absolute local path.
    assert (output["namespace"], output["name"]) == ("file", os.path.abspath(table))
    assert (read["namespace"], read["name"]) == ("file", os.path.abspath(table))
    assert version_of(output) == restore["version"]
    assert version_of(read) == restore["readVersion"] == restore["version"] - 1  # the @task's write
    assert schema_of(output) == [("id", "long"), ("value", "double"), ("part", "string")]
    assert output["facets"]["storage"]["storageLayer"] == "delta"
    stats = output["outputFacets"]["outputStatistics"]
    metrics = restore["operationMetrics"]
    assert stats["fileCount"] == int(metrics["numRestoredFiles"]) >= 1  # the files the overwrite removed
    assert stats["size"] == int(metrics["restoredFilesSize"]) > 0
    assert "rowCount" not in stats or stats["rowCount"] is None  # a restore's metrics count no rows


def test_tasks_that_commit_nothing_report_the_table_as_input_only(engine_run: dict[str, Any]) -> None:
    events, table = engine_run["events"], engine_run["table"]
    restore_version = next(h["version"] for h in Table.open(table).history() if h["operation"] == "RESTORE")
    expected = {"ol_engine.savepoint": 1, "ol_engine.restore_again": restore_version}
    expected["ol_engine.health"] = restore_version
    for job, version in expected.items():
        (complete,) = task_events(events, job, "COMPLETE")
        assert complete["outputs"] == [], job
        (read,) = complete["inputs"]
        assert (read["name"], version_of(read)) == (os.path.abspath(table), version), job
        assert schema_of(read)[0] == ("id", "long")
    assert Table.open(table).latest_version() == restore_version  # restore_again committed nothing


@pytest.mark.spark
def test_a_spark_write_and_its_idempotent_rerun(tmp_path_factory: pytest.TempPathFactory) -> None:
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    out = tmp_path_factory.mktemp("lineage_spark")
    table, source = out / "events", out / "source"
    source.mkdir()
    pq.write_table(pa.table({"id": [1, 2, 3], "part": ["a", "a", "b"]}), source / "part-0.parquet")
    env = {
        "TXNLOG_LINEAGE_SPARK_TABLE": str(table),
        "TXNLOG_LINEAGE_SOURCE": str(source),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    states, events = run_dags(out, ["ol_spark", "ol_spark"], env)  # the same logical date twice
    assert all(s["run"].endswith("success") and s["append"].endswith("success") for s in states), states
    first, rerun = task_events(events, "ol_spark.append", "COMPLETE")
    write = next(h for h in Table.open(str(table)).history() if h["operation"] == "WRITE")
    assert Table.open(str(table)).latest_version() == write["version"]  # the re-run wrote nothing

    (output,) = first["outputs"]
    assert (output["namespace"], output["name"]) == ("file", str(table))
    assert version_of(output) == write["version"]
    assert schema_of(output) == [("id", "long"), ("part", "string")]
    stats, metrics = output["outputFacets"]["outputStatistics"], write["operationMetrics"]
    assert stats["rowCount"] == int(metrics["numOutputRows"]) == 3
    assert stats["size"] == int(metrics["numOutputBytes"])
    assert stats["fileCount"] == int(metrics["numFiles"])
    # The write created the table (version 0, one commit, as Delta's first write to a new path): it
    # read no version of it, so the table is an output only.
    inputs = {d["name"]: d for d in first["inputs"]}
    assert set(inputs) == {str(source)} and write["version"] == 0 and "readVersion" not in write
    assert "version" not in inputs[str(source)].get("facets", {})  # a source path: named only

    assert rerun["outputs"] == []  # the idempotent skip committed nothing
    rerun_inputs = {d["name"]: version_of(d) for d in rerun["inputs"] if d["name"] == str(table)}
    assert rerun_inputs == {str(table): write["version"]}
    assert len(task_events(events, "ol_spark.append", "START")) == 2
