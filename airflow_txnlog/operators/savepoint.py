"""Savepoint and restore operators: guard a risky run, and undo it.

`TxnLogSavepointOperator` takes a savepoint of the latest version, named from the run unless told
otherwise, and pushes {"name", "version"}; a retry finds its own savepoint and returns it.
`TxnLogRestoreOperator` restores a savepoint (by name, or the one a savepoint task pushed), a version
or a timestamp. Commits of the same DAG run (tagged with the run's owner tag by the txnlog write
operators) are this run's own; anything else committed since the savepoint is foreign and, with the
default `on_foreign_commits="fail"`, stops the restore. A policy outside `ForeignCommitsPolicy` is an
`InvalidArgumentError` when the operator is built; a rendered `version` that is not an integer is one
at the start of `execute`, before the table is read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context

from airflow_txnlog.arguments import ForeignCommitsPolicy, check_choice, version_number
from airflow_txnlog.operators._base import TxnLogBaseOperator, run_owner, safe_name


class TxnLogSavepointOperator(TxnLogBaseOperator):
    """Take a savepoint of the table.

    :param savepoint_name: templated; default `<dag_id>.<task_id>.<run_id>` made safe.
    :param reason: stored with the savepoint.
    :param expires_after: the savepoint stops protecting files this long after its creation.
    """

    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "savepoint_name", "reason")
    emits_by_default = False

    def __init__(
        self,
        *,
        savepoint_name: str | None = None,
        reason: str | None = None,
        expires_after: dt.timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.savepoint_name = savepoint_name
        self.reason = reason
        self.expires_after = expires_after

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_txnlog.engine import SavepointExistsError  # noqa: PLC0415 - no pyarrow at parse time

        name = self.savepoint_name or safe_name(self.dag_id, self.task_id, context["run_id"])
        expires = dt.datetime.now(dt.UTC) + self.expires_after if self.expires_after else None
        table = self.table()
        try:
            sp = table.create_savepoint(
                name, reason=self.reason, created_by=run_owner(context), expires_at=expires
            )
        except SavepointExistsError:
            sp = table.get_savepoint(name)
            if sp.created_by != run_owner(context):
                raise
            self.log.info("savepoint %s already taken by this run (a retry): reusing it", name)
        self.log.info("savepoint %s of %s at version %s", sp.name, self.table_uri, sp.version)
        self.lineage_read_version = sp.version  # OpenLineage: the savepoint reads the table, commits nothing
        return {"name": sp.name, "version": sp.version}


class TxnLogRestoreOperator(TxnLogBaseOperator):
    """Restore the table to a savepoint, a version or a timestamp (a new commit; idempotent).

    :param savepoint_name: templated savepoint name; or
    :param savepoint_task_id: the task whose XCom ({"name", ...}) names the savepoint; or
    :param version: / :param timestamp: a time-travel target.
    :param on_foreign_commits: "fail" (default) or "force" when other writers committed since
        (`ForeignCommitsPolicy`).
    :param dry_run: only report the plan.
    """

    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "savepoint_name", "version", "timestamp")

    def __init__(
        self,
        *,
        savepoint_name: str | None = None,
        savepoint_task_id: str | None = None,
        version: int | None = None,
        timestamp: str | None = None,
        on_foreign_commits: ForeignCommitsPolicy = "fail",
        dry_run: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_choice("on_foreign_commits", on_foreign_commits, ForeignCommitsPolicy)
        self.savepoint_name = savepoint_name
        self.savepoint_task_id = savepoint_task_id
        self.version = version
        self.timestamp = timestamp
        self.on_foreign_commits = on_foreign_commits
        self.is_dry_run = dry_run

    def _savepoint(self, context: Context) -> str | None:
        if self.savepoint_name or not self.savepoint_task_id:
            return self.savepoint_name
        pushed = context["ti"].xcom_pull(task_ids=self.savepoint_task_id)
        name = pushed["name"] if isinstance(pushed, dict) else pushed
        return str(name) if name else None

    def execute(self, context: Context) -> dict[str, Any]:
        version = version_number("version", self.version)  # templated: rendered by now
        result = self.table().restore(
            savepoint=self._savepoint(context),
            version=version,
            timestamp=self.timestamp,
            dry_run=self.is_dry_run,
            on_foreign_commits=self.on_foreign_commits,
            owner=run_owner(context),
        )
        state = "committed" if result.committed else ("planned" if result.dry_run else "already restored")
        self.log.info(
            "restore of %s to version %s: %s as version %s, metrics %s",
            self.table_uri,
            result.target_version,
            state,
            result.version,
            result.metrics,
        )
        self.emit(context, result.version if result.committed else None, "RESTORE")
        return {
            "version": result.version,
            "target_version": result.target_version,
            "committed": result.committed,
            "dry_run": result.dry_run,
            "metrics": result.metrics,
        }
