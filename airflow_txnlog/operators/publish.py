"""`TxnLogPublishOperator`: the publish step of write-audit-publish.

The pattern (docs/airflow.md, "Write, audit, publish"):

    savepoint >> risky write (emit_asset_event=False) >> audit (returns the version it checked)
              >> publish(version=<that version>)      # the only task that tells downstream
    restore on failure (callback or a one_failed task) # nothing was published

The write commits to the one Delta log, so the table's latest version is unaudited until the audit passes; the
publish task records the audited version on a publication channel (engine.maintenance.publications) and emits
the table's asset event. Downstream DAGs scheduled on the table's asset therefore only ever hear of audited
versions, and readers that follow the channel (`Table.published_snapshot()`,
`SparkTable.to_df(published=True)`, `TxnLogVersionSensor(channel=...)`,
`TxnLogVersionEventTrigger(channel=...)`) never load an unaudited one, even while it is the latest.

Publish the version the audit checked (e.g. `version="{{ ti.xcom_pull(task_ids='audit') }}"`), not
"the latest": another writer may have committed after the audit. `version=None` publishes the latest
version and says so in the log. Re-publishing the channel's current version (a retry) emits no event.

The event's extra: `version`, `previous_version` (the channel's version before), `operation`
"PUBLISH", `channel`, the rows and files added / removed by the commits since the previous
publication (summed from their operationMetrics; a figure is left out when a commit lacks it), and
the publishing DAG / task / run. A retry of the task that published emits the event again (its
earlier try may have failed before Airflow recorded it: at least once); a version some other run had
already published, or one overtaken by a concurrent publication of a newer version, emits none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import Context

from airflow_txnlog.arguments import channel_name, version_number
from airflow_txnlog.assets import table_asset
from airflow_txnlog.engine import DEFAULT_CHANNEL  # light: no pyarrow
from airflow_txnlog.engine.spi import job_provenance  # light: no pyarrow
from airflow_txnlog.operators._base import TxnLogBaseOperator, context_provenance, writer_fields
from airflow_txnlog.operators._figures import commit_figures

if TYPE_CHECKING:
    from airflow_txnlog.engine import Publication, Table

MAX_SUMMED_COMMITS = 1000


class TxnLogPublishOperator(TxnLogBaseOperator):
    """Publish an audited version of the table on a channel, and emit the table's asset event.

    :param version: the audited version (templated: an XCom of the audit task renders as text);
        None publishes the latest version.
    :param channel: the publication channel (default "published"; letters, digits, '.', '_', '-').
        Templated.
    Returns the published version (XCom ``return_value``).
    """

    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "version", "channel")
    operation = "PUBLISH"
    ui_color = "#d4f4dd"

    def __init__(
        self, *, version: int | str | None = None, channel: str = DEFAULT_CHANNEL, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.version = version
        self.channel = channel

    def execute(self, context: Context) -> int:
        version = version_number("version", self.version)
        channel_name("channel", self.channel)
        table = self.table()
        before = table.publication(self.channel)
        if version is None:
            self.log.warning("no version given: publishing the latest version, whatever committed it")
        with context_provenance(context):
            pub = table.publish(version, channel=self.channel)
        self.lineage_read_version = pub.version  # OpenLineage: the published version, read, not written
        if before is not None and before.version == pub.version and not _published_by_run(pub, context):
            self.log.info("version %s is already published on %r: no asset event", pub.version, self.channel)
            self.drop_table_event()
            return pub.version
        now = table.publication(self.channel)
        if now is not None and now.version > pub.version:  # a concurrent publisher got further
            self.log.warning(
                "version %s was published on %r, but version %s was published concurrently and is the "
                "channel's version: no asset event",
                pub.version,
                self.channel,
                now.version,
            )
            self.drop_table_event()
            return pub.version
        self.log.info(
            "published version %s of %s on channel %r (previously %s)",
            pub.version,
            self.table_uri,
            self.channel,
            pub.previous_version,
        )
        self._set_event(context, table, pub)
        return pub.version

    def _set_event(self, context: Context, table: Table, pub: Publication) -> None:
        asset = table_asset(self.table_uri)
        if not self.emit_asset_event or asset not in (self.outlets or []):
            return
        context["outlet_events"][asset].extra = {
            "version": pub.version,
            "previous_version": pub.previous_version,
            "operation": self.operation,
            "channel": pub.channel,
            **figures_since(table, pub.previous_version, pub.version),
            **writer_fields(context, task_id=self.task_id),
        }


def _published_by_run(pub: Publication, context: Context) -> bool:
    """True when this DAG run made the publication: an earlier try of this task that published and
    then failed before Airflow recorded its event, so this try emits it (at least once)."""
    job = job_provenance(pub.published_by)
    return job is not None and (job.dag_id, job.run_id) == (context["dag"].dag_id, context["run_id"])


def figures_since(table: Table, previous: int | None, version: int) -> dict[str, int]:
    """Rows and files added / removed by the commits after `previous` up to `version`, summed.

    A figure is left out unless every data-changing commit in the range reports it; nothing is
    summed over more than MAX_SUMMED_COMMITS commits (a first publication of a long table).
    """
    from airflow_txnlog.engine.spi import log_reader  # noqa: PLC0415 - no pyarrow at parse time

    first = 0 if previous is None else previous + 1
    if version - first + 1 > MAX_SUMMED_COMMITS:
        return {}
    listing = log_reader.list_after(table.storage, first - 1)
    totals: dict[str, int] | None = None
    for _, info in log_reader.read_commit_infos(table.storage, listing.run_from(first, until=version)):
        figures = commit_figures(info)
        if not figures:
            continue  # VACUUM, SET TBLPROPERTIES...: no data figures to add
        if totals is None:
            totals = figures
            continue
        totals = {k: totals[k] + figures[k] for k in totals.keys() & figures.keys()}
    return totals or {}
