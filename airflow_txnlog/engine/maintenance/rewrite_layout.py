"""The layout a planned rewrite keeps: what `compact` and `purge_deletion_vectors` write must not undo
how the table is laid out (issue 38: a planned compaction of a clustered table once merged a
clustered file with five new ones into a file without `clusteringProvider`).

    cluster  the table has clustering keys: the rows of each output are ordered along the Hilbert
             curve over the keys (one key: sorted by it), with cut points drawn from the rows being
             rewritten, exactly as the engine's clustered OPTIMIZE orders a group
             (engine.maintenance.layout), and the output carries clusteringProvider=liquid. The
             commit's parameters are those of a clustered OPTIMIZE (`clusterBy`, `isFull=false`).
    zorder   otherwise, when the newest OPTIMIZE in the log that names `zOrderBy` columns (Delta's
             OPTIMIZE ZORDER BY, the engine's `optimize(zorder_by=...)`, or a planned compaction
             that kept them) names some: each output is Z-ordered over them and the commit records
             them again, so the order is remembered for as long as the log keeps a commit naming it.
    none     otherwise: the rows as they are read.

Invariants: a layout is decided from the table (clustering keys from the snapshot, Z-order from the
log), never from what a caller claims, except that a planned action carries the Z-order columns its
plan found (the run does not read the log again); a layout that cannot be kept (clustering keys
this engine cannot order by, Z-order columns the schema no longer has as layout keys) is an
`InvalidArgumentError` before anything is written: the rewrite is not done rather than done without
its layout. delta-rs's `z_order` records no columns (`plannerStrategy: zOrder` in its metrics
only), so a table only delta-rs Z-ordered is seen as unordered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.features import clustering
from airflow_txnlog.engine.log.log_reader import SkimmedCommit, read_commit_blobs, skim_commit
from airflow_txnlog.engine.log.log_segment import LogListing, list_log
from airflow_txnlog.engine.maintenance.curves import layout_keys
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage

CLUSTER, ZORDER, NONE = "cluster", "zorder", "none"
_CURVES = {CLUSTER: "hilbert", ZORDER: "zorder"}


@dataclass(frozen=True)
class RewriteLayout:
    """How the files of one planned rewrite are ordered and marked (see the module docstring);
    `version`: the commit the Z-order columns were read from."""

    mode: str = NONE
    columns: tuple[str, ...] = ()
    version: int | None = None

    @property
    def curve(self) -> str | None:
        return _CURVES.get(self.mode)

    @property
    def provider(self) -> str | None:
        """The clusteringProvider of the files this layout writes."""
        return clustering.PROVIDER if self.mode == CLUSTER else None

    def order(self, data: pa.Table) -> pa.Table:
        """`data` in the layout's key order (stable); unchanged without a curve."""
        curve = self.curve
        if curve is None or data.num_rows < 2:
            return data
        keys = layout_keys(data, list(self.columns), curve)
        return data.take(pa.array(np.argsort(keys, kind="stable")))

    def parameters(self, predicate: str) -> dict[str, str]:
        """The OPTIMIZE commit's operationParameters, Delta's names (`predicate` already JSON)."""
        out = {
            "predicate": predicate,
            "zOrderBy": json.dumps(list(self.columns) if self.mode == ZORDER else []),
        }
        if self.mode == CLUSTER:
            out.update({"clusterBy": json.dumps(list(self.columns)), "auto": "false", "isFull": "false"})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "columns": list(self.columns),
            "curve": self.curve,
            "version": self.version,
        }


def _clustered(snap: Snapshot, keys: Sequence[str]) -> RewriteLayout:
    nested = [k for k in keys if k not in snap.schema.names]
    if nested:
        raise InvalidArgumentError(
            f"the table is clustered by nested fields {nested}; this engine orders by top-level columns "
            "only, so it does not rewrite the table's files. Help: OPTIMIZE it with Delta"
        )
    return RewriteLayout(CLUSTER, tuple(keys))


def _zordered(snap: Snapshot, columns: object, version: int | None) -> RewriteLayout:
    try:
        checked = clustering.layout_columns(
            columns, snap.schema, partition_columns=snap.partition_columns,
            conf=snap.metadata.configuration, what="zorder_by", limit=clustering.MAX_ZORDER_COLUMNS,
        )  # fmt: skip
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(
            f"the table was Z-ordered by {columns!r} (version {version}), which no longer order it: "
            f"{exc}. Help: run optimize(zorder_by=[...]) with columns it has, then plan again"
        ) from exc
    return RewriteLayout(ZORDER, tuple(checked), version)


@dataclass
class ZOrderFinder:
    """The newest OPTIMIZE commit naming `zOrderBy` columns, from commits seen newest first (a rider
    of the planner's one backwards pass: vacuum_log.vacuum_history): `found` is (columns, version),
    None while none was seen; called with each commit, it answers whether it needs older ones."""

    found: tuple[list[str], int] | None = None

    def __call__(self, commit: SkimmedCommit) -> bool:
        info = commit.info
        if self.found is None and info.get("operation") == "OPTIMIZE":
            columns = _columns((info.get("operationParameters") or {}).get("zOrderBy"))
            if columns:
                self.found = (columns, commit.version)
        return self.found is None


def zorder_in_log(storage: Storage, listing: LogListing) -> tuple[list[str], int] | None:
    """(columns, version) of the newest OPTIMIZE commit in the log naming `zOrderBy` columns, or None.
    Skims the commits newest first (their commitInfo only) and stops there."""
    finder = ZOrderFinder()
    newest_first = sorted(listing.commits.items(), reverse=True)
    for version, name, data in read_commit_blobs(storage, newest_first):
        if not finder(skim_commit(version, name, data)):
            break
    return finder.found


def _columns(raw: Any) -> list[str]:
    """`zOrderBy` as Delta writes it (a JSON list in a string), or [] when it names none."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    if isinstance(value, list) and value and all(isinstance(c, str) and c for c in value):
        return list(value)
    return []


def table_layout(
    storage: Storage, snap: Snapshot, listing: LogListing | None = None, *, zorder: ZOrderFinder | None = None
) -> RewriteLayout:
    """The layout rewrites of `snap` keep: clustering keys first, else the log's Z-order (`zorder`:
    a finder that already saw the log, else the log is read, only for an unclustered table);
    InvalidArgumentError when it cannot be kept."""
    keys = snap.clustering_columns()
    if keys:
        return _clustered(snap, keys)
    if zorder is not None:
        found = zorder.found
    else:
        found = zorder_in_log(storage, listing if listing is not None else list_log(storage))
    return RewriteLayout() if found is None else _zordered(snap, found[0], found[1])


def run_layout(storage: Storage, snap: Snapshot, planned: Mapping[str, Any] | None) -> RewriteLayout:
    """The layout a run of a planned action keeps: the table's clustering keys whatever the action
    says (they are in the snapshot at no cost, and a clustered table is never written unclustered);
    otherwise the action's own `layout` (its plan read the log), or, for an action without one (made
    by hand, or by a plan older than layouts), the log's. A malformed `layout` is refused first."""
    mode = _planned_mode(planned)
    keys = snap.clustering_columns()
    if keys:
        return _clustered(snap, keys)
    if planned is None:
        return table_layout(storage, snap)
    if mode == ZORDER:
        return _zordered(snap, planned.get("columns") or [], planned.get("version"))
    return RewriteLayout()  # (none; or cluster on a table whose keys were removed since the plan)


def _planned_mode(planned: object) -> str | None:
    if planned is None:
        return None
    mode = planned.get("mode") if isinstance(planned, Mapping) else None
    if mode not in (CLUSTER, ZORDER, NONE):
        raise InvalidArgumentError(
            f"an action's 'layout' must be a mapping whose mode is one of {[CLUSTER, ZORDER, NONE]}, "
            f"got {planned!r}"
        )
    return str(mode)
