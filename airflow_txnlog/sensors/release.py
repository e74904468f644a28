"""`TxnLogReleaseSensor`: wait for a new release of a release log (engine.releases).

A release names the versions of several tables that readers may use *together*; a task that reads
them waits for the next release rather than for each table's next commit. The sensor returns the
newest release after its baseline as {"sequence", "versions"} (XCom ``return_value``): read each table
at exactly that version (`Releases.open(uri).get(sequence).snapshot(table_uri)`, or
`Table.snapshot(version)`).

The baseline is `after_sequence` when given. When it is None the sensor fixes it the first time it
runs in a DAG run, as the log's current sequence at that moment (-1 before the first release, or
before the log exists: then the first release fires it), and keeps it as the version sensor does
(sensors/version.py): in memory within one execution, in Airflow's task state store (key
`txnlog_baseline_release`) across reschedule-mode pokes and retries, and in the trigger's
serialized kwargs in deferrable mode. A retried or cleared sensor of the same run therefore waits
for the same release. Reschedule mode without a task state store needs an explicit `after_sequence`.

Each poke is one listing of the log's `releases/` folder after the baseline and one read of the newest
record when there is one (engine.maintenance.release_records: orjson and the storage layer, never
pyarrow); the engine is imported only when the sensor runs, so DAG files parse without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout

from airflow_txnlog.arguments import renders_later
from airflow_txnlog.hooks.txnlog import TxnLogHook
from airflow_txnlog.sensors._baseline import run_baseline
from airflow_txnlog.triggers.release import (
    OpenedReleaseLog,
    TxnLogReleaseTrigger,
    current_sequence,
    newest_release,
    open_release_log,
    sequence_number,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

BASELINE_KEY = "txnlog_baseline_release"


class TxnLogReleaseSensor(BaseSensorOperator):
    """Waits for a release newer than `after_sequence`; returns the newest as {"sequence", "versions"}.

    :param release_log_uri: the release log (absolute, or relative to the connection's base
        location). Templated.
    :param after_sequence: the baseline sequence; None: the log's current sequence when the sensor
        first runs in this DAG run (kept across pokes, reschedules, retries and deferral). Templated.
    :param txnlog_conn_id: the `txnlog` connection (storage options); local paths need none.
    :param deferrable: wait in the triggerer instead of a worker slot (default True); the trigger
        polls every `poke_interval` seconds and gives up after `timeout`.
    """

    template_fields: Sequence[str] = ("release_log_uri", "txnlog_conn_id", "after_sequence")
    ui_color = "#cfe8fc"

    def __init__(
        self,
        *,
        release_log_uri: str,
        after_sequence: int | str | None = None,
        txnlog_conn_id: str | None = TxnLogHook.default_conn_name,
        deferrable: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not renders_later(after_sequence):
            sequence_number("after_sequence", after_sequence, minimum=-1)
        self.release_log_uri = release_log_uri
        self.after_sequence = after_sequence
        self.txnlog_conn_id = txnlog_conn_id
        self.deferrable = deferrable
        self._opened: OpenedReleaseLog | None = None
        self._cursor: int | None = None  # the baseline of this execution

    def _log(self) -> OpenedReleaseLog:
        if self._opened is None:
            self._opened = open_release_log(self.txnlog_conn_id, self.release_log_uri)
        return self._opened

    def _baseline(self, context: Context) -> int:
        """`after_sequence`, or the baseline fixed at this DAG run's first poke (module docstring)."""
        given = sequence_number("after_sequence", self.after_sequence, minimum=-1)  # rendered by now
        if given is not None:
            return given
        baseline, fixed = run_baseline(
            context, key=BASELINE_KEY, reschedule=self.reschedule, sensor="TxnLogReleaseSensor",
            param="after_sequence", current=lambda: current_sequence(self._log().storage),
        )  # fmt: skip
        if not fixed:
            return baseline
        self.log.info("waiting for a release of %s after sequence %s", self.release_log_uri, baseline)
        return baseline

    def poke(self, context: Context) -> PokeReturnValue:
        if self._cursor is None:
            self._cursor = self._baseline(context)
        found = newest_release(self._log().storage, self._cursor)
        if found is None:
            return PokeReturnValue(is_done=False)
        self.log.info("release %s (%s) of %s", found["sequence"], found["kind"], self.release_log_uri)
        return PokeReturnValue(is_done=True, xcom_value=_result(found))

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)  # already there: no trip through the triggerer
        if first.is_done:
            return first.xcom_value
        assert self._cursor is not None
        self.defer(
            trigger=TxnLogReleaseTrigger(
                release_log_uri=self.release_log_uri,
                after_sequence=self._cursor,
                poll_interval=self.poke_interval,
                txnlog_conn_id=self.txnlog_conn_id,
                timeout=self.timeout,
            ),
            method_name="execute_complete",
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> dict[str, Any]:
        """Resumes after the trigger: the new release, or raises on a timeout or error event."""
        if not event:
            raise AirflowException(f"the release trigger of {self.release_log_uri} returned no event")
        status = event.get("status")
        if status == "success":
            self.log.info("release %s (%s) of %s", event["sequence"], event.get("kind"), self.release_log_uri)
            return _result(event)
        if status == "timeout":
            raise AirflowSensorTimeout(
                f"no release of {self.release_log_uri} after sequence {event.get('after_sequence')} "
                f"within {self.timeout} seconds"
            )
        raise AirflowException(f"waiting for {self.release_log_uri} failed: {event.get('message', event)}")


def _result(found: dict[str, Any]) -> dict[str, Any]:
    return {"sequence": int(found["sequence"]), "versions": dict(found["versions"])}
