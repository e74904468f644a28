"""What every txnlog operator shares: the hook, the table, the run-scoped owner tag, asset events."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, Context

from airflow_txnlog.assets import table_asset
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.operators._figures import commit_figures

if TYPE_CHECKING:
    from airflow_txnlog.engine import Table
    from airflow_txnlog.engine.spi import Storage
    from airflow_txnlog.operators._lineage import Lineage

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


def run_owner(context: Context) -> str:
    """Tag identifying one DAG run's commits, so a restore can tell them from other writers'.

    The format is the engine's (`run_owner_tag`), the one plain `@task` commits get from the
    AIRFLOW_CTX_* environment: operators and user code of one run are the same owner.
    """
    from airflow_txnlog.engine.spi import run_owner_tag  # noqa: PLC0415 - no pyarrow at parse time

    return run_owner_tag(context["dag"].dag_id, context["run_id"])


def context_provenance(context: Context) -> AbstractContextManager[object]:
    """`engine.write.provenance(...)` for the task instance of `context`.

    Airflow's task runner exports AIRFLOW_CTX_* only right before `execute`; a callback or code run
    before that (or a unit test's plain dict context) still records who committed through this.
    """
    from airflow_txnlog.engine.spi import provenance  # noqa: PLC0415 - no pyarrow at parse time

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


def run_datetime(context: Context) -> dt.datetime:
    """The run's logical date or, for a run without one (Airflow 3's manual runs), its `run_after`.

    DAG code should use this rather than `ds` / `logical_date`, which such runs do not have.
    """
    dag_run = context["dag_run"]
    stamp = context.get("logical_date") or getattr(dag_run, "logical_date", None) or dag_run.run_after
    if stamp is None:
        raise ValueError("the run has neither a logical date nor a run_after")
    return stamp


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


def commit_entry(storage: Storage, version: int) -> dict[str, Any]:
    """The commitInfo of `version` plus `version`, from that one commit file (`{"version": version}`
    if it is gone); no listing and no snapshot, whatever the table's size."""
    from airflow_txnlog.engine.spi import log_reader  # noqa: PLC0415 - no pyarrow at parse time

    return {**(log_reader.read_commit_info(storage, version) or {}), "version": version}


def event_extra(
    context: Context, entry: dict[str, Any], *, task_id: str | None = None, operation: str | None = None
) -> dict[str, Any]:
    """The extra of every asset event for a table: the commit, its figures and who wrote it.

    `task_id` / `operation` stand in when the context has no task instance / the commit's
    commitInfo is gone.
    """
    return {
        "version": entry["version"],
        # The version this commit follows in the log: `previous_version..version` is exactly this
        # commit. The version it read (readVersion) can be older when writers commit concurrently.
        "previous_version": entry["version"] - 1 if entry["version"] > 0 else None,
        "read_version": entry.get("readVersion"),
        "operation": entry.get("operation") or operation,
        **commit_figures(entry),
        **writer_fields(context, task_id=task_id),
    }


def writer_fields(context: Context, *, task_id: str | None = None) -> dict[str, Any]:
    """`dag_id`, `task_id`, `run_id` of the task emitting an event (`task_id` stands in when the
    context has no task instance)."""
    ti = context.get("ti") or context.get("task_instance")
    return {
        "dag_id": context["dag"].dag_id,
        "task_id": task_id or _plain(getattr(ti, "task_id", None)),
        "run_id": context["run_id"],
    }


def changes_data(extra: dict[str, Any]) -> bool:
    """False for a commit known to add and remove no files (e.g. an empty write's txn-only commit)."""
    return not (extra.get("num_added_files") == 0 and extra.get("num_removed_files") == 0)


class TxnLogBaseOperator(BaseOperator):
    """Base of the txnlog operators.

    :param table_uri: the table (local path or fsspec URI; relative URIs resolve against the
        connection's base location). Templated.
    :param txnlog_conn_id: the `txnlog` connection with storage options (optional for local paths).
    :param emit_asset_event: emit an event for the table's asset with the new version.
    """

    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id")
    operation = "UNKNOWN"
    emits_by_default = True
    # What `execute` read / committed, for OpenLineage (see _lineage.py): `emit` records the
    # committed version; a task that commits nothing may set the version it read.
    lineage_read_version: int | None = None
    lineage_committed_version: int | None = None

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

    def emit(
        self, context: Context, version: int | None, operation: str, *, more: Mapping[str, Any] | None = None
    ) -> None:
        """Emit the table's asset event for `version`, or none when the task changed no data.

        `version` is None when nothing was committed (a skipped idempotent write, a DML that matched
        no rows); a commit that added and removed no files (an empty write's txn-only commit) changes
        no data either. Airflow emits an event for every outlet of a successful task, so "no event"
        means taking the table's asset out of this task instance's outlets.
        """
        self.lineage_committed_version = version
        if not self.emit_asset_event:
            return
        asset = table_asset(self.table_uri)
        if asset not in (self.outlets or []):
            self.log.info("table %s is not among this task's outlets: no asset event", self.table_uri)
            return
        extra = None
        if version is not None:
            entry = commit_entry(self.hook.get_storage(self.table_uri), version)
            extra = event_extra(context, entry, task_id=self.task_id, operation=operation)
        if extra is None or not changes_data(extra):
            self.log.info("%s of %s changed no data: no asset event", operation, self.table_uri)
            self.drop_table_event()
            return
        context["outlet_events"][asset].extra = {**extra, **(more or {})}

    def drop_table_event(self) -> None:
        """No asset event for the table from this task instance: take its asset out of the outlets.

        Rebinding (not mutating) is safe: the task runner executes a copy of the task
        (`prepare_for_execution`), so the DAG's operator keeps its outlets for the next run.
        """
        asset = table_asset(self.table_uri)
        self.outlets = [o for o in (self.outlets or []) if o != asset]

    def lineage_inputs(self) -> list[str]:
        """Locations the task reads besides its table (OpenLineage inputs), e.g. a source path."""
        return []

    # OpenLineage hooks, called by apache-airflow-providers-openlineage when it is installed and
    # configured (imports inside: without the provider nothing here is ever loaded).
    def get_openlineage_facets_on_start(self) -> Lineage:
        from airflow_txnlog.operators._lineage import start_lineage  # noqa: PLC0415

        return start_lineage(self, extra_inputs=self.lineage_inputs())

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Lineage:
        from airflow_txnlog.operators._lineage import table_lineage  # noqa: PLC0415

        return table_lineage(
            self,
            read_version=self.lineage_read_version,
            committed_version=self.lineage_committed_version,
            extra_inputs=self.lineage_inputs(),
        )
