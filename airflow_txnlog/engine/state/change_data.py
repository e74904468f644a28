"""Change data feed on read (Delta PROTOCOL.md "Add CDC File", "Reader Requirements for AddCDCFile").

For each commit v in [start, end] (the commits must all exist, and the table must have
`delta.enableChangeDataFeed=true` from `start` on):

    commit has `cdc` actions  -> its changes are exactly the rows of those files (written by the
                                 writer under `_change_data/`, with a `_change_type` column:
                                 insert, delete, update_preimage, update_postimage); its add and
                                 remove actions are not read
    otherwise                 -> every add with dataChange=true is `insert` rows, every remove with
                                 dataChange=true is `delete` rows (read from the removed file, through
                                 the deletion vector it had; its partition values from the state when
                                 the remove lacks them); a remove and an add of the same path (its
                                 deletion vector changed) give just the rows the new DV deletes
                                 (`delete`) or gives back (`insert`); dataChange=false commits
                                 (OPTIMIZE) change nothing

Every row gets `_commit_version` and `_commit_timestamp` (the commit's timestamp: in-commit
timestamp when the table has them, else the log file's time made monotonic), the shape of
delta-rs's `load_cdf`. Rows come out in version order. Data columns are the end version's schema;
an older file lacking a column reads it as null.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError, LogCorruptedError
from airflow_txnlog.engine.log.actions import AddFile, Metadata, decode_path
from airflow_txnlog.engine.log.log_reader import read_commits
from airflow_txnlog.engine.log.log_segment import LogListing, list_log
from airflow_txnlog.engine.state.scan import read_file
from airflow_txnlog.engine.state.snapshot import Snapshot, commit_timestamps, load_snapshot
from airflow_txnlog.engine.storage import Storage

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
CDF_PROPERTY = props.CHANGE_DATA_FEED


def _file(d: dict[str, Any]) -> AddFile:
    """A cdc / add / remove action as the `AddFile` the scan reads (path, partition values, DV)."""
    return AddFile(
        path=decode_path(d["path"]),
        partition_values=dict(d.get("partitionValues") or {}),
        size=int(d.get("size") or 0),
        modification_time=0,
        deletion_vector=d.get("deletionVector"),
    )


class _Reader:
    def __init__(self, snapshot: Snapshot, columns: Sequence[str]):
        self.storage = snapshot.storage
        self.schema = snapshot.schema
        self.parts = snapshot.partition_columns
        self.names = snapshot.column_names
        self.deleted_rows = snapshot.deleted_rows
        self.columns = list(columns)

    def table(self, add: AddFile, version: int) -> pa.Table:
        try:
            return read_file(
                self.storage, add, self.schema, self.parts, columns=self.columns, row_filter=None,
                names=self.names,
            )  # fmt: skip
        except LogCorruptedError as exc:
            raise InvalidArgumentError(
                f"the changes of version {version} cannot be read: {exc}. Help: a vacuum may have deleted "
                "the file; read changes only within the table's deleted-file retention"
            ) from exc

    def rows(self, add: AddFile, kind: str | None, version: int) -> pa.Table:
        """The rows of one file, with `_change_type` (`kind`, or the cdc file's own column)."""
        table = self.table(add, version)
        if kind is None:
            try:
                with self.storage.fs.open(self.storage.resolve(add.path), "rb") as fh:
                    types = pq.ParquetFile(fh).read(columns=[CHANGE_TYPE]).column(CHANGE_TYPE)
            except (OSError, pa.ArrowException, KeyError) as exc:
                raise LogCorruptedError(f"change data file {add.path!r} has no {CHANGE_TYPE}: {exc}") from exc
            return table.append_column(CHANGE_TYPE, types.cast(pa.string()))
        return table.append_column(CHANGE_TYPE, pa.repeat(pa.scalar(kind), table.num_rows))

    def dv_change(self, before: AddFile, after: AddFile, version: int) -> list[pa.Table]:
        """One file whose deletion vector changed (remove + add of the same path): the rows the new
        DV deletes are `delete`, the rows it gives back are `insert` (a restore)."""
        old = set(self.deleted_rows(before).tolist())
        new = set(self.deleted_rows(after).tolist())
        whole = self.table(dataclasses.replace(after, deletion_vector=None), version)
        out = []
        for kind, rows in (("delete", new - old), ("insert", old - new)):
            if rows:
                picked = whole.take(pa.array(sorted(rows), pa.int64()))
                out.append(picked.append_column(CHANGE_TYPE, pa.repeat(pa.scalar(kind), picked.num_rows)))
        return out


def _commit_changes(
    reader: _Reader, actions: Sequence[dict[str, Any]], version: int, before: Callable[[], Snapshot]
) -> list[pa.Table]:
    """The change rows of one commit (see the module docstring)."""
    cdc = [a["cdc"] for a in actions if isinstance(a.get("cdc"), dict)]
    if cdc:
        return [reader.rows(_file(d), None, version) for d in cdc]
    by_path = {f.path: f for f in (_file(d) for d in _changing(actions, "add"))}
    out: list[pa.Table] = []
    for d in _changing(actions, "remove"):
        gone = _file(d)
        if reader.parts and d.get("partitionValues") is None:  # optional on removes: from the state
            gone = _known(before(), gone)
        again = by_path.pop(gone.path, None)
        if again is not None:  # the same file with another deletion vector
            out += reader.dv_change(gone, again, version)
        else:
            out.append(reader.rows(gone, "delete", version))
    out += [reader.rows(f, "insert", version) for f in by_path.values()]
    return out


def _changing(actions: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The `kind` (add / remove) actions of a commit that change data."""
    return [a[kind] for a in actions if isinstance(a.get(kind), dict) and a[kind].get("dataChange", True)]


def _known(snap: Snapshot, removed: AddFile) -> AddFile:
    """`removed` with the partition values (and deletion vector) the table had for it."""
    for f in snap.files():
        same_dv = removed.deletion_vector is None or f.deletion_vector == removed.deletion_vector
        if f.path == removed.path and same_dv:
            return dataclasses.replace(
                removed, partition_values=f.partition_values, deletion_vector=f.deletion_vector
            )
    return removed


TIMESTAMP = pa.timestamp("ms", tz="UTC")
_META_FIELDS = [(CHANGE_TYPE, pa.string()), (COMMIT_VERSION, pa.int64()), (COMMIT_TIMESTAMP, TIMESTAMP)]


def _checked_range(listing: LogListing, start: object, end: object) -> tuple[int, int]:
    latest = listing.latest()
    assert latest is not None
    end = latest if end is None else end
    for what, v in (("start_version", start), ("end_version", end)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise InvalidArgumentError(f"{what} must be a non-negative integer, got {v!r}")
    assert isinstance(start, int) and isinstance(end, int)
    if start > end or end > latest:
        raise InvalidArgumentError(f"cannot read changes of versions {start}..{end}; the latest is {latest}")
    if len(listing.run_from(start, end)) != end - start + 1:
        raise InvalidArgumentError(
            f"the commits of versions {start}..{end} are not all in the log (log cleanup?); changes "
            "can only be read while their commits exist"
        )
    return start, end


def _stamped(table: pa.Table, version: int, ts: int) -> pa.Table:
    n = table.num_rows
    table = table.append_column(COMMIT_VERSION, pa.repeat(pa.scalar(version, pa.int64()), n))
    return table.append_column(COMMIT_TIMESTAMP, pa.repeat(pa.scalar(ts, TIMESTAMP), n))


def changes(
    storage: Storage, start: int, end: int | None = None, *, columns: Sequence[str] | None = None
) -> pa.Table:
    """The rows that changed in versions `start`..`end` (see the module docstring)."""
    listing = list_log(storage)
    start, end = _checked_range(listing, start, end)
    final = load_snapshot(storage, end)
    cols = list(final.schema.names) if columns is None else list(columns)
    unknown = [c for c in cols if c not in final.schema.names]
    if unknown:
        raise InvalidArgumentError(f"unknown columns {unknown}; the table has {final.schema.names}")
    ict = final.table_properties.in_commit_timestamps
    stamps = commit_timestamps(storage, listing, in_commit_timestamps=ict)
    meta = load_snapshot(storage, start).metadata  # (commit `start` may change it again: applied below)
    reader = _Reader(final, cols)
    parts: list[pa.Table] = []
    for commit in read_commits(storage, listing.run_from(start, end)):
        meta = next((Metadata.from_wire(a["metaData"]) for a in commit.actions if "metaData" in a), meta)
        # (loaded once, and only when a remove lacks its partition values)
        before = functools.cache(functools.partial(load_snapshot, storage, commit.version - 1))
        if meta is None or not props.change_data_feed(meta.configuration):
            raise InvalidArgumentError(
                f"the change data feed is not enabled at version {commit.version}. Help: set "
                f"{CDF_PROPERTY}=true and read changes from the versions after that"
            )
        changed = _commit_changes(reader, commit.actions, commit.version, before)
        parts += [_stamped(t, commit.version, stamps[commit.version]) for t in changed]
    out = pa.schema([final.schema.field(c) for c in cols] + _META_FIELDS)
    return pa.concat_tables(parts).cast(out) if parts else out.empty_table()
