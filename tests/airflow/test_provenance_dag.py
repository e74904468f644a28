"""Issue 14 end to end with dag.test(): a plain @task's write is this run's own, and is restored.

The DAGs are in provenance_dags/; they run in a subprocess (its own AIRFLOW_HOME, SQLite DB and
AIRFLOW_CTX_* environment), which prints the dag run states as JSON on its last line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from tests.airflow.dag_subprocess import run_dags
from tests.conftest import SCHEMA, rows

pytestmark = [pytest.mark.airflow, pytest.mark.slow]
DAGS = Path(__file__).resolve().parent / "provenance_dags"


def _ids(uri: str) -> list[int]:
    return sorted(Table.open(uri).snapshot().to_arrow().column("id").to_pylist())


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("provenance")
    tables = {"restore": str(out / "orders"), "foreign": str(out / "foreign_orders")}
    for uri in tables.values():
        Table.create(uri, schema=SCHEMA).write(rows([1, 2, 3]))
    env = {"TXNLOG_PROVENANCE_TABLE": tables["restore"], "TXNLOG_PROVENANCE_FOREIGN_TABLE": tables["foreign"]}
    dag_ids = ["prov_restore", "prov_foreign", "prov_no_savepoint"]
    states, output = run_dags(out / "airflow_home", DAGS, dag_ids, env)
    return {"states": states, "output": output, **tables}


def test_a_plain_task_write_is_restored_by_the_callback(ran: dict[str, Any]) -> None:
    states = ran["states"]["prov_restore"]
    assert states["run"].endswith("failed") and states["quality_check"].endswith("failed")
    assert states["write_bad"].endswith("success") and states["savepoint"].endswith("success")
    assert _ids(ran["restore"]) == [1, 2, 3]  # the rows from before the run
    history = Table.open(ran["restore"]).history()
    ops = [h["operation"] for h in history]
    assert ops[:2] == ["RESTORE", "WRITE"]
    restore, write = history[0], history[1]
    owner = write["tags"]["owner"]
    assert owner.startswith("prov_restore/")
    assert write["job"]["jobId"] == "prov_restore" and write["job"]["jobName"] == "write_bad"
    assert write["job"]["triggerType"] == "airflow" and write["job"]["runId"] == "1"
    assert restore["job"]["jobName"] == "quality_check" and restore["tags"]["owner"] == owner
    assert f"as new version {restore['version']}" in ran["output"]


def test_a_foreign_commit_makes_the_callback_refuse_and_name_it(ran: dict[str, Any]) -> None:
    states = ran["states"]["prov_foreign"]
    assert states["run"].endswith("failed") and states["intruder"].endswith("success")
    assert _ids(ran["foreign"]) == [-2, -2, -1, -1, 1, 2, 3]  # not restored
    history = Table.open(ran["foreign"]).history()
    assert history[0]["operation"] == "WRITE" and history[0]["job"]["jobId"] == "intruder_dag"
    foreign_version = history[0]["version"]
    out = ran["output"]
    assert "NOT restoring" in out
    assert f"foreign version {foreign_version} of" in out and "'intruder_dag'" in out


def test_no_savepoint_in_the_run_is_logged_and_nothing_done(ran: dict[str, Any]) -> None:
    assert ran["states"]["prov_no_savepoint"]["run"].endswith("failed")
    assert "no savepoint of" in ran["output"] and "nothing to restore to" in ran["output"]
