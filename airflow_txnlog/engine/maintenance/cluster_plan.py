"""When the planner clusters a clustered table: the `cluster` action, decided from the log alone.

    unclustered  the files without `clusteringProvider`: what the engine's clustered OPTIMIZE
                 rewrites (engine.maintenance.layout). Files another implementation clustered
                 (another provider) are never touched and count as clustered; files the engine
                 clustered (`liquid`) are clustered.
    share        unclustered bytes / all live bytes of the table.
    cluster      every unclustered file, rewritten as the engine's clustered OPTIMIZE rewrites them
                 (ordered along the Hilbert curve over the keys, ceil(bytes / target) files marked
                 `liquid`), when either
                   - the share is above `unclustered_fraction` (rule `unclustered_fraction`); the
                     plan's compaction then takes only files already clustered, or
                   - the plan rewrites other files of the table anyway (a compaction or a purge:
                     rule `with_rewrite`, observed: the files those rewrite). It comes first in the
                     plan, so when the compaction runs no unclustered byte is left outside it:
                     a compaction shrinks what it merges (each input's footer is dropped) and, with
                     unclustered bytes left elsewhere, would lower the clustered share by that much.
                 A table written within `quiet_minutes` waits (its writers are still at it).
Invariants: with these rules and planned rewrites writing clustered files
(engine.maintenance.rewrite_layout), running a plan's actions in order never lowers the share of
clustered bytes (tests/engine/maintenance/test_maintenance_layout.py checks it over random sequences); the
cluster action's files and the other rewrites' are disjoint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from airflow_txnlog.engine.maintenance.compaction_plan import MINUTE_MS, Decision, FileInfo
from airflow_txnlog.engine.maintenance.plan_settings import PlanSettings

KIND = "cluster"


def clusters_by_share(share: float, s: PlanSettings) -> bool:
    """Whether the unclustered share alone calls for clustering (then compaction leaves the
    unclustered files to the cluster action)."""
    return share > s.unclustered_fraction


def plan_clustering(
    unclustered: Sequence[FileInfo],
    share: float,
    s: PlanSettings,
    now_ms: int,
    *,
    newest: int,
    rewritten: int,
) -> Decision:
    """The cluster decision: `unclustered`, the unclustered files no other action of the plan takes;
    `share`, the unclustered share of the table's bytes; `newest`, the newest file's modification
    time; `rewritten`, how many files the plan's other rewrites take."""
    observed, limit = round(share, 6), s.unclustered_fraction
    if not unclustered:
        reason = (
            "every file is clustered" if share == 0 else "the plan's rewrites cluster every unclustered file"
        )
        return Decision(KIND, None, "unclustered_fraction", observed, limit, reason=reason)
    quiet_ms = int(s.quiet_minutes * MINUTE_MS)
    if newest and now_ms - newest < quiet_ms:
        minutes = round((now_ms - newest) / MINUTE_MS, 1)
        reason = f"written {minutes} min ago, within the quiet period of {s.quiet_minutes:g} min"
        return Decision(KIND, None, "quiet_period", minutes, s.quiet_minutes, reason=reason)
    if clusters_by_share(share, s):
        return _action(unclustered, s, "unclustered_fraction", observed, limit)
    if rewritten:
        return _action(unclustered, s, "with_rewrite", rewritten, 1)
    reason = f"{observed:.6g} of the bytes unclustered <= {limit:g}, and nothing else is rewritten"
    return Decision(KIND, None, "unclustered_fraction", observed, limit, reason=reason)


def _action(files: Sequence[FileInfo], s: PlanSettings, rule: str, observed: float, limit: float) -> Decision:
    read = sum(f.size for f in files)
    outputs = max(1, math.ceil(read / s.target_file_size))  # (as the clustered OPTIMIZE cuts them)
    written = sum(f.estimated_output for f in files) + outputs * files[0].overhead
    return Decision(
        KIND, None, rule, observed, limit, files=sorted(f.path for f in files),
        estimate={
            "files_after": outputs, "bytes_after": written, "files_before": len(files),
            "target_file_size": s.target_file_size, "file_overhead": files[0].overhead,
        },
        cost={"bytes_read": read, "bytes_written": written, "requests": len(files) + outputs},
        benefit={
            "files_removed": len(files) - outputs, "bytes_clustered": read, "bytes_reclaimed": read - written,
        },
    )  # fmt: skip
