"""`TxnLogVersionSensor`: wait for a commit newer than a baseline, optionally of given operations.

The baseline is `after_version` when given. When it is None the sensor fixes it the first time it
runs in a DAG run, as the latest version at that moment, and keeps it:

- in the same execution (poke mode, or before deferring) in memory;
- across reschedule-mode pokes and retries in Airflow's task state store (Airflow >= 3.3,
  ``context["task_state_store"]``, key `txnlog_baseline_version`, scoped to the DAG run and task).
  XCom cannot hold it: Airflow clears a task's XComs at the start of every reschedule poke. Without a
  task state store, reschedule mode needs an explicit `after_version`, else each poke would
  re-baseline and never fire; the sensor refuses that combination with an error;
- in deferrable mode in the trigger's serialized kwargs (a restarted triggerer keeps it).

Because the baseline is kept per DAG run and task, a retried or cleared sensor in the same run waits
for the same commit and so returns the same version (re-running a run reprocesses the same version).

Each poke lists the log from the last version it saw and reads only new commit files, through the
hook (`TxnLogHook.poll_log`; the algorithm is in `airflow_txnlog.hooks.log_polling`). With `channel`
(write-audit-publish, docs/airflow.md) the sensor waits for a *publication* instead: it lists the
channel's records under `_published/<channel>/` after the baseline (the channel's current version
when the sensor first runs) and returns the newest published version, never an unaudited commit.
The engine is imported only inside methods (the hook's), so DAG files that use the sensor parse
without it; pyspark is never imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout

from airflow_txnlog.arguments import channel_name, operation_names, renders_later, version_number
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.sensors._baseline import run_baseline
from airflow_txnlog.triggers.version import TxnLogVersionTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_txnlog.hooks.log_polling import OpenedLog

BASELINE_KEY = "txnlog_baseline_version"


class TxnLogVersionSensor(BaseSensorOperator):
    """Waits for a commit newer than `after_version` and returns its version (XCom ``return_value``).

    :param table_uri: the table (absolute, or relative to the connection's base location). Templated.
    :param after_version: the baseline version; None: the latest version when the sensor first runs in
        this DAG run (kept across pokes, reschedules, retries and deferral). Templated.
    :param operations: commitInfo operations that count, case-insensitive (e.g. ``["MERGE"]``, or one
        name); None means any commit. Commits of other operations are skipped. Templated. Anything
        else (a non-string or empty name) raises `InvalidArgumentError`, like a non-integer
        `after_version`, before the table is read.
    :param channel: wait for a version published on this channel (`TxnLogPublishOperator`,
        `Table.publish`) rather than for a commit; returns the newest published version. Templated.
        Not combined with `operations` (a publication is not a commit of an operation).
    :param txnlog_conn_id: the `txnlog` connection (storage options); local paths need none.
    :param deferrable: wait in the triggerer instead of a worker slot (default: Airflow's
        ``[operators] default_deferrable``).
    :param poll_interval: seconds between the trigger's polls in deferrable mode; None uses
        `poke_interval`.
    """

    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "after_version", "operations", "channel")
    ui_color = "#cfe8fc"

    def __init__(
        self,
        *,
        table_uri: str,
        after_version: int | None = None,
        operations: list[str] | None = None,
        channel: str | None = None,
        txnlog_conn_id: str | None = TxnLogHook.default_conn_name,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table_uri = table_uri
        self.after_version = after_version
        # templated: a template string is checked once rendered, at the start of execute
        self.operations = (
            operations if renders_later(operations) else operation_names("operations", operations)
        )
        self.channel = channel
        if not renders_later(channel):
            channel_name("channel", channel, operations)
        self.txnlog_conn_id = txnlog_conn_id
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self._opened: OpenedLog | None = None
        self._cursor: int | None = None  # last version checked in this execution

    @cached_property
    def hook(self) -> TxnLogHook:
        return TxnLogHook(txnlog_conn_id=self.txnlog_conn_id)

    def _log(self) -> OpenedLog:
        if self._opened is None:
            self._opened = self.hook.open_log(self.table_uri)
        return self._opened

    def _baseline(self, context: Context) -> int:
        """`after_version`, or the baseline fixed at this DAG run's first poke (see the module docstring)."""
        rendered = None if str(self.after_version).strip() in ("", "None") else self.after_version
        version = version_number("after_version", rendered)  # a template renders to text
        if version is not None:
            return version
        baseline, fixed = run_baseline(
            context, key=BASELINE_KEY, reschedule=self.reschedule, sensor="TxnLogVersionSensor",
            param="after_version", current=lambda: self.hook.log_version(self._log(), channel=self.channel),
        )  # fmt: skip
        if not fixed:
            return baseline
        what = f"a publication on channel {self.channel!r}" if self.channel else "a commit"
        self.log.info("waiting for %s of %s after version %s", what, self.table_uri, baseline)
        return baseline

    def poke(self, context: Context) -> PokeReturnValue:
        if self._cursor is None:
            self._cursor = self._baseline(context)
        log = self._log()
        while True:
            poll = self.hook.poll_log(log, self._cursor, operations=self.operations, channel=self.channel)
            commits = poll.commits[-1:] if self.channel is not None else poll.commits  # channel: the newest
            for commit in commits:
                if commit.matched:
                    self.log.info("version %s (%s) of %s", commit.version, commit.operation, self.table_uri)
                    return PokeReturnValue(is_done=True, xcom_value=commit.version)
                self._cursor = commit.version
            if poll.caught_up:
                return PokeReturnValue(is_done=False)

    def execute(self, context: Context) -> Any:
        self.operations = operation_names("operations", self.operations)  # rendered by now
        self.channel = channel_name("channel", self.channel, self.operations)
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)  # already there: no trip through the triggerer
        if first.is_done:
            return first.xcom_value
        assert self._cursor is not None
        self.defer(
            trigger=TxnLogVersionTrigger(
                table_uri=self.table_uri,
                after_version=self._cursor,
                operations=list(self.operations) if self.operations is not None else None,
                channel=self.channel,
                txnlog_conn_id=self.txnlog_conn_id,
                poll_interval=self.poll_interval if self.poll_interval is not None else self.poke_interval,
                timeout=self.timeout,
            ),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> int:
        """Resumes after the trigger: the new version, or raises on a timeout or error event."""
        if not event:
            raise AirflowException(f"the version trigger of {self.table_uri} returned no event")
        status = event.get("status")
        if status == "success":
            self.log.info("version %s (%s) of %s", event["version"], event.get("operation"), self.table_uri)
            return int(event["version"])
        if status == "timeout":
            raise AirflowSensorTimeout(
                f"no matching commit of {self.table_uri} after version {event.get('after_version')} "
                f"within {self.timeout} seconds"
            )
        raise AirflowException(f"waiting for {self.table_uri} failed: {event.get('message', event)}")
