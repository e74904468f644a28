"""Provenance: AIRFLOW_CTX_* or an explicit block -> commitInfo.job and the run's owner tag."""

from __future__ import annotations

import pytest

from airflow_txnlog.engine import ForeignCommitsError, InvalidArgumentError, Table
from airflow_txnlog.engine.write.provenance import (
    Provenance,
    current,
    job_provenance,
    provenance,
    run_owner_tag,
)
from tests.conftest import SCHEMA, rows

AIRFLOW_ENV = {
    "AIRFLOW_CTX_DAG_ID": "etl",
    "AIRFLOW_CTX_TASK_ID": "load",
    "AIRFLOW_CTX_DAG_RUN_ID": "manual__2026-01-01",
    "AIRFLOW_CTX_TRY_NUMBER": "2",
    "AIRFLOW_CTX_LOGICAL_DATE": "2026-01-01T00:00:00+00:00",
    "AIRFLOW_CTX_DAG_OWNER": "data-team",
}
JOB = {
    "jobId": "etl",
    "jobName": "load",
    "jobRunId": "manual__2026-01-01",
    "runId": "2",
    "jobOwnerId": "data-team",
    "triggerType": "airflow",
}


@pytest.fixture(autouse=True)
def no_airflow_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start every test outside Airflow, whatever ran in this process before."""
    import os  # noqa: PLC0415

    for key in [k for k in os.environ if k.startswith("AIRFLOW_CTX_")]:
        monkeypatch.delenv(key)


def _in_airflow(monkeypatch: pytest.MonkeyPatch, **changes: str) -> None:
    for key, value in {**AIRFLOW_ENV, **changes}.items():
        monkeypatch.setenv(key, value)


def test_every_commit_in_a_task_records_job_and_owner(
    monkeypatch: pytest.MonkeyPatch, table_uri: str
) -> None:
    _in_airflow(monkeypatch)
    t = Table.create(table_uri, schema=SCHEMA)
    t.write(rows([1, 2]))
    t.vacuum(dry_run=False)
    history = t.history()
    assert [h["operation"] for h in history][-2:] == ["WRITE", "CREATE TABLE"]
    assert {"VACUUM START", "VACUUM END"} <= {h["operation"] for h in history}
    for h in history:
        assert h["job"] == JOB, h["operation"]
        assert h["tags"] == {"owner": "etl/manual__2026-01-01"}
    assert all(isinstance(v, str) for v in history[0]["job"].values())


def test_no_airflow_no_provenance(table_uri: str) -> None:
    t = Table.create(table_uri, schema=SCHEMA)
    t.write(rows([1]))
    assert current() is None
    for h in t.history():
        assert "job" not in h and "tags" not in h


def test_the_env_needs_a_dag_and_a_run(monkeypatch: pytest.MonkeyPatch, table_uri: str) -> None:
    monkeypatch.setenv("AIRFLOW_CTX_TASK_ID", "load")  # a stray variable is not an Airflow task
    t = Table.create(table_uri, schema=SCHEMA)
    t.write(rows([1]))
    assert "job" not in t.history()[0]


def test_explicit_block_wins_over_the_env_and_ends_with_the_block(
    monkeypatch: pytest.MonkeyPatch, table_uri: str
) -> None:
    _in_airflow(monkeypatch)
    t = Table.create(table_uri, schema=SCHEMA)
    with provenance(dag_id="backfill", task_id="fix", run_id="r9", try_number=1, map_index=3) as p:
        assert p.owner_tag == run_owner_tag("backfill", "r9") == "backfill/r9"
        t.write(rows([1]))
    t.write(rows([2]))
    newest, inside = t.history()[:2]
    assert inside["job"] == {
        "jobId": "backfill",
        "jobName": "fix",
        "jobRunId": "r9",
        "runId": "1",
        "triggerType": "airflow",
        "taskMapIndex": "3",
    }
    assert inside["tags"] == {"owner": "backfill/r9"}
    assert newest["job"] == JOB  # back to the env once the block is over


def test_explicit_tags_win_over_the_provenance_owner(table_uri: str) -> None:
    t = Table.create(table_uri, schema=SCHEMA)
    t.default_tags = {"team": "a"}
    with provenance(dag_id="d", run_id="r"):
        t.write(rows([1]), tags={"owner": "someone-else"})
        t.write(rows([2]))
    newest, first = t.history()[:2]
    assert first["tags"] == {"owner": "someone-else", "team": "a"}
    assert newest["tags"] == {"owner": "d/r", "team": "a"} and newest["job"]["jobId"] == "d"


def test_unmapped_task_records_no_map_index(monkeypatch: pytest.MonkeyPatch, table_uri: str) -> None:
    _in_airflow(monkeypatch, AIRFLOW_CTX_MAP_INDEX="-1")
    t = Table.create(table_uri, schema=SCHEMA)
    assert "taskMapIndex" not in t.history()[0]["job"]
    monkeypatch.setenv("AIRFLOW_CTX_MAP_INDEX", "4")
    t.write(rows([1]))
    assert t.history()[0]["job"]["taskMapIndex"] == "4"


def test_restore_treats_every_task_of_the_run_as_its_own(table_uri: str) -> None:
    t = Table.create(table_uri, schema=SCHEMA)
    t.write(rows([1]))
    t.create_savepoint("sp")
    with provenance(dag_id="d", task_id="load", run_id="r", try_number=1):
        t.write(rows([2]))
    with provenance(dag_id="d", task_id="enrich", run_id="r", try_number=2):
        t.write(rows([3]))
    result = t.restore(savepoint="sp", owner=run_owner_tag("d", "r"))
    assert result.committed and result.foreign_versions == []
    assert t.snapshot().to_arrow().column("id").to_pylist() == [1]


def test_another_runs_commit_is_foreign(table_uri: str) -> None:
    t = Table.create(table_uri, schema=SCHEMA)
    t.create_savepoint("sp")
    with provenance(dag_id="d", task_id="load", run_id="r"):
        t.write(rows([1]))
    with provenance(dag_id="d", task_id="load", run_id="other-run"):
        foreign = t.write(rows([2]))
    with pytest.raises(ForeignCommitsError) as err:
        t.restore(savepoint="sp", owner=run_owner_tag("d", "r"))
    assert err.value.versions == [foreign]


@pytest.mark.parametrize("bad", [{"dag_id": ""}, {"run_id": None}, {"try_number": 1.5}, {"map_index": True}])
def test_bad_explicit_provenance_is_refused(bad: dict[str, object]) -> None:
    args: dict[str, object] = {"dag_id": "d", "run_id": "r", **bad}
    with pytest.raises(InvalidArgumentError, match="provenance"), provenance(**args):  # type: ignore[arg-type]
        pass


def test_job_provenance_reads_back_what_a_commit_recorded(
    monkeypatch: pytest.MonkeyPatch, table_uri: str
) -> None:
    _in_airflow(monkeypatch, AIRFLOW_CTX_MAP_INDEX="3")
    t = Table.create(table_uri, schema=SCHEMA)
    job = t.history()[0]["job"]
    back = job_provenance(job, airflow_only=True)
    assert back == Provenance(
        dag_id="etl",
        run_id="manual__2026-01-01",
        task_id="load",
        try_number="2",
        map_index="3",
        dag_owner="data-team",
    )
    assert back.job() == job


@pytest.mark.parametrize(
    "job",
    [
        None,
        "etl",
        ["etl"],
        {},
        {"jobId": "etl"},  # no run
        {"jobRunId": "r1"},  # no DAG
        {"jobId": 7, "jobRunId": "r1"},  # a writer can put anything there
        {"jobId": "", "jobRunId": "r1"},
    ],
)
def test_job_provenance_is_none_for_a_job_naming_no_dag_run(job: object) -> None:
    assert job_provenance(job) is None


def test_job_provenance_keeps_only_string_fields_and_can_ask_for_airflow() -> None:
    databricks = {"jobId": "123", "jobRunId": "456", "jobName": {"x": 1}, "triggerType": "manual"}
    got = job_provenance(databricks)
    assert got is not None and (got.dag_id, got.run_id, got.task_id) == ("123", "456", None)
    assert job_provenance(databricks, airflow_only=True) is None
