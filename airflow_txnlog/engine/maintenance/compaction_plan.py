"""What one partition needs: compaction bins and deletion-vector purges, decided from file sizes,
row counts and deletion-vector cardinalities in the log (no data file is read).

    quiet        a partition with a file written within `quiet_minutes` is skipped (writers are
                 still at it: compacting now would be undone by the next small append);
    purge        a file that is not small and whose deletion vector deletes more than
                 `dv_purge_fraction` of its rows is rewritten alone (Delta's OPTIMIZE rule);
    compact      the small files (size < small_fraction x target; a small file with a deletion
                 vector goes here too: its rewrite drops the deleted rows) are packed by *estimated
                 output* bytes (payload: (size - per-file overhead) x live rows / rows) into
                 ceil(total / target) balanced bins (`pack`), so the outputs land near the target;
                 one-file bins are dropped
                 (rewriting a file alone only costs); files between small and large (1.8 x target) are
                 never inputs, nor are large ones (no splitting), so a compacted partition is not
                 compacted again. Fewer than `min_input_files` small files, or fewer than
                 `min_files_removed` files removed net, is a skip with its reason.
Bytes written are estimated as the inputs' payloads plus one per-file overhead per output (the
footer, page headers and dictionary pages every file carries: engine.maintenance.file_overhead): a
sum of input sizes counted that overhead once per input, which for files of a few rows is most of
their bytes.
Invariants: every file is in at most one bin or purge; every action and skip carries its rule, the
observed value and the threshold.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_txnlog.engine.maintenance.plan_settings import PlanSettings

MINUTE_MS = 60_000
_PATH, _OUTPUT = operator.attrgetter("path"), operator.attrgetter("estimated_output")


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One live file as the log describes it; `overhead`: the bytes every data file of the table
    carries before its rows. `deleted_fraction` and `estimated_output` (the bytes its live rows add
    to the file they are rewritten into: its size without the overhead, scaled by the share of rows
    kept) computed once."""

    path: str
    size: int
    modification_time: int
    num_records: int | None
    deleted_rows: int = 0
    overhead: int = 0
    deleted_fraction: float = field(init=False)
    estimated_output: int = field(init=False)

    def __post_init__(self) -> None:
        fraction = self.deleted_rows / self.num_records if self.num_records else 0.0
        object.__setattr__(self, "deleted_fraction", fraction)
        object.__setattr__(self, "estimated_output", int(max(0, self.size - self.overhead) * (1 - fraction)))


@dataclass(frozen=True)
class Decision:
    """An action (`files` set) or a skip (`reason` set) for one kind of maintenance."""

    kind: str
    partition: dict[str, Any] | None
    rule: str
    observed: Any
    threshold: Any
    files: list[str] = field(default_factory=list)
    bins: list[list[str]] = field(default_factory=list)
    estimate: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    benefit: dict[str, Any] = field(default_factory=dict)
    layout: dict[str, Any] = field(default_factory=dict)  # (rewrites: engine.maintenance.rewrite_layout)
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "reason"}
        if self.reason is not None:
            return {"kind": self.kind, "partition": self.partition, "reason": self.reason, **_rule(self)}
        for optional in ("bins", "layout"):
            if not out[optional]:
                out.pop(optional)
        return out


def _rule(d: Decision) -> dict[str, Any]:
    return {
        "rule": d.rule,
        "observed": d.observed,
        "threshold": d.threshold,
        "cost": d.cost,
        "benefit": d.benefit,
    }


def plan_partition(
    partition: dict[str, Any] | None,
    files: Sequence[FileInfo],
    s: PlanSettings,
    now_ms: int,
    *,
    newest: int | None = None,
) -> list[Decision]:
    """The compaction and purge decisions for one partition's live files (or only its candidates,
    with `newest` the modification time of its newest file)."""
    if newest is None:
        newest = max((f.modification_time for f in files), default=0)
    quiet_ms = int(s.quiet_minutes * MINUTE_MS)
    if newest and now_ms - newest < quiet_ms:
        minutes = round((now_ms - newest) / MINUTE_MS, 1)
        reason = f"written {minutes} min ago, within the quiet period of {s.quiet_minutes:g} min"
        return [Decision("compact", partition, "quiet_period", minutes, s.quiet_minutes, reason=reason)]
    small_bytes, purge_fraction = s.small_bytes, s.dv_purge_fraction
    small = [f for f in files if f.size < small_bytes]
    heavy = [f for f in files if f.size >= small_bytes and f.deleted_fraction > purge_fraction]
    return [_compaction(partition, small, s), *_purge(partition, heavy, s)]


def _compaction(partition: dict[str, Any] | None, small: list[FileInfo], s: PlanSettings) -> Decision:
    kind, limit = "compact", s.min_input_files
    if len(small) < limit:
        reason = f"healthy: {len(small)} small files < {limit}"
        return Decision(kind, partition, "min_input_files", len(small), limit, reason=reason)
    bins = [b for b in pack(small, s.target_file_size) if len(b) > 1]
    removed = sum(len(b) - 1 for b in bins)
    if removed < s.min_files_removed:
        reason = f"would remove {removed} files net < {s.min_files_removed}"
        return Decision(kind, partition, "min_files_removed", removed, s.min_files_removed, reason=reason)
    chosen = [f for b in bins for f in b]
    read = sum(f.size for f in chosen)
    written = sum(f.estimated_output for f in chosen) + sum(b[0].overhead for b in bins)  # (one per output)
    return Decision(
        kind,
        partition,
        "min_input_files",
        len(small),
        limit,
        files=[f.path for f in chosen],
        bins=[[f.path for f in b] for b in bins],
        estimate={
            "files_after": len(bins),
            "bytes_after": written,
            "files_before": len(chosen),
            "file_overhead": chosen[0].overhead,
        },
        cost={"bytes_read": read, "bytes_written": written, "requests": len(chosen) + len(bins)},
        benefit={"files_removed": removed, "bytes_reclaimed": read - written},
    )


def _purge(partition: dict[str, Any] | None, heavy: list[FileInfo], s: PlanSettings) -> list[Decision]:
    if not heavy:
        return []
    read = sum(f.size for f in heavy)
    written = sum(f.estimated_output + f.overhead for f in heavy)  # (each file rewritten alone)
    return [
        Decision(
            "purge_deletion_vectors",
            partition,
            "dv_purge_fraction",
            round(max(f.deleted_fraction for f in heavy), 6),
            s.dv_purge_fraction,
            files=[f.path for f in heavy],
            estimate={"files_after": len(heavy), "bytes_after": written},
            cost={"bytes_read": read, "bytes_written": written, "requests": 2 * len(heavy)},
            benefit={
                "deleted_rows_purged": sum(f.deleted_rows for f in heavy),
                "bytes_reclaimed": read - written,
            },
        )
    ]


def pack(files: Sequence[FileInfo], capacity: int) -> list[list[FileInfo]]:
    """The files in k = ceil(estimated output / capacity) bins, largest first into the emptiest
    (LPT, with a heap), so the outputs are alike and near the capacity rather than full ones and one
    small remainder; k grows while a bin would exceed 1.25 x the capacity."""
    total = sum(f.estimated_output for f in files)
    k = max(1, -(-total // max(capacity, 1)))
    # largest first, ties by path (two stable sorts: cheaper than a tuple key per file)
    ordered = sorted(sorted(files, key=_PATH), key=_OUTPUT, reverse=True)
    while True:
        bins: list[list[FileInfo]] = [[] for _ in range(k)]
        heap = [(0, i) for i in range(k)]
        for f in ordered:
            load, i = heapq.heappop(heap)
            bins[i].append(f)
            heapq.heappush(heap, (load + f.estimated_output, i))
        if max(load for load, _ in heap) <= 1.25 * capacity or k >= len(ordered):
            return [b for b in bins if b]
        k += 1
