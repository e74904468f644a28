"""`restore_on_failure`: an `on_failure_callback` that restores the savepoint taken earlier in the run.

Callbacks can fire twice, or for a try that will be retried; so the callback
- acts only on a final failure (the task instance is not up for retry),
- relies on the engine's idempotent restore (a second call commits nothing),
- never raises into Airflow: it logs what it did, or why it could not.

Bad arguments are refused when the callback is built (in the DAG file), not when it fires: a policy
outside `ForeignCommitsPolicy` raises `InvalidArgumentError` from `restore_on_failure(...)` itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from airflow_txnlog.arguments import ForeignCommitsPolicy, check_choice
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.operators._base import run_owner  # the same tag the write operators put on commits

log = logging.getLogger(__name__)
_RETRY_STATES = frozenset({"up_for_retry", "up_for_reschedule"})


def _will_retry(ti: Any) -> bool:
    state = str(getattr(ti, "state", "") or "").lower().rsplit(".", 1)[-1]
    return state in _RETRY_STATES


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
            pushed = ti.xcom_pull(task_ids=savepoint_task_id) if ti is not None else None
            name = pushed["name"] if isinstance(pushed, dict) else pushed
            if not name:
                log.error("restore_on_failure: no savepoint pushed by task %r in this run", savepoint_task_id)
                return
            table = TxnLogHook(txnlog_conn_id=txnlog_conn_id).get_table(table_uri)
            result = table.restore(
                savepoint=name, owner=run_owner(context), on_foreign_commits=on_foreign_commits
            )
            if result.committed:
                log.warning(
                    "restore_on_failure: restored %s to savepoint %s (version %s) as version %s",
                    table_uri,
                    name,
                    result.target_version,
                    result.version,
                )
            else:
                log.info(
                    "restore_on_failure: %s already at savepoint %s (version %s)",
                    table_uri,
                    name,
                    result.version,
                )
        except Exception:  # a callback must never raise into Airflow
            log.exception(
                "restore_on_failure: could not restore %s to savepoint of task %r",
                table_uri,
                savepoint_task_id,
            )

    return callback
