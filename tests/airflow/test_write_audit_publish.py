"""Write-audit-publish with dag.test(): downstream hears only of audited versions.

The DAGs are in wap_dags/ (the guarded example's shape, with engine writes so no Spark is needed);
they run in a subprocess (own AIRFLOW_HOME and SQLite DB) that prints, as JSON on its last line, each
run's task states, the table's asset events, and the runs Airflow queued for the downstream DAG
(`AssetDagRunQueue`: what the scheduler turns into downstream runs) after each upstream run.
The real scheduler's side (downstream runs started by those events) is in the deployment check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from tests.airflow.dag_subprocess import run_dag_script
from tests.conftest import SCHEMA, rows

pytestmark = [pytest.mark.airflow, pytest.mark.slow]
DAGS = Path(__file__).resolve().parent / "wap_dags"
RUNNER = """
import json
from airflow.utils.db import initdb
initdb()
from airflow.dag_processing.dagbag import DagBag
from airflow.models.asset import AssetDagRunQueue, AssetEvent
from airflow.utils.session import create_session
bag = DagBag(dag_folder={dags!r})
assert not bag.import_errors, bag.import_errors
out = []
for conf in ({{"bad": False}}, {{"bad": True}}, {{"bad": False}}):
    run = bag.dags["wap_guarded"].test(run_conf=conf)
    with create_session() as session:
        queued = session.query(AssetDagRunQueue).filter_by(target_dag_id="wap_downstream").count()
        session.query(AssetDagRunQueue).delete()  # as the scheduler does when it starts the run
        events = [e.extra for e in session.query(AssetEvent).order_by(AssetEvent.id)]
    tis = {{ti.task_id: str(ti.state) for ti in run.get_task_instances()}}
    out.append({{"conf": conf, "run": str(run.state), "tasks": tis, "queued": queued, "events": events}})
from tests.airflow.dag_subprocess import emit_result
emit_result(out)
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("wap")
    uri = str(out / "orders")
    Table.create(uri, schema=SCHEMA).write(rows([1, 2, 3]))
    env = {"AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False", "TXNLOG_WAP_TABLE": uri}
    runs, output = run_dag_script(out / "airflow_home", DAGS, RUNNER.format(dags=str(DAGS)), env)
    return {"runs": runs, "uri": uri, "output": output}


def _ops(uri: str) -> list[tuple[int, str]]:
    return [(h["version"], h["operation"]) for h in reversed(Table.open(uri).history())]


def test_good_runs_publish_the_audited_version_and_tell_downstream(ran: dict[str, Any]) -> None:
    good, _, again = ran["runs"]
    assert good["run"].endswith("success") and good["tasks"]["publish"].endswith("success")
    assert good["tasks"]["restore"].endswith("skipped")
    assert good["queued"] == 1  # the scheduler would start one downstream run
    (event,) = good["events"]
    assert event["operation"] == "PUBLISH" and event["channel"] == "published"
    assert (event["version"], event["previous_version"]) == (2, None)
    # A first publication sums every commit up to it: v1 (3 rows) and v2 (2 rows).
    assert (event["num_added_rows"], event["num_added_files"]) == (5, 2)
    assert (event["dag_id"], event["task_id"]) == ("wap_guarded", "publish")
    assert again["queued"] == 1 and again["events"][-1]["operation"] == "PUBLISH"


def test_a_failed_audit_publishes_nothing_and_downstream_never_hears_of_it(ran: dict[str, Any]) -> None:
    uri = ran["uri"]
    good, bad, again = ran["runs"]
    assert bad["run"].endswith("failed") and bad["tasks"]["audit"].endswith("failed")
    assert bad["tasks"]["publish"].endswith("upstream_failed")
    assert bad["queued"] == 0  # no downstream run for the bad version
    assert bad["events"] == good["events"]  # not one new event: the write, audit and restore emit none
    history = _ops(uri)
    bad_version = 3
    assert history[bad_version] == (3, "WRITE") and history[bad_version + 1] == (4, "RESTORE")
    assert Table.open(uri).snapshot(bad_version).to_arrow(filter="id < 0").num_rows == 2
    every_named = {e["version"] for e in again["events"]}
    assert bad_version not in every_named
    # Readers following the channel read the audited versions only, then the next audited one.
    assert every_named == {2, 5} and Table.open(uri).publication().version == 5  # type: ignore[union-attr]
    assert Table.open(uri).published_snapshot().to_arrow(filter="id < 0").num_rows == 0
    (last,) = [e for e in again["events"] if e["version"] == 5]
    assert last["previous_version"] == 2  # the figures sum the commits since the last publication
    # v3 (bad write) adds a file, v4 (restore) removes it, v5 adds one; the restore reports no row
    # counts, so the summed rows are left out rather than guessed.
    assert (last["num_added_files"], last["num_removed_files"]) == (2, 1)
    assert "num_added_rows" not in last
