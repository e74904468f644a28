"""Liquid clustering (PROTOCOL.md "Clustered Table") and the column checks Z-order shares with it.

A clustered table has the `clustering` writer feature (with `domainMetadata`, writer version 7) and
a `delta.clustering` domain whose configuration is `{"clusteringColumns": [["c1"], ["c2"]]}`: each
key column as its path of *physical* names (Delta's ClusteringMetadataDomain; PROTOCOL.md's example
also shows the flat form `["c1", "c2"]`, which is read too). Changing the keys writes a new domain
action; removing them (Delta's `CLUSTER BY NONE`) writes an empty list: the table stays clustered
in the protocol, with no keys. Files a clustering OPTIMIZE wrote carry `clusteringProvider`
(`liquid`, Delta's implementation name); an OPTIMIZE re-clusters only files without a provider or
with its own, so another implementation's layout is left alone.

Key columns (`layout_columns`): existing top-level columns (nested paths are refused: the engine's
layouts read top-level columns), not partition columns (Delta: a table is never partitioned and
clustered at once; Z-order on a partition column is pointless, every file has one value), of a
type Delta collects min/max for (SkippingEligibleDataType: numbers, decimal, date, timestamps,
string), and with stats collected (within `delta.dataSkippingNumIndexedCols` or listed in
`delta.dataSkippingStatsColumns`): a layout data skipping cannot use is refused, as Delta does.
At most 4 clustering columns (Delta's clustering column limit); Z-order takes up to 64.

Delta's preview of the feature (writer feature `liquid`, domain `delta.liquid`, property
`delta.liquid.clusteringColumns`, in delta-rs's `table_with_liquid_clustering`) was never in the
protocol: such tables are read, never written (the feature is not in the supported set).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import orjson
import pyarrow as pa

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError, LogCorruptedError
from airflow_txnlog.engine.features import column_mapping
from airflow_txnlog.engine.log.actions import DomainMetadata
from airflow_txnlog.engine.log.stats import has_bounds, indexed_leaves, stats_columns

FEATURE = registry.CLUSTERING.name
DOMAIN = "delta.clustering"
PROVIDER = "liquid"
PREVIEW_FEATURE = registry.LIQUID.name  # (the preview's writer feature: the provider's word too)
MAX_CLUSTERING_COLUMNS = 4
MAX_ZORDER_COLUMNS = 64
CLUSTERING_COLUMNS_KEY = "clusteringColumns"


def _eligible(t: pa.DataType) -> bool:
    """Delta's SkippingEligibleDataType: the types it keeps min/max stats of (the engine's too)."""
    return has_bounds(t)


def layout_columns(
    columns: object,
    schema: pa.Schema,
    *,
    partition_columns: Sequence[str],
    conf: Mapping[str, str],
    what: str,
    limit: int,
) -> list[str]:
    """`columns` checked as layout keys of a table (see the module docstring): their names, as the
    schema spells them. `what` names the argument in errors (`cluster_by`, `zorder_by`)."""
    if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns:
        raise InvalidArgumentError(f"{what} must be a non-empty list of column names, got {columns!r}")
    if len(columns) > limit:
        raise InvalidArgumentError(f"{what} takes at most {limit} columns, got {len(columns)}")
    by_lower = {n.lower(): n for n in schema.names}
    indexed = {path[0].lower() for path, _ in _stats_leaves(schema, conf) if len(path) == 1}
    out: list[str] = []
    for col in columns:
        if not isinstance(col, str) or not col:
            raise InvalidArgumentError(f"{what}: a column name must be a non-empty string, got {col!r}")
        name = by_lower.get(col.lower())
        if name is None:
            hint = " (nested fields cannot be layout keys)" if "." in col else ""
            raise InvalidArgumentError(f"{what}: no column {col!r}{hint}; the table has {schema.names}")
        if name.lower() in (p.lower() for p in partition_columns):
            raise InvalidArgumentError(
                f"{what}: {name!r} is a partition column; every file holds one value of it, so only "
                "data columns can order a layout"
            )
        t = schema.field(name).type
        if not _eligible(t):
            raise InvalidArgumentError(
                f"{what}: column {name!r} has type {t}, which has no min/max statistics to skip files "
                "with; use numeric, decimal, date, timestamp or string columns"
            )
        if name.lower() not in indexed:
            raise InvalidArgumentError(
                f"{what}: column {name!r} gets no statistics under the table's "
                f"{props.NUM_INDEXED_COLS} / {props.STATS_COLUMNS}; collect stats for it first"
            )
        if name in out:
            raise InvalidArgumentError(f"{what}: column {name!r} is named twice")
        out.append(name)
    return out


def _stats_leaves(schema: pa.Schema, conf: Mapping[str, str]) -> list[tuple[tuple[str, ...], pa.Field]]:
    return indexed_leaves(
        schema, num_indexed_cols=props.num_indexed_cols(conf), stats_columns=stats_columns(conf)
    )


def domain_action(columns: Sequence[str], schema: pa.Schema, conf: Mapping[str, str]) -> DomainMetadata:
    """The `delta.clustering` domain naming `columns` (logical) by their physical names."""
    physical = column_mapping.physical_names(schema) if column_mapping.mode(conf) != "none" else {}
    paths = [[physical.get(c, c)] for c in columns]
    return DomainMetadata(DOMAIN, orjson.dumps({CLUSTERING_COLUMNS_KEY: paths}).decode())


def columns_of(domains: Mapping[str, str], schema: pa.Schema, conf: Mapping[str, str]) -> list[str]:
    """The clustering columns (logical names) of a table with these domains; [] when none."""
    raw = domains.get(DOMAIN)
    if raw is None:
        return []
    try:
        paths = orjson.loads(raw).get(CLUSTERING_COLUMNS_KEY, [])
    except (orjson.JSONDecodeError, AttributeError) as exc:
        raise LogCorruptedError(f"the {DOMAIN} domain is not a JSON object: {raw!r}") from exc
    logical: dict[str, str] = (
        {p: n for n, p in column_mapping.physical_names(schema).items()}
        if column_mapping.mode(conf) != "none"
        else {}
    )
    out = []
    for path in paths:
        parts = [path] if isinstance(path, str) else path
        if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
            raise LogCorruptedError(f"the {DOMAIN} domain has a malformed column path {path!r}")
        names = [str(p) for p in parts]
        out.append(".".join([logical.get(names[0], names[0]), *names[1:]]))
    return out
