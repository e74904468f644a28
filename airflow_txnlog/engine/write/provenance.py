"""Provenance: which DAG, task, run and try made a commit, recorded without the caller passing anything.

Sources, first match wins:
1. an explicit `with provenance(dag_id=..., task_id=..., run_id=...)` block (a contextvar, so it
   follows asyncio tasks and never leaks into other threads' contexts);
2. the `AIRFLOW_CTX_*` environment variables Airflow 3's task runner exports before `execute`
   (`context_to_airflow_vars`; `dag.test()` runs the same code, so they are set there too).
   `AIRFLOW_CTX_MAP_INDEX` is read when a deployment exports it (Airflow's
   `get_airflow_context_vars` local-settings hook: return {"map_index": ...}).
3. nothing: a commit made outside Airflow records no provenance.

What a commit gets (`commit_fields`):
- `commitInfo.job`, the shape Delta on Databricks writes (`jobId`, `jobName`, `jobRunId`, `runId`,
  `jobOwnerId`, `triggerType`), all values strings; plus `taskMapIndex` for a mapped task;
- the `owner` tag `<dag_id>/<run_id>` (`run_owner_tag`, the one definition of the format), which
  `restore` compares: every task and try of one DAG run is the same owner, anyone else is foreign.
Explicit tags (a caller's `tags=`, `Table.default_tags`) win over the provenance owner tag.
Reading it back (`job_provenance`) is the one parser of `commitInfo.job` (and of a publication's
`publishedBy`, the same shape): anyone who can write the table can write anything there, so it
takes only string values and gives None for a job without a DAG id and a run id.
This module never imports airflow (the engine's import contract).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_txnlog._shown import shown
from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.validate import json_mapping, mapping, text

OWNER_TAG = "owner"  # the tag engine.maintenance.restore reads to tell a run's own commits from foreign ones
TRIGGER_TYPE = "airflow"
ENV_PREFIX = "AIRFLOW_CTX_"


def run_owner_tag(dag_id: str, run_id: str) -> str:
    """The owner tag of one DAG run's commits (every task, every try): `<dag_id>/<run_id>`."""
    return f"{dag_id}/{run_id}"


@dataclass(frozen=True)
class Provenance:
    """Who is committing: an Airflow task instance (or a caller naming itself like one)."""

    dag_id: str
    run_id: str
    task_id: str | None = None
    try_number: str | None = None
    map_index: str | None = None
    dag_owner: str | None = None
    logical_date: str | None = None

    @property
    def owner_tag(self) -> str:
        return run_owner_tag(self.dag_id, self.run_id)

    def job(self) -> dict[str, str]:
        """commitInfo.job (Databricks' keys; strings only, absent values left out)."""
        out = {
            "jobId": self.dag_id,
            "jobName": self.task_id,
            "jobRunId": self.run_id,
            "runId": self.try_number,
            "jobOwnerId": self.dag_owner,
            "triggerType": TRIGGER_TYPE,
        }
        # Map index -1 means "not mapped" in Airflow: recording it would only add noise.
        if self.map_index not in (None, "", "-1"):
            out["taskMapIndex"] = self.map_index
        return {k: v for k, v in out.items() if v}


def job_provenance(job: object, *, airflow_only: bool = False) -> Provenance | None:
    """The Provenance a commitInfo.job records (the inverse of `Provenance.job`), or None when it
    names no DAG id and run id; `airflow_only` also gives None for jobs Airflow did not run (e.g. a
    Databricks job, which writes the same keys)."""
    if not isinstance(job, Mapping):
        return None

    def get(key: str) -> str | None:
        value = job.get(key)
        return value if isinstance(value, str) and value else None

    dag_id, run_id = get("jobId"), get("jobRunId")
    if dag_id is None or run_id is None or (airflow_only and get("triggerType") != TRIGGER_TYPE):
        return None
    return Provenance(
        dag_id=dag_id,
        run_id=run_id,
        task_id=get("jobName"),
        try_number=get("runId"),
        map_index=get("taskMapIndex"),
        dag_owner=get("jobOwnerId"),
    )


_explicit: contextvars.ContextVar[Provenance | None] = contextvars.ContextVar(
    "txnlog_provenance", default=None
)


def _opt(name: str, value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidArgumentError(f"provenance {name} must be a str or an int, got {shown(value)}")
    return str(value)


@contextlib.contextmanager
def provenance(
    *,
    dag_id: str,
    run_id: str,
    task_id: str | None = None,
    try_number: int | str | None = None,
    map_index: int | str | None = None,
    dag_owner: str | None = None,
) -> Iterator[Provenance]:
    """Record every commit made inside the block as made by this DAG/task/run (wins over the env)."""
    for name, value in (("dag_id", dag_id), ("run_id", run_id)):
        if not isinstance(value, str) or not value:
            raise InvalidArgumentError(f"provenance {name} must be a non-empty str, got {shown(value)}")
    prov = Provenance(
        dag_id=dag_id,
        run_id=run_id,
        task_id=_opt("task_id", task_id),
        try_number=_opt("try_number", try_number),
        map_index=_opt("map_index", map_index),
        dag_owner=_opt("dag_owner", dag_owner),
    )
    token = _explicit.set(prov)
    try:
        yield prov
    finally:
        _explicit.reset(token)


def from_env(env: Mapping[str, str] | None = None) -> Provenance | None:
    """Provenance from the `AIRFLOW_CTX_*` variables, or None without a DAG id and a run id."""
    env = os.environ if env is None else env

    def get(key: str) -> str | None:
        return env.get(ENV_PREFIX + key) or None

    dag_id, run_id = get("DAG_ID"), get("DAG_RUN_ID")
    if dag_id is None or run_id is None:
        return None
    return Provenance(
        dag_id=dag_id,
        run_id=run_id,
        task_id=get("TASK_ID"),
        try_number=get("TRY_NUMBER"),
        map_index=get("MAP_INDEX"),
        dag_owner=get("DAG_OWNER"),
        logical_date=get("LOGICAL_DATE"),
    )


def current() -> Provenance | None:
    """The provenance of a commit made now: the explicit block, else the Airflow env, else None."""
    return _explicit.get() or from_env()


def commit_fields(tags: Mapping[str, str], extra: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """(tags, extra commitInfo fields) with the current provenance added under what the caller set."""
    prov = current()
    if prov is None:
        return dict(tags), dict(extra)
    out_extra = dict(extra)
    out_extra.setdefault("job", prov.job())
    return {OWNER_TAG: prov.owner_tag, **tags}, out_extra


TAGS_EXAMPLE = "{'owner': 'dag_id/run_id'}"


def info_fields(
    txn_tags: Mapping[str, str], metrics: object, user_metadata: object, extra: object
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A commit's (operationMetrics, the other commitInfo fields added to the standard ones), checked;
    `txn_tags` are the transaction's tags, under the caller's `extra['tags']`."""
    checked_metrics = json_mapping("metrics", metrics, example="{'numFiles': 3}")
    info_extra = json_mapping("extra", extra, example="{'discardedVersions': [4]}")
    text("user_metadata", user_metadata)
    own_tags = mapping("extra['tags']", info_extra.pop("tags", None), example=TAGS_EXAMPLE, str_values=True)
    # Provenance is read at commit time: the commit, not the staging, is what an Airflow task made.
    # Its owner tag sits under the caller's tags, which win.
    tags, info_extra = commit_fields({**txn_tags, **own_tags}, info_extra)
    if tags:
        info_extra["tags"] = tags
    if user_metadata:
        info_extra["userMetadata"] = user_metadata
    return checked_metrics, info_extra
