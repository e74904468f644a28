"""Which manifests may list a file: Iceberg's partition summaries, read the way Iceberg prunes.

A sync that removes files must rewrite the manifests that list them, and finding those means
reading manifests (every entry decoded: ~30 us each with pyiceberg, seconds for a 100k-file table).
A manifest list entry carries, per partition field, whether any file of the manifest has a null
value there and the lower / upper bounds of the others (PartitionFieldSummary, bounds in Iceberg's
single-value binary form). A removed file whose partition value lies outside a manifest's bounds for
some field is not listed in it, so that manifest is kept as it is, unread: a DELETE or MERGE on a
few partitions of a table partitioned by day reads the manifests of those days only.

Invariant: pruning only skips a manifest that cannot list the file. Anything unknown means "may":
no summaries, a file whose partition values the remove does not carry (they are optional in a Delta
remove), values that do not compare, and float / double partition fields altogether: a float32
bound holds the stored bits while the remove's text ("0.1" from another writer) parses to a double
that lies outside it, and pyiceberg 0.12's compiled decoder rounds doubles
(engine.uniform.manifest_reads). A summary without bounds says every value of the field is null
(or NaN), as Iceberg's manifest evaluator reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pyiceberg.conversions import from_bytes
from pyiceberg.manifest import ManifestFile, PartitionFieldSummary
from pyiceberg.types import IcebergType, PrimitiveType

# A removed file's partition values in the spec's field order, Iceberg's representation (None: unknown).
Partition = tuple[Any, ...] | None


def may_list(manifest: ManifestFile, types: Sequence[IcebergType], partitions: Iterable[Partition]) -> bool:
    """May `manifest` list a file of one of `partitions` (the partition types `types`)?"""
    summaries = manifest.partitions
    if not types or summaries is None or len(summaries) != len(types):
        return True
    return any(p is None or len(p) != len(types) or _within(summaries, types, p) for p in partitions)


def _within(
    summaries: Sequence[PartitionFieldSummary], types: Sequence[IcebergType], values: tuple[Any, ...]
) -> bool:
    for summary, t, value in zip(summaries, types, values, strict=True):
        if value is None:
            if not summary.contains_null:
                return False
        elif isinstance(value, float) or not isinstance(t, PrimitiveType):
            continue  # (floats: a float32 bound against a double value, written text vs stored bits)
        elif summary.lower_bound is None or summary.upper_bound is None:
            return False  # (no bounds: every value there is null or NaN, as Iceberg's evaluator reads it)
        else:
            low, high = from_bytes(t, summary.lower_bound), from_bytes(t, summary.upper_bound)
            try:
                if not low <= value <= high:
                    return False
            except TypeError:  # (values that do not compare: unknown)
                continue
    return True
