"""OpenLineage datasets of the release operators (operators/release.py), built on _lineage.py.

A release reads its tables and writes its log: every table of the release is an *input* at its
version in the release, with the facets `_lineage.table_lineage` gives a table read at a version
(dataset version, schema, storage), and the release log is an *output*, named by OpenLineage's rules
on its location, without facets (it holds JSON records, not a table). A table a rollback restored
(a new commit) is an *output* at the restore's version and an input at the version it read, as any
commit is. START events name the tables known before the task ran, and the log, without facets.

Like _lineage.py, nothing here is imported at DAG-parse time: the operators import this module inside
their lineage methods, and it imports the openlineage packages inside its functions.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_txnlog.operators._lineage import start_lineage as table_start_lineage
from airflow_txnlog.operators._lineage import table_lineage

if TYPE_CHECKING:
    from openlineage.client.event_v2 import Dataset

    from airflow_txnlog.hooks.txnlog import TxnLogHook
    from airflow_txnlog.operators._lineage import Lineage


@dataclass
class _Location:
    """One table (or the log) with the hook that reaches it: what `_lineage`'s functions ask of an
    operator (`LineageOperator`)."""

    table_uri: str
    hook: TxnLogHook


def start_lineage(hook: TxnLogHook, release_log_uri: str, table_uris: Sequence[str]) -> Lineage:
    """The START event's lineage: the tables known before the task ran, and the log, named only."""
    from airflow.providers.openlineage.extractors import OperatorLineage  # noqa: PLC0415 - optional

    inputs: list[Dataset] = []
    for uri in table_uris:
        inputs += table_start_lineage(_Location(uri, hook)).inputs
    return OperatorLineage(inputs=inputs, outputs=[_log_output(hook, release_log_uri)])


def release_lineage(
    hook: TxnLogHook,
    release_log_uri: str,
    versions: Mapping[str, int],
    *,
    committed: Collection[str] = (),
) -> Lineage:
    """The lineage of a task that left release `versions` current ({} when it failed before: the log
    only). `committed`: the tables whose version there is a commit of the task (a rollback's restore)."""
    from airflow.providers.openlineage.extractors import OperatorLineage  # noqa: PLC0415 - optional

    inputs: list[Dataset] = []
    outputs: list[Dataset] = []
    for uri, version in versions.items():
        made = uri in committed
        part = table_lineage(
            _Location(uri, hook),
            read_version=None if made else version,
            committed_version=version if made else None,
        )
        inputs += part.inputs
        outputs += part.outputs
    outputs.append(_log_output(hook, release_log_uri))
    return OperatorLineage(inputs=inputs, outputs=outputs)


def _log_output(hook: TxnLogHook, release_log_uri: str) -> Any:
    """The release log as an output dataset, named as a table location would be."""
    from openlineage.client.event_v2 import OutputDataset  # noqa: PLC0415 - optional

    (named,) = table_start_lineage(_Location(release_log_uri, hook)).inputs
    return OutputDataset(named.namespace, named.name)
