"""`restore_on_failure`: an `on_failure_callback` that restores the savepoint taken earlier in the run.

Whose commits are "ours": every commit inside an Airflow task records its provenance
(engine.write.provenance), and with it the run's owner tag `<dag_id>/<run_id>`, whether a txnlog operator,
a plain `@task` calling `Table` / `SparkTable` or a PythonOperator made it. So the callback restores
over every commit of this DAG run since the savepoint (any task, any try). A commit by anyone else
(another run, another DAG, a script) is foreign: with `on_foreign_commits="fail"` the callback refuses
and logs each foreign version with its writer (commitInfo.job / tags / engineInfo); "force" restores
anyway.

Callbacks can fire twice, or for a try that will be retried; so the callback
- acts only on a final failure (the task instance is not up for retry),
- relies on the engine's idempotent restore (a second call commits nothing),
- never raises into Airflow, but its outcome is always in the task log: the restore's new version
  (WARNING, the table changed), "already restored" (INFO), no savepoint in this run (WARNING, nothing
  done), foreign commits or any other failure (ERROR, the table may still hold the bad data).
The restore commit itself carries the failing task's provenance (set from the context, since the
AIRFLOW_CTX_* variables may not be exported yet when a task fails early).

`rollback_release_on_failure(release_log_uri)` does the same for every table of a release log
(engine.releases, docs/releases.md): on a final failure it rolls the tables back to the log's
*current* release (`Releases.rollback`, through operators.release.roll_back), so the failed run's
commits after it are undone and published as a release of kind "rollback". The run's own commits are
told from others' by the same owner tag; a foreign commit after the current release makes it refuse
(ERROR, each such commit logged with its writer, nothing restored) unless `on_foreign_commits="force"`.
Tables all at their released versions mean nothing to undo: no restore and no new release, so a second
firing does nothing (INFO). Its outcomes in the task log: the rollback's release (WARNING, tables
changed), nothing to undo (INFO), no release log or no release yet (WARNING, nothing done), foreign
commits or any other failure (ERROR).

Bad arguments are refused when the callback is built (in the DAG file), not when it fires: a policy
outside `ForeignCommitsPolicy` raises `InvalidArgumentError` from `restore_on_failure(...)` /
`rollback_release_on_failure(...)` itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_txnlog.arguments import ForeignCommitsPolicy, check_choice
from airflow_txnlog.engine.spi import job_provenance  # light: no pyarrow
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.operators._base import context_provenance, run_owner  # the engine's owner tag

if TYPE_CHECKING:
    from airflow_txnlog.engine import Release, Table

log = logging.getLogger(__name__)
_RETRY_STATES = frozenset({"up_for_retry", "up_for_reschedule"})


def _will_retry(ti: Any) -> bool:
    state = str(getattr(ti, "state", "") or "").lower().rsplit(".", 1)[-1]
    return state in _RETRY_STATES


def _savepoint_name(ti: Any, savepoint_task_id: str) -> str | None:
    pushed = ti.xcom_pull(task_ids=savepoint_task_id) if ti is not None else None
    name = pushed["name"] if isinstance(pushed, dict) else pushed
    return str(name) if name else None


def describe_writer(info: dict[str, Any]) -> str:
    """Who made a commit, from its commitInfo: Airflow job, owner tag, engine."""
    job = job_provenance(info.get("job"))
    parts = []
    if job is not None:
        who = f"dag {job.dag_id!r} task {job.task_id!r} run {job.run_id!r}"
        parts.append(who + (f" try {job.try_number}" if job.try_number else ""))
    owner = (info.get("tags") or {}).get("owner")
    parts.append(f"owner tag {owner!r}" if owner else "no owner tag")
    parts.append(f"engine {info.get('engineInfo') or '?'}")
    return f"{info.get('operation', '?')} by " + ", ".join(parts)


def _log_foreign(table: Table, table_uri: str, versions: list[int], owner: str) -> None:
    wanted = set(versions)
    infos = {h["version"]: h for h in table.history() if h["version"] in wanted}
    log.error(
        "restore_on_failure: NOT restoring %s: %d version(s) since the savepoint were committed by other "
        "writers than this run (%s); restoring would discard them. The table still holds this run's "
        "changes. Help: check these writers, then restore by hand (TxnLogRestoreOperator or `txnlog "
        "restore`), or build the callback with on_foreign_commits='force'.",
        table_uri,
        len(versions),
        owner,
    )
    for v in versions:
        writer = describe_writer(infos[v]) if v in infos else "unknown writer (commit no longer in the log)"
        log.error("restore_on_failure: foreign version %s of %s: %s", v, table_uri, writer)


def _restore(context: Any, table_uri: str, name: str, conn_id: str, policy: ForeignCommitsPolicy) -> None:
    from airflow_txnlog.engine import ForeignCommitsError  # noqa: PLC0415 - no pyarrow at parse time

    table = TxnLogHook(txnlog_conn_id=conn_id).get_table(table_uri)
    owner = run_owner(context)
    try:
        with context_provenance(context):
            result = table.restore(savepoint=name, owner=owner, on_foreign_commits=policy)
    except ForeignCommitsError as exc:
        _log_foreign(table, table_uri, exc.versions, owner)
        return
    if result.committed:
        log.warning(
            "restore_on_failure: restored %s to savepoint %s (version %s) as new version %s%s",
            table_uri,
            name,
            result.target_version,
            result.version,
            f", discarding foreign versions {result.foreign_versions}" if result.foreign_versions else "",
        )
    else:
        log.info(
            "restore_on_failure: %s already at savepoint %s (version %s)", table_uri, name, result.version
        )


def restore_on_failure(
    table_uri: str,
    *,
    savepoint_task_id: str = "savepoint",
    txnlog_conn_id: str = TxnLogHook.default_conn_name,
    on_foreign_commits: ForeignCommitsPolicy = "fail",
) -> Callable[[Any], None]:
    """Build the callback; `savepoint_task_id` is the `TxnLogSavepointOperator` of the same run."""
    check_choice("on_foreign_commits", on_foreign_commits, ForeignCommitsPolicy)

    def callback(context: Any) -> None:
        ti = context.get("ti") or context.get("task_instance")
        if ti is not None and _will_retry(ti):
            log.info("restore_on_failure: %s will be retried; not restoring yet", getattr(ti, "task_id", "?"))
            return
        try:
            name = _savepoint_name(ti, savepoint_task_id)
            if not name:
                log.warning(
                    "restore_on_failure: no savepoint of %s in this run (task %r pushed none: it did not "
                    "run or failed); nothing to restore to, the table is left as it is",
                    table_uri,
                    savepoint_task_id,
                )
                return
            _restore(context, table_uri, name, txnlog_conn_id, on_foreign_commits)
        except Exception:  # a callback must never raise into Airflow; loud instead of silent
            log.exception(
                "restore_on_failure: FAILED to restore %s to the savepoint of task %r; the table may still "
                "hold the failed run's changes. Help: restore it by hand (TxnLogRestoreOperator or "
                "`txnlog restore --savepoint`)",
                table_uri,
                savepoint_task_id,
            )

    return callback


# ------------------------------------------------------------------ release logs
def _log_release_foreign(current: Release, owner: str) -> None:
    """Each table's commits after `current` that this run did not make, with their writers."""
    from airflow_txnlog.engine import Table  # noqa: PLC0415 - no pyarrow at parse time

    log.error(
        "rollback_release_on_failure: NOT rolling back: other writers than this run (%s) committed to "
        "tables of the release log after release %s; rolling back would discard their changes. The "
        "tables still hold this run's changes. Help: check these writers, then roll back by hand "
        "(TxnLogReleaseRollbackOperator or Releases.rollback), or build the callback with "
        "on_foreign_commits='force'.",
        owner,
        current.sequence,
    )
    for uri, released in current.versions.items():
        table = Table.open(uri, storage_options=current.table_storage_options, lazy=True)  # (the log only)
        for info in table.history(limit=max(0, table.latest_version() - released)):
            if info["version"] > released and (info.get("tags") or {}).get("owner") != owner:
                writer = describe_writer(info)
                log.error("rollback_release_on_failure: version %s of %s: %s", info["version"], uri, writer)


def _roll_back_release(
    context: Any, release_log_uri: str, conn_id: str, policy: ForeignCommitsPolicy
) -> None:
    from airflow_txnlog.engine import ForeignCommitsError, ReleaseNotFoundError  # noqa: PLC0415
    from airflow_txnlog.operators.release import releases_for, roll_back  # noqa: PLC0415

    owner = run_owner(context)
    ti = context.get("ti") or context.get("task_instance")
    note = f"rollback_release_on_failure: task {getattr(ti, 'task_id', '?')} of {owner} failed"
    current: Release | None = None
    try:
        releases = releases_for(TxnLogHook(txnlog_conn_id=conn_id), release_log_uri)
        current = releases.current()
        with context_provenance(context):
            outcome = roll_back(releases, None, policy=policy, owner=owner, note=note)
    except ReleaseNotFoundError as exc:
        log.warning("rollback_release_on_failure: %s; the tables are left as they are", exc)
        return
    except ForeignCommitsError:
        assert current is not None  # (a rollback ran: there is a release)
        _log_release_foreign(current, owner)
        return
    release = outcome.release
    if outcome.rolled_back:
        log.warning(
            "rollback_release_on_failure: rolled the tables of %s back to release %s as release %s: %s",
            release_log_uri,
            release.rollback_to,
            release.sequence,
            release.versions,
        )
    else:
        log.info(
            "rollback_release_on_failure: no table of %s moved since release %s: nothing to roll back",
            release_log_uri,
            release.sequence,
        )


def rollback_release_on_failure(
    release_log_uri: str,
    *,
    txnlog_conn_id: str = TxnLogHook.default_conn_name,
    on_foreign_commits: ForeignCommitsPolicy = "fail",
) -> Callable[[Any], None]:
    """Build the callback: roll every table of the release log back to its current release when the
    task fails for good (see the module docstring)."""
    check_choice("on_foreign_commits", on_foreign_commits, ForeignCommitsPolicy)

    def callback(context: Any) -> None:
        ti = context.get("ti") or context.get("task_instance")
        if ti is not None and _will_retry(ti):
            log.info(
                "rollback_release_on_failure: %s will be retried; not rolling back yet",
                getattr(ti, "task_id", "?"),
            )
            return
        try:
            _roll_back_release(context, release_log_uri, txnlog_conn_id, on_foreign_commits)
        except Exception:  # a callback must never raise into Airflow; loud instead of silent
            log.exception(
                "rollback_release_on_failure: FAILED to roll back the tables of %s; they may still hold "
                "the failed run's changes. Help: roll back by hand (TxnLogReleaseRollbackOperator or "
                "Releases.rollback)",
                release_log_uri,
            )

    return callback
