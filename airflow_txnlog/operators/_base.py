"""What every txnlog operator shares: the hook, the table, the run-scoped owner tag, asset events."""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, Context

from airflow_txnlog.assets import table_asset
from airflow_txnlog.hooks.txnlog import TxnLogHook

if TYPE_CHECKING:
    from airflow_txnlog.engine import Table

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


def run_owner(context: Context) -> str:
    """Tag identifying one DAG run's commits, so a restore can tell them from other writers'.

    The format is the engine's (`run_owner_tag`), the one plain `@task` commits get from the
    AIRFLOW_CTX_* environment: operators and user code of one run are the same owner.
    """
    from airflow_txnlog.engine.provenance import run_owner_tag  # noqa: PLC0415 - no pyarrow at parse time

    return run_owner_tag(context["dag"].dag_id, context["run_id"])


def context_provenance(context: Context) -> AbstractContextManager[object]:
    """`engine.provenance(...)` for the task instance of `context`.

    Airflow's task runner exports AIRFLOW_CTX_* only right before `execute`; a callback or code run
    before that (or a unit test's plain dict context) still records who committed through this.
    """
    from airflow_txnlog.engine.provenance import provenance  # noqa: PLC0415 - no pyarrow at parse time

    ti = context.get("ti") or context.get("task_instance")
    task = context.get("task")
    return provenance(
        dag_id=context["dag"].dag_id,
        run_id=context["run_id"],
        task_id=_plain(getattr(ti, "task_id", None) or getattr(task, "task_id", None)),
        try_number=_plain(getattr(ti, "try_number", None)),
        map_index=_plain(getattr(ti, "map_index", None)),
        dag_owner=_plain(getattr(task, "owner", None)),
    )


def _plain(value: object) -> Any:
    """A str or int attribute as is; anything else (absent, a test double) as None."""
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def run_version(context: Context) -> int:
    """A txn version that grows with the run's logical date (falls back to the run's start)."""
    stamp = context.get("logical_date") or context.get("data_interval_end") or context["dag_run"].run_after
    if stamp is None:
        raise ValueError("the run has no logical date to derive an idempotent write version from")
    return int(stamp.timestamp() * 1000)


def safe_name(*parts: str, limit: int = 128) -> str:
    """A savepoint name from free text: unsafe characters replaced, length capped with a hash."""
    import hashlib  # noqa: PLC0415 - rarely needed

    name = _UNSAFE.sub("_", ".".join(parts)).strip("._-") or "savepoint"
    if len(name) > limit:
        digest = hashlib.sha256(name.encode()).hexdigest()[:12]
        name = f"{name[: limit - 13]}-{digest}"
    return name


class TxnLogBaseOperator(BaseOperator):
    """Base of the txnlog operators.

    :param table_uri: the table (local path or fsspec URI; relative URIs resolve against the
        connection's base location). Templated.
    :param txnlog_conn_id: the `txnlog` connection with storage options (optional for local paths).
    :param emit_asset_event: emit an event for the table's asset with the new version.
    """

    template_fields: Sequence[str] = ("table_uri",)
    operation = "UNKNOWN"
    emits_by_default = True

    def __init__(
        self,
        *,
        table_uri: str,
        txnlog_conn_id: str = TxnLogHook.default_conn_name,
        emit_asset_event: bool | None = None,
        **kwargs: Any,
    ) -> None:
        emit = self.emits_by_default if emit_asset_event is None else emit_asset_event
        if emit and "outlets" not in kwargs and "{{" not in table_uri:
            kwargs["outlets"] = [table_asset(table_uri)]
        super().__init__(**kwargs)
        self.table_uri = table_uri
        self.txnlog_conn_id = txnlog_conn_id
        self.emit_asset_event = emit

    @cached_property
    def hook(self) -> TxnLogHook:
        return TxnLogHook(txnlog_conn_id=self.txnlog_conn_id)

    def table(self) -> Table:
        return self.hook.get_table(self.table_uri)

    def emit(self, context: Context, version: int | None, operation: str) -> None:
        """Attach {"version", "operation"} to this task's asset event for the table."""
        if not self.emit_asset_event or version is None:
            return
        asset = table_asset(self.table_uri)
        if asset in (self.outlets or []):
            context["outlet_events"][asset].extra = {"version": version, "operation": operation}
        else:
            self.log.info("table %s is not among this task's outlets: no asset event", self.table_uri)
