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
A partition's files come as columns (`PartitionFiles`: numpy arrays and an Arrow array of paths,
the same arithmetic as `FileInfo`, which the clustering decision still uses), so a partition of a
million small files is sorted by pyarrow and packed by one loop over integers.
Invariants: every file is in at most one bin or purge; every action and skip carries its rule, the
observed value and the threshold.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog._shown import shown
from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.maintenance.plan_settings import PlanSettings

MINUTE_MS = 60_000


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


@dataclass(frozen=True)
class PartitionFiles:
    """One partition's candidate files as columns (the planner's inputs at a million files are never
    a million objects): `path` an Arrow array, the rest numpy arrays in the same order; `output`
    and `fraction` as FileInfo computes them (the same float arithmetic, so the same plans)."""

    path: pa.Array
    size: np.ndarray
    modification_time: np.ndarray
    deleted: np.ndarray
    fraction: np.ndarray
    output: np.ndarray
    overhead: int

    @classmethod
    def of(cls, rows: pa.Table, overhead: int) -> PartitionFiles:
        """From the planner's file table (`path`, `size_bytes`, `modification_time`, `num_records`,
        `_deleted`)."""

        def ints(name: str) -> np.ndarray:
            return np.asarray(pc.fill_null(rows.column(name), 0).to_numpy(), dtype=np.int64)

        size, records, deleted = ints("size_bytes"), ints("num_records"), ints("_deleted")
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(records != 0, deleted / np.where(records != 0, records, 1), 0.0)
        output = (np.maximum(0, size - overhead) * (1 - fraction)).astype(np.int64)  # (int(): toward 0)
        mtime = ints("modification_time")
        return cls(rows.column("path").combine_chunks(), size, mtime, deleted, fraction, output, overhead)

    def __len__(self) -> int:
        return len(self.path)

    @cached_property
    def names(self) -> list[str]:
        """The paths as Python strings, made once (the bins' and the sort's: a bin names its files
        by these same strings)."""
        return list(self.path.to_pylist())

    def paths(self, rows: np.ndarray) -> list[str]:
        """The paths of `rows` (positions), in that order."""
        names = self.names
        return [names[i] for i in rows.tolist()]

    def slice(self, start: int, stop: int) -> PartitionFiles:
        """Files `start` to `stop` (views, no copy of the arrays)."""
        cut = slice(start, stop)
        return PartitionFiles(
            self.path.slice(start, stop - start), self.size[cut], self.modification_time[cut],
            self.deleted[cut], self.fraction[cut], self.output[cut], self.overhead,
        )  # fmt: skip


def plan_partition(
    partition: dict[str, Any] | None,
    files: PartitionFiles,
    s: PlanSettings,
    now_ms: int,
    *,
    newest: int | None = None,
) -> list[Decision]:
    """The compaction and purge decisions for one partition's live files (or only its candidates,
    with `newest` the modification time of its newest file)."""
    if newest is None:
        newest = int(files.modification_time.max()) if len(files) else 0
    quiet_ms = int(s.quiet_minutes * MINUTE_MS)
    if newest and now_ms - newest < quiet_ms:
        minutes = round((now_ms - newest) / MINUTE_MS, 1)
        reason = f"written {minutes} min ago, within the quiet period of {s.quiet_minutes:g} min"
        return [Decision("compact", partition, "quiet_period", minutes, s.quiet_minutes, reason=reason)]
    small = files.size < s.small_bytes
    heavy = ~small & (files.fraction > s.dv_purge_fraction)
    return [
        _compaction(partition, files, np.flatnonzero(small), s),
        *_purge(partition, files, np.flatnonzero(heavy), s),
    ]


def _compaction(
    partition: dict[str, Any] | None, files: PartitionFiles, small: np.ndarray, s: PlanSettings
) -> Decision:
    kind, limit = "compact", s.min_input_files
    if len(small) < limit:
        reason = f"healthy: {len(small)} small files < {limit}"
        return Decision(kind, partition, "min_input_files", len(small), limit, reason=reason)
    bins = [b for b in pack(files, small, s.target_file_size) if len(b) > 1]
    removed = sum(len(b) - 1 for b in bins)
    if removed < s.min_files_removed:
        reason = f"would remove {removed} files net < {s.min_files_removed}"
        return Decision(kind, partition, "min_files_removed", removed, s.min_files_removed, reason=reason)
    chosen = np.concatenate(bins)
    flat = files.paths(chosen)  # (one take for every bin; each bin a slice of the same strings)
    ends = np.cumsum([len(b) for b in bins]).tolist()
    paths = [flat[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]
    read = int(files.size[chosen].sum())
    written = int(files.output[chosen].sum()) + len(bins) * files.overhead  # (one overhead per output)
    return Decision(
        kind,
        partition,
        "min_input_files",
        len(small),
        limit,
        files=flat,  # (the bins' own strings: a path is held once)
        bins=paths,
        estimate={
            "files_after": len(bins),
            "bytes_after": written,
            "files_before": len(chosen),
            "file_overhead": files.overhead,
        },
        cost={"bytes_read": read, "bytes_written": written, "requests": len(chosen) + len(bins)},
        benefit={"files_removed": removed, "bytes_reclaimed": read - written},
    )


def _purge(
    partition: dict[str, Any] | None, files: PartitionFiles, heavy: np.ndarray, s: PlanSettings
) -> list[Decision]:
    if not len(heavy):
        return []
    read = int(files.size[heavy].sum())
    written = int(files.output[heavy].sum()) + len(heavy) * files.overhead  # (each file rewritten alone)
    return [
        Decision(
            "purge_deletion_vectors",
            partition,
            "dv_purge_fraction",
            round(float(files.fraction[heavy].max()), 6),
            s.dv_purge_fraction,
            files=files.paths(heavy),
            estimate={"files_after": len(heavy), "bytes_after": written},
            cost={"bytes_read": read, "bytes_written": written, "requests": 2 * len(heavy)},
            benefit={
                "deleted_rows_purged": int(files.deleted[heavy].sum()),
                "bytes_reclaimed": read - written,
            },
        )
    ]


SMALL_SORT = 256  # below this many files a Python sort beats building an Arrow table to sort


def _largest_first(files: PartitionFiles, chosen: np.ndarray) -> np.ndarray:
    """Positions in `chosen` ordered by output bytes, largest first, ties by path (paths are unique)."""
    outputs = files.output[chosen]
    if len(outputs) <= SMALL_SORT:
        outs, names = outputs.tolist(), files.paths(chosen)
        return np.array(sorted(range(len(outs)), key=lambda j: (-outs[j], names[j])), dtype=np.int64)
    keys = pa.table({"o": outputs, "p": files.path.take(pa.array(chosen, pa.int64()))})
    return np.asarray(pc.sort_indices(keys, sort_keys=[("o", "descending"), ("p", "ascending")]).to_numpy())


# From this many files a bin on, bins are dealt in serpentine order instead of by LPT's heap: with so
# many files a bin LPT's balance is reached anyway, and a million-file partition costs no Python loop.
SERPENTINE_FILES_PER_BIN = 8


def _deal(loads: np.ndarray, k: int) -> np.ndarray:
    """The bin of each load (largest first): LPT (each into the emptiest bin, with a heap), or with
    at least SERPENTINE_FILES_PER_BIN loads a bin the serpentine order 0..k-1, k-1..0, ... (bins'
    totals then differ by at most the largest load)."""
    n = len(loads)
    if n >= SERPENTINE_FILES_PER_BIN * k:
        rounds, column = np.divmod(np.arange(n, dtype=np.int64), k)
        return np.where(rounds % 2 == 0, column, k - 1 - column)
    heap, assigned = [(0, i) for i in range(k)], [0] * n
    for pos, load in enumerate(loads.tolist()):
        least, i = heap[0]
        assigned[pos] = i
        heapq.heapreplace(heap, (least + load, i))
    return np.asarray(assigned, dtype=np.int64)


def pack(files: PartitionFiles, chosen: np.ndarray, capacity: int) -> list[np.ndarray]:
    """The `chosen` files in k = ceil(estimated output / capacity) bins, largest first (`_deal`),
    so the outputs are alike and near the capacity rather than full ones and one small remainder; k
    grows while a bin would exceed 1.25 x the capacity. Bins are index arrays into `files`, each in
    the order its files were placed."""
    outputs = files.output[chosen]
    total = int(outputs.sum())
    k = max(1, -(-total // max(capacity, 1)))
    order = _largest_first(files, chosen)
    ordered = chosen[order]  # (largest first, ties by path)
    if k == 1 and (total <= 1.25 * capacity or len(ordered) <= 1):
        return [ordered]  # (one bin: every file, in order; the heap would place them so)
    loads = outputs[order]
    k = max(k, 2)
    while True:
        bin_of = _deal(loads, k)
        if np.bincount(bin_of, weights=loads, minlength=k).max() <= 1.25 * capacity or k >= len(loads):
            by_bin = np.argsort(bin_of, kind="stable")  # (each bin's files in placement order)
            cuts = np.cumsum(np.bincount(bin_of, minlength=k))[:-1]
            return [ordered[b] for b in np.split(by_bin, cuts) if len(b)]
        k += 1


def action_dict(action: object) -> Mapping[str, Any]:
    """A plan's action as its dict: a `Decision` converted (`to_dict`), a mapping as it is; a skip
    or anything else refused, naming what was given and what is expected."""
    if isinstance(action, Decision):
        action = action.to_dict()
    if not isinstance(action, Mapping):
        raise InvalidArgumentError(
            f"run_maintenance: action must be one of a plan's actions (a Decision of "
            f"plan_maintenance().actions, or its to_dict()), got {type(action).__name__}: {shown(action)}"
        )
    if action.get("reason") is not None:
        raise InvalidArgumentError(
            f"run_maintenance: the {action.get('kind')!r} decision is a skip, not an action "
            f"({action.get('reason')}); run only a plan's actions"
        )
    return action
