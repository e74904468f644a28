"""OpenLineage datasets for the txnlog operators (used through the openlineage provider's operator hooks).

The provider calls `get_openlineage_facets_on_start()` before `execute` and
`get_openlineage_facets_on_complete(task_instance)` after it (`TxnLogBaseOperator` defines both);
they return an `OperatorLineage` built here. What a task reports follows from two versions it
remembers while it runs: the version it read and the version it committed.

- A commit makes the table an *output* at the committed version, and an *input* at the version the
  commit read (its commitInfo `readVersion`; a blind write that read nothing has no input).
- No commit (an idempotent write already done, a DML that matched nothing, a read-only task such as
  health or checkpoint) makes the table an *input* only, at the version read or, when the task did
  not say, the latest version when lineage is collected (right after `execute`).

Each table dataset carries the schema facet (Delta type names; struct columns with nested
`fields`), the dataset version facet (the table version, as a string) and the storage facet
(`delta` / the file format); an output also carries the output statistics facet from the commit's
operationMetrics (rows = logical rows written: added + updated; files added; bytes added), with
each figure left out when unknown. START events name the table as an input without facets: the
versions are only known once the task ran.

Names follow https://openlineage.io/docs/spec/naming on the URI the hook resolved (`dataset_name`).

Nothing here is imported at DAG-parse time: the operators import this module inside their lineage
methods, and this module imports the openlineage packages and the engine inside its functions, so
without the `openlineage` extra the operators behave as if this module did not exist.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from airflow_txnlog.operators._figures import commit_figures

if TYPE_CHECKING:
    from typing import TypeAlias

    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.event_v2 import Dataset
    from openlineage.client.facet_v2 import RunFacet

    from airflow_txnlog.engine import Table
    from airflow_txnlog.hooks.txnlog import TxnLogHook

    Lineage: TypeAlias = OperatorLineage[Dataset, RunFacet]  # what the provider's operator hooks return


class LineageOperator(Protocol):
    """What lineage needs of an operator (`TxnLogBaseOperator` is one): its table and its hook.
    A structural type, so this module never imports the operators that import it."""

    table_uri: str

    @property
    def hook(self) -> TxnLogHook: ...


_S3 = {"s3", "s3a", "s3n"}  # Hadoop's s3a / s3n name the same buckets as s3
_AZURE_DFS = {"abfs", "abfss", "az"}  # adlfs: `abfs://container/path` with the account in the options
_AZURE_BLOB = {"wasb", "wasbs"}
_BYTES_METRICS = ("numOutputBytes", "numAddedBytes", "numTargetBytesAdded", "restoredFilesSize")


def dataset_name(uri: str, storage_options: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(namespace, name) of a location by OpenLineage's naming rules.

    Local paths and `file://` URIs: `file` + the absolute path. s3 (s3a, s3n): `s3://<bucket>` + the
    key. gs (gcs): `gs://<bucket>` + the key. Azure (abfs, abfss, az / wasb, wasbs):
    `abfss|wasbs://<container>@<account>.dfs.core.windows.net` + the path, the account taken from
    the URI or the `account_name` storage option. Anything else: `<scheme>://<authority>` + the path.
    """
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        return "file", os.path.abspath(parts.path if scheme == "file" else uri)
    key = parts.path.strip("/")
    if scheme in _S3:
        return f"s3://{parts.netloc}", key
    if scheme in ("gs", "gcs"):
        return f"gs://{parts.netloc}", key
    if scheme in _AZURE_DFS | _AZURE_BLOB:
        container, _, account = parts.netloc.partition("@")
        if not account:
            account = str((storage_options or {}).get("account_name") or "")
        if account and "." not in account:
            account = f"{account}.dfs.core.windows.net"
        prefix = "abfss" if scheme in _AZURE_DFS else "wasbs"
        return f"{prefix}://{container}@{account}" if account else f"{prefix}://{container}", key
    return f"{scheme}://{parts.netloc}", key


def table_lineage(
    operator: LineageOperator,
    *,
    read_version: int | None,
    committed_version: int | None,
    table_uri: str | None = None,
    extra_inputs: Sequence[str] = (),
) -> Lineage:
    """The lineage of a task that read and/or committed one txnlog table (see the module docstring).

    :param operator: the task's operator: its hook resolves and opens the table.
    :param read_version: the version the task read; None: the commit's `readVersion` when it
        committed, else the table's latest version.
    :param committed_version: the version the task committed, or None when it committed nothing
        (then the table is an input only).
    :param table_uri: the table, when not `operator.table_uri` (resolved through the hook as well).
    :param extra_inputs: locations the task read besides the table (e.g. a source path), named by
        `dataset_name`, without facets.
    """
    from airflow.providers.openlineage.extractors import OperatorLineage  # noqa: PLC0415 - optional
    from openlineage.client.event_v2 import InputDataset, OutputDataset  # noqa: PLC0415

    from airflow_txnlog.engine import TableNotFoundError  # noqa: PLC0415 - no pyarrow at parse time

    hook = operator.hook
    namespace, name = _name(operator, hook.resolve_uri(table_uri or operator.table_uri))
    inputs = _plain_inputs(operator, extra_inputs)
    try:
        table = hook.get_table(table_uri or operator.table_uri)
    except TableNotFoundError:  # e.g. a write that failed before creating the table
        return OperatorLineage(inputs=inputs)
    outputs: list[Dataset] = []
    if committed_version is not None:
        info, added_bytes = _commit(table, committed_version)
        if read_version is None and isinstance(info.get("readVersion"), int):
            read_version = info["readVersion"]
        facets = _table_facets(table, committed_version)
        stats = _output_statistics(info, added_bytes)
        out_facets = {"outputStatistics": stats} if stats is not None else {}
        outputs.append(OutputDataset(namespace, name, facets=facets, outputFacets=out_facets))
    elif read_version is None:
        read_version = table.latest_version()
    if read_version is not None:
        inputs.insert(0, InputDataset(namespace, name, facets=_table_facets(table, read_version)))
    return OperatorLineage(inputs=inputs, outputs=outputs)


def start_lineage(operator: LineageOperator, *, extra_inputs: Sequence[str] = ()) -> Lineage:
    """The START event's lineage: the table (and `extra_inputs`) as inputs, named only (no table I/O)."""
    from airflow.providers.openlineage.extractors import OperatorLineage  # noqa: PLC0415 - optional
    from openlineage.client.event_v2 import InputDataset  # noqa: PLC0415

    namespace, name = _name(operator, operator.hook.resolve_uri(operator.table_uri))
    return OperatorLineage(inputs=[InputDataset(namespace, name), *_plain_inputs(operator, extra_inputs)])


def _plain_inputs(operator: LineageOperator, uris: Sequence[str]) -> list[Dataset]:
    from openlineage.client.event_v2 import InputDataset  # noqa: PLC0415 - optional

    return [InputDataset(*_name(operator, uri)) for uri in uris]


def _name(operator: LineageOperator, uri: str) -> tuple[str, str]:
    """`dataset_name`, reading the connection only for an Azure URI without its account.

    The provider runs the START hook before `execute` has looked the connection up, by default in
    a forked process; an absolute URI is then named without any connection lookup from that fork.
    """
    parts = urlsplit(uri)
    azure = parts.scheme.lower() in _AZURE_DFS | _AZURE_BLOB and "@" not in parts.netloc
    return dataset_name(uri, operator.hook.storage_options_for(uri) if azure else None)


def _commit(table: Table, version: int) -> tuple[dict[str, Any], int | None]:
    """(commitInfo, bytes of the files it added) of one commit, from that one file ({} / None if gone)."""
    from airflow_txnlog.engine.spi import (  # noqa: PLC0415
        LOG_DIR,
        commit_name,
        log_reader,
    )

    try:
        data = table.storage.read(f"{LOG_DIR}/{commit_name(version)}")
    except FileNotFoundError:
        return {}, None
    actions = log_reader.parse_commit(data, name=commit_name(version))
    sizes = [a["add"].get("size") for a in actions if isinstance(a.get("add"), dict)]
    added = sum(s for s in sizes if isinstance(s, int)) if all(isinstance(s, int) for s in sizes) else None
    return log_reader.commit_info(actions), added


def _output_statistics(info: Mapping[str, Any], added_bytes: int | None) -> Any | None:
    """rows / bytes / files a commit wrote, from its operationMetrics (see `commit_figures`)."""
    from openlineage.client.facet_v2 import output_statistics_output_dataset as stats  # noqa: PLC0415

    if not info:
        return None
    figures = commit_figures(dict(info))
    written = [figures[k] for k in ("num_added_rows", "num_updated_rows") if k in figures]
    metrics = info.get("operationMetrics") or {}
    size = next((int(metrics[m]) for m in _BYTES_METRICS if m in metrics), added_bytes)
    facet = stats.OutputStatisticsOutputDatasetFacet(
        rowCount=sum(written) if written else None, size=size, fileCount=figures.get("num_added_files")
    )
    return facet if (facet.rowCount, facet.size, facet.fileCount) != (None, None, None) else None


def _table_facets(table: Table, version: int) -> dict[str, Any]:
    """Version, schema and storage facets of the table at `version` (version only if it is unreadable)."""
    from openlineage.client.facet_v2 import (  # noqa: PLC0415 - optional
        dataset_version_dataset,
        schema_dataset,
        storage_dataset,
    )

    from airflow_txnlog.engine import TxnLogError  # noqa: PLC0415

    facets: dict[str, Any] = {"version": dataset_version_dataset.DatasetVersionDatasetFacet(str(version))}
    try:
        metadata = table.snapshot(version).metadata
    except TxnLogError:  # e.g. the version's log was cleaned up since: the version is still known
        return facets
    import orjson  # noqa: PLC0415

    fields = orjson.loads(metadata.schema_string).get("fields", [])
    facets["schema"] = schema_dataset.SchemaDatasetFacet(fields=[_field(f) for f in fields])
    facets["storage"] = storage_dataset.StorageDatasetFacet(
        storageLayer="delta", fileFormat=metadata.format_provider
    )
    return facets


def _field(field: Mapping[str, Any]) -> Any:
    """A schema facet field of a Delta schema field: struct columns get nested `fields`."""
    from openlineage.client.facet_v2 import schema_dataset  # noqa: PLC0415 - optional

    from airflow_txnlog.engine.spi import type_text  # noqa: PLC0415 - no pyarrow at parse time

    dtype = field.get("type")
    nested = dtype.get("fields", []) if isinstance(dtype, dict) and dtype.get("type") == "struct" else []
    return schema_dataset.SchemaDatasetFacetFields(
        name=str(field.get("name")), type=type_text(dtype), fields=[_field(f) for f in nested]
    )
