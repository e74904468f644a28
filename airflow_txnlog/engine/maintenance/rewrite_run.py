"""One planned data rewrite, run: the files are given (a plan chose them), a writer writes their rows
anew, the engine commits exactly those files out and the written ones in.

    work     RewriteWork: groups of files (each group's files share one partition), how many files
             each group becomes (`outputs`), and the layout its rows are written in (RewriteLayout:
             none, Z-order or Hilbert clustering over named columns)
    writer   a RewriteWriter, `(snapshot, work) -> adds` (written, not committed):
               engine_writer   in this process, one group at a time: its rows read (deletion vectors
                               applied, row ids kept when the table tracks rows), ordered by the
                               layout's key, cut into `outputs` files of equal row counts; a group
                               that keeps no order and becomes one file (a compaction's bin, a
                               purge), or one past the memory budget, is streamed instead, one
                               input file's rows in memory at a time (engine.write.streamed; past
                               the budget, one file per run of input files of about equal rows)
               Spark's         airflow_txnlog.spark.maintenance.planned: the same work on a Spark
                               cluster (the caller's process never holds a group's rows)
    commit   one OPTIMIZE on a transaction that read the snapshot the files were chosen from: every
             input removed and every output added with dataChange=false (the output marked with the
             layout's clusteringProvider), Delta's OPTIMIZE metrics; rows neither checked again nor
             given new ids (they are the same rows)

Invariants: whoever writes, the commit is the engine's, so the conflict rules are the same (a
concurrent commit that removed an input fails the rewrite with ConcurrentDeleteDeleteError; an
append does not); a rewrite that does not commit deletes the files it wrote (also when the writer
itself fails half-way, through the adds it returned or none); a writer's adds must come from the
rewrite's partitions (one group never spreads into another partition), which is checked before the
commit.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import CommitConflictError, CommitRetriesExceededError, InvalidArgumentError
from airflow_txnlog.engine.features import row_tracking
from airflow_txnlog.engine.log.actions import AddFile
from airflow_txnlog.engine.maintenance.external_sort import write_sorted
from airflow_txnlog.engine.maintenance.maintenance_table import MaintenanceTable
from airflow_txnlog.engine.maintenance.plan_settings import DEFAULT_REWRITE_MEMORY
from airflow_txnlog.engine.maintenance.rewrite_layout import RewriteLayout
from airflow_txnlog.engine.schema import parse_partition_value
from airflow_txnlog.engine.state.snapshot import Snapshot, read_for_rewrite
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.validate import number
from airflow_txnlog.engine.write.streamed import write_streamed
from airflow_txnlog.engine.write.writer import delete_files, write_data_files


@dataclass(frozen=True)
class RewriteWork:
    """What one rewrite writes: `groups[i]` (one partition's files) becomes `outputs[i]` files, its
    rows in `layout`'s order."""

    groups: tuple[tuple[AddFile, ...], ...]
    outputs: tuple[int, ...]
    layout: RewriteLayout

    @property
    def files(self) -> list[AddFile]:
        return [f for g in self.groups for f in g]


RewriteWriter = Callable[[Snapshot, RewriteWork], list[AddFile]]


def engine_writer(storage: Storage, memory_bytes: int | None = None) -> RewriteWriter:
    """The engine's own writer (see the module docstring); `memory_bytes`: the input bytes of a
    group it sorts in memory (None: the table's `txnlog.maintenance.rewriteMemoryBytes`, else
    256 MiB); a larger group is sorted externally (engine.maintenance.external_sort)."""

    def write(snap: Snapshot, work: RewriteWork) -> list[AddFile]:
        budget = memory_bytes if memory_bytes is not None else _table_budget(snap)
        adds: list[AddFile] = []
        try:
            for group, outputs in zip(work.groups, work.outputs, strict=True):
                big = sum(f.size for f in group) > budget
                if work.layout.curve is None and (outputs == 1 or big):
                    for run in _runs(group, outputs):  # (one file per run, streamed)
                        adds += _stream_one(storage, snap, run)
                elif big:
                    adds += write_sorted(storage, snap, group, outputs, work.layout)
                else:
                    data = work.layout.order(read_for_rewrite(storage, snap, group))  # (row ids kept)
                    adds += _write_ordered(storage, snap, data, outputs)
        except BaseException:
            delete_files(storage, adds)
            raise
        return adds

    return write


def memory_budget(action: Mapping[str, Any]) -> int | None:
    """The rewrite memory budget a planned action carries (`estimate.rewrite_memory_bytes`: the
    plan's setting); None for an action without one (the run then takes the table's)."""
    value = (action.get("estimate") or {}).get("rewrite_memory_bytes")
    if value is None:
        return None
    number("estimate.rewrite_memory_bytes", value, minimum=1, integer=True)
    return int(value)


def _table_budget(snap: Snapshot) -> int:
    value = props.maintenance_values(snap.metadata.configuration).get("rewrite_memory_bytes")
    return int(value) if value is not None else DEFAULT_REWRITE_MEMORY


def _runs(group: Sequence[AddFile], outputs: int) -> list[list[AddFile]]:
    """The group's files, in order, in at most `outputs` consecutive runs of about equal rows (a
    file is never split: the runs end at file boundaries)."""
    rows = [max(1, f.num_records or 1) for f in group]
    total, before = sum(rows), 0
    runs: list[list[AddFile]] = [[] for _ in range(max(1, outputs))]
    for f, n in zip(group, rows, strict=True):
        runs[min(len(runs) - 1, before * len(runs) // total)].append(f)
        before += n
    return [r for r in runs if r]


def _stream_one(storage: Storage, snap: Snapshot, group: Sequence[AddFile]) -> list[AddFile]:
    """A group that keeps no order, as one file written input file by input file: one input's rows
    in memory at a time (engine.write.streamed), row ids kept (read_for_rewrite)."""
    conf = dict(snap.properties)
    hidden = row_tracking.hidden_columns(conf) if row_tracking.enabled(conf) else []
    pieces = (read_for_rewrite(storage, snap, [f]) for f in group)
    add = write_streamed(
        storage, pieces, group[0].partition_values, snap.partition_columns, conf,
        names=snap.column_names, hidden=hidden,
    )  # fmt: skip
    return [] if add is None else [add]


def _write_ordered(storage: Storage, snap: Snapshot, data: pa.Table, outputs: int) -> list[AddFile]:
    """`data` as `outputs` files of equal row counts, in order, written by a few threads at once
    (parquet encoding releases the GIL); on any failure the files written are deleted."""
    per = max(1, math.ceil(data.num_rows / outputs))
    chunks = [data.slice(i, per) for i in range(0, data.num_rows, per)] or [data]
    conf = dict(snap.properties)
    hidden = row_tracking.hidden_columns(conf) if row_tracking.enabled(conf) else []

    def one(chunk: pa.Table) -> list[AddFile]:
        return write_data_files(
            storage, chunk, snap.partition_columns, conf,
            max_rows_per_file=per, names=snap.column_names, hidden=hidden,
        )  # fmt: skip

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        futures = [pool.submit(one, c) for c in chunks]
    written = [f for f in futures if f.exception() is None]
    if len(written) < len(futures):
        delete_files(storage, [a for f in written for a in f.result()])
        raise next(f.exception() for f in futures if f.exception() is not None)  # type: ignore[misc]
    return [a for f in futures for a in f.result()]


def commit_rewrite(
    table: MaintenanceTable,
    snap: Snapshot,
    work: RewriteWork,
    *,
    parameters: Mapping[str, Any],
    metrics: Mapping[str, int] | None = None,
    writer: RewriteWriter | None = None,
    memory_bytes: int | None = None,
) -> tuple[int, list[AddFile]]:
    """`work` written by `writer` (default: the engine's) and committed as one OPTIMIZE reading
    `snap` (see the module docstring); (the version, the adds)."""
    txn = table.transaction("OPTIMIZE", dict(parameters), snapshot=snap)
    written = (writer or engine_writer(table.storage, memory_bytes))(snap, work)
    adds = [
        dataclasses.replace(a, data_change=False, clustering_provider=work.layout.provider) for a in written
    ]
    try:
        _check_partitions(snap, work, adds)
        removed = work.files
        for f in removed:
            txn.remove(f, data_change=False)
        for a in adds:
            txn.add(a)
        txn.rows_checked()  # (the same rows, rewritten: they kept the table's rules already)
        txn.rows_preserved()  # (row tracking: the writer carried every row's id into the new files)
        done = {
            "numRemovedFiles": len(removed),
            "numAddedFiles": len(adds),
            "numRemovedBytes": sum(f.size for f in removed),
            "numAddedBytes": sum(a.size for a in adds),
            **(metrics or {}),
        }
        return txn.commit(metrics=done), adds
    except BaseException as exc:
        if txn.attempts == 0 or isinstance(exc, CommitConflictError | CommitRetriesExceededError):
            delete_files(table.storage, adds)
        raise


def _check_partitions(snap: Snapshot, work: RewriteWork, adds: Sequence[AddFile]) -> None:
    """Every add lies in a partition the rewrite read (a writer bug must not move rows). Values are
    compared as values: writers may spell one differently (Delta on Spark writes a timestamp
    partition `2024-01-01 00:00:00`, the engine `2024-01-01 00:00:00.000000`)."""
    names = snap.column_names
    types = {
        (names.physical_of(c) if names is not None else c): snap.schema.field(c).type
        for c in snap.partition_columns
    }

    def values(add: AddFile) -> tuple[tuple[str, Any], ...]:
        return tuple(sorted((k, _comparable(v, types.get(k))) for k, v in add.partition_values.items()))

    read = {values(f) for f in work.files}
    stray = [a.path for a in adds if values(a) not in read]
    if stray:
        raise InvalidArgumentError(
            f"the rewrite's writer wrote {len(stray)} file(s) outside the partitions it read "
            f"(e.g. {stray[0]}); nothing was committed and they were deleted"
        )


def _comparable(text: str | None, arrow_type: pa.DataType | None) -> Any:
    if arrow_type is None:
        return text
    try:
        value = parse_partition_value(text, arrow_type)
    except (InvalidArgumentError, ValueError):
        return text
    return "NaN" if isinstance(value, float) and math.isnan(value) else value  # (NaN equals itself here)
