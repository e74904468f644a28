"""A snapshot: the table as of one version, loaded from a log segment and updated incrementally.

Loading (`load_snapshot`): list the log (from the `_last_checkpoint` hint when it is usable), pick
the newest usable checkpoint <= target, read it, replay the contiguous JSON commits after it
(`segment_state`). If a checkpoint cannot be read, the next older one (or a full replay from commit
0) is tried, so a corrupt checkpoint yields either a correct snapshot or a `LogCorruptedError` naming
the file; within one load no bad checkpoint is read twice, nor a commit an older checkpoint's attempt
needs again. The protocol is checked before any data is read: reader features we do not implement
raise `UnsupportedFeatureError`.

`Snapshot.update()` reads only the commits after its own version.

Files: the checkpoint's adds stay an Arrow struct array until asked for, then become `AddFile`s column
by column (`add_files.select_adds`, also used by restore), every field kept (tags, deletion vector, row
tracking, clustering provider); where a writer left stats only in `stats_parsed`, they are rendered as
the JSON `stats` (`checkpoint.add_stats_json`), so pruning and later checkpoints keep them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import (
    InvalidArgumentError,
    LogCorruptedError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.features import clustering, column_mapping, generated, type_widening
from airflow_txnlog.engine.features import row_tracking as tracking
from airflow_txnlog.engine.features.deletion_vectors import deleted_rows
from airflow_txnlog.engine.features.table_features import check_read_supported
from airflow_txnlog.engine.log.actions import IN_COMMIT_TIMESTAMP, AddFile, Metadata, Protocol, RemoveFile
from airflow_txnlog.engine.log.log_reader import (
    list_after,
    read_commit_infos,
    read_last_checkpoint,
)
from airflow_txnlog.engine.log.log_segment import (
    LogListing,
    LogSegment,
    list_log,
    monotonic_timestamps,
)
from airflow_txnlog.engine.log.replay import KEY_SEPARATOR, LogState, key_path, positions_not_in
from airflow_txnlog.engine.schema import parse_partition_value, schema_from_json
from airflow_txnlog.engine.sql.generated_pruning import derive
from airflow_txnlog.engine.sql.literals import stats_value
from airflow_txnlog.engine.sql.predicates import Predicate, Range, parse_predicate
from airflow_txnlog.engine.state.add_actions import (
    FileTable,
    add_actions_table,
    file_table,
    json_stats_only,
)
from airflow_txnlog.engine.state.add_files import select_adds
from airflow_txnlog.engine.state.scan import read_files
from airflow_txnlog.engine.state.segment_state import SegmentReads, load_segment, replay
from airflow_txnlog.engine.state.skipping import may_match_mask
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.validate import names


class Snapshot:
    """The table at one version. Cheap to keep: file actions stay columnar until asked for."""

    def __init__(self, storage: Storage, state: LogState, segment: LogSegment, timestamps: dict[int, int]):
        state.require_complete()
        assert state.protocol is not None and state.metadata is not None
        self._storage = storage
        self._state = state
        self._segment = segment
        self._timestamps = timestamps
        self.version = state.version
        self.protocol: Protocol = state.protocol
        self.metadata: Metadata = state.metadata
        check_read_supported(self.protocol, self.metadata)

    # ------------------------------------------------------------------ table-level facts
    @cached_property
    def schema(self) -> pa.Schema:
        schema = schema_from_json(self.metadata.schema_string)
        missing = [c for c in self.metadata.partition_columns if c not in schema.names]
        if missing:
            raise LogCorruptedError(f"partition columns {missing} are not in the table schema")
        return schema

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns)

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.configuration)

    @cached_property
    def table_properties(self) -> props.TableProperties:
        """The table properties as typed values, parsed once for this version (each on first use)."""
        return props.TableProperties(self.metadata.configuration)

    @property
    def checkpoint_version(self) -> int | None:
        return self._segment.checkpoint_version

    @property
    def state(self) -> LogState:
        return self._state

    @property
    def storage(self) -> Storage:
        return self._storage

    @property
    def timestamp(self) -> int:
        """Commit timestamp of this version, ms since the epoch."""
        info = self._state.commit_infos.get(self.version) or {}
        if props.in_commit_timestamps(self.metadata.configuration) and IN_COMMIT_TIMESTAMP in info:
            return int(info[IN_COMMIT_TIMESTAMP])
        return self._timestamps.get(self.version, 0)

    def domain_metadata(self) -> dict[str, str]:
        """The live metadata domains of this version: domain -> configuration (PROTOCOL.md "Domain
        Metadata"; `delta.*` domains are Delta features' own, the others any writer's)."""
        return {name: str(d.get("configuration") or "") for name, d in sorted(self._state.domains.items())}

    def clustering_columns(self) -> list[str]:
        """The clustering keys (logical names) of a clustered table; [] otherwise or after CLUSTER BY NONE."""
        return clustering.columns_of(self.domain_metadata(), self.schema, self.metadata.configuration)

    def txn_version(self, app_id: str) -> int | None:
        txn = self._state.txns.get(app_id)
        return txn.version if txn is not None else None

    # ------------------------------------------------------------------ files
    @cached_property
    def _all_files(self) -> list[AddFile]:
        return select_adds(self._state)

    def file_paths(self) -> list[str]:
        """Decoded paths of the live files, in `files()` order (fast: no per-file objects)."""
        keys = self._state.live_base_add_keys() + self._state.tail_add_keys()
        if any(KEY_SEPARATOR in k for k in keys):  # files with deletion vectors: keys carry the DV id
            return [key_path(k) for k in keys]
        return keys

    def file_keys(self) -> pa.Array:
        """The live files' reconciliation keys (decoded path, plus the deletion vector's id when it
        has one) as Arrow, in `files()` order: for set operations without per-file objects."""
        return self._state.live_add_keys()

    def file_sizes(self) -> pa.Array:
        """The live files' sizes in bytes, in `files()` order."""
        return self._state.live_add_sizes()

    def tombstone_table(self) -> pa.Table:
        """The tombstones as columns `key`, `deletion_timestamp` (ms, 0 where unknown), `size`."""
        return self._state.live_removes()

    def files_not_in(self, other: Snapshot) -> list[AddFile]:
        """The live files of this snapshot that are not live in `other` (by key, in Arrow)."""
        return self.files_at(positions_not_in(self.file_keys(), other.file_keys()))

    def files_at(self, positions: Sequence[int]) -> list[AddFile]:
        """The live files at `positions` of `files()` order, the only ones made into objects."""
        if "_all_files" in self.__dict__:
            return [self._all_files[i] for i in positions]
        return select_adds(self._state, positions)

    @property
    def num_files(self) -> int:
        return self._state.num_files()

    @property
    def size_bytes(self) -> int:
        return int(pc.sum(self.file_sizes()).as_py() or 0)

    def files(self, filter: str | None = None) -> list[AddFile]:
        """Live files; with `filter`, only those whose partition values / stats may match it."""
        if filter is None:
            return list(self._all_files)
        return self._select(self._mask(self._pruning(parse_predicate(filter, self.schema))))

    @cached_property
    def _files(self) -> FileTable:
        """The live files as Arrow (`add_actions.file_table`), built once per snapshot."""
        return file_table(
            self._state.live_base_adds,
            self._state.tail_adds(),
            self.metadata,
            names=self.column_names,
            derived=self._state.live_base_add_derived,
            json_only=json_stats_only(self._state),
        )

    @cached_property
    def column_names(self) -> column_mapping.Names | None:
        """How logical column names map to the files' physical ones (None without column mapping)."""
        return column_mapping.Names.of(self.metadata)

    @cached_property
    def _add_actions(self) -> pa.Table:
        return add_actions_table(self._files.table, self.schema, self.partition_columns)

    def parsed_base_stats(self) -> pa.Array | pa.ChunkedArray | None:
        """The live checkpoint rows' stats, parsed from their JSON by an earlier `add_actions()` as a
        checkpoint writes them (`FileTable.parsed_base_stats`), or None: never parsed here."""
        files = self.__dict__.get("_files")
        return None if files is None else files.parsed_base_stats

    def add_actions(self, filter: str | None = None) -> pa.Table:
        """One row per live file, in delta-rs's `get_add_actions(flatten=True)` layout (plus
        `data_change`): path, size_bytes, modification_time, data_change, num_records,
        null_count.<col>, min.<col>, max.<col>, partition.<col>, typed with the table's column types.
        With `filter`, only the files whose partition values / stats may match it (as `files`)."""
        if filter is None:
            return self._add_actions
        return self._add_actions.filter(self._mask(self._pruning(parse_predicate(filter, self.schema))))

    def file_summary(self) -> pa.Table:
        """One row per live file (in `files()` order): path, size_bytes, modification_time,
        data_change, num_records and typed partition.<col>; no per-column stats, so a big table
        costs a fraction of `add_actions` (what the maintenance planner reads)."""
        narrow = file_table(
            self._state.live_base_adds, self._state.tail_adds(), self.metadata,
            columns=frozenset(), names=self.column_names, with_files=True,
            derived=self._state.live_base_add_derived,
        ).table  # fmt: skip
        return add_actions_table(narrow, self.schema, self.partition_columns)

    def _pruning(self, pred: Predicate) -> Predicate:
        """`pred` for file pruning: with the partition filters it implies on generated partition
        columns ANDed to it (engine.sql.generated_pruning)."""
        computed = generated.enforced(self.metadata, self.protocol)
        extra = derive(pred.tree, self.schema, computed, self.partition_columns) if computed else None
        if extra is None:
            return pred
        parts = frozenset(c for c in computed if c in self.partition_columns)
        return dataclasses.replace(pred, tree=("and", pred.tree, extra), columns=pred.columns | parts)

    def _mask(self, pred: Predicate) -> pa.Array:
        """Per live file (in `files()` order): may a row of it match? (`skipping.may_match_mask`).
        Until the full file table exists, a narrow one with only the predicate's columns is built
        (and kept per column set): pruning a big table reads just those stats."""
        loaded = self.__dict__.get("_files")
        files = None if loaded is None else loaded.table
        if files is None:
            files = self._pruning_tables.get(pred.columns)
            if files is None:
                files = file_table(
                    self._state.live_base_adds,
                    self._state.tail_adds(),
                    self.metadata,
                    columns=pred.columns,
                    names=self.column_names,
                    derived=self._state.live_base_add_derived,
                    json_only=json_stats_only(self._state),
                ).table
                self._pruning_tables[pred.columns] = files
        inexact = pred.columns & self._inexact_stats
        if inexact:  # widened from float: their old stats bound nothing (engine.features.type_widening)
            prefixes = tuple(f"{p}.{c}" for p in ("min", "max") for c in inexact)
            files = files.drop_columns([n for n in files.column_names if n.startswith(prefixes)])
        return may_match_mask(pred.tree, files, self.schema, self.partition_columns)

    @cached_property
    def _inexact_stats(self) -> frozenset[str]:
        return type_widening.inexact_stats_columns(self.schema)

    @cached_property
    def _pruning_tables(self) -> dict[frozenset[str], pa.Table]:
        return {}

    def _select(self, mask: pa.Array) -> list[AddFile]:
        """The live files where `mask` is TRUE."""
        return self.files_at(pc.indices_nonzero(mask).to_pylist())

    def file_ranges(self, add: AddFile, columns: frozenset[str]) -> dict[str, Range]:
        """Per referenced column, what the file's partition values or stats say about it."""
        ranges: dict[str, Range] = {}
        parts = set(self.metadata.partition_columns)
        data_cols = columns - parts
        exact = any(pa.types.is_decimal(self.schema.field(c).type) for c in data_cols)
        stats = add.parsed_stats(exact_decimals=exact) if data_cols else None
        n = stats.get("numRecords") if stats else None
        for c in columns:
            t = self.schema.field(c).type
            if c in parts:
                v = parse_partition_value(add.partition_values.get(c), t)
                ranges[c] = Range(v, v, 1 if v is None else 0, 1)
            elif stats:
                nulls = (stats.get("nullCount") or {}).get(c)
                ranges[c] = Range(
                    stats_value((stats.get("minValues") or {}).get(c), t, is_max=False),
                    stats_value((stats.get("maxValues") or {}).get(c), t, is_max=True),
                    # (a struct column's null counts are per leaf: a dict says nothing of the struct)
                    nulls if isinstance(nulls, int) else None,
                    n,
                )
        return ranges

    def tombstones(self) -> list[RemoveFile]:
        """The tombstones as objects (`tombstone_table` for columns only)."""
        base = self._state.live_base_removes()
        out = [RemoveFile.from_wire(r) for r in base.to_pylist()] if base is not None else []
        out.extend(RemoveFile.from_wire(d) for d in self._state.tail_removes())
        return out

    def deleted_rows(self, add: AddFile) -> np.ndarray[Any, np.dtype[np.uint64]]:
        """Row positions (in file order, ascending) that `add`'s deletion vector deletes; empty
        when it has none. Readers drop these rows (`to_arrow` does)."""
        if not add.deletion_vector:
            return np.empty(0, dtype=np.uint64)
        return deleted_rows(self._storage, add.deletion_vector, data_file=add.path)

    def to_arrow(
        self, columns: list[str] | None = None, filter: str | None = None, *, row_tracking: bool = False
    ) -> pa.Table:
        """Rows of this version (partition columns included), optionally filtered by a SQL predicate.
        `row_tracking=True` (a table with row tracking enabled) adds `_row_id` and
        `_row_commit_version`: each row's stable id and commit version (PROTOCOL.md "Row Tracking")."""
        columns = names("columns", columns, none_means="every column")
        row_ids = self._row_tracking_conf() if row_tracking else None
        predicate = parse_predicate(filter, self.schema) if filter is not None else None
        files = self.files() if predicate is None else self._select(self._mask(self._pruning(predicate)))
        return read_files(
            self._storage,
            files,
            self.schema,
            self.partition_columns,
            columns=columns,
            row_filter=predicate,
            names=self.column_names,
            row_ids=row_ids,
        )

    def _row_tracking_conf(self) -> dict[str, str]:
        conf = self.metadata.configuration
        if not tracking.enabled(conf):
            raise InvalidArgumentError(
                "row ids need row tracking enabled on the table (delta.enableRowTracking=true); "
                "Help: set_properties({'delta.enableRowTracking': 'true'}) assigns them"
            )
        taken = {n.lower() for n in self.schema.names} & {tracking.ROW_ID, tracking.ROW_COMMIT_VERSION}
        if taken:
            raise InvalidArgumentError(
                f"the table has a column named {sorted(taken)[0]!r}: row ids cannot be added"
            )
        return dict(conf)

    # ------------------------------------------------------------------ incremental update
    def update(self, *, until: int | None = None) -> Snapshot:
        """The latest snapshot (or the one at `until`), reading only the commits after this one."""
        listing = list_after(self._storage, self.version)
        newest = max((v for v in listing.commits if until is None or v <= until), default=None)
        if newest is None:
            return self
        commits = listing.run_from(self.version + 1, until)
        if not commits or commits[-1][0] != newest:  # a gap: some commit is not visible yet
            return load_snapshot(self._storage, until)
        if self._state.source is not None and any(v <= newest for v in listing.checkpoints):
            # A newer checkpoint (the listing starts after this version): rebase on it. This
            # snapshot reads its own checkpoint's columns lazily, and log cleanup may remove that
            # file once a newer one exists. (A state held all in memory needs no rebase.)
            return load_snapshot(self._storage, newest)
        state = replay(self._storage, self._state, commits)
        after = self._timestamps.get(self.version)
        ts = {**self._timestamps, **monotonic_timestamps(dict(commits), after=after)}
        segment = LogSegment(
            newest,
            self._segment.checkpoint_version,
            self._segment.checkpoint_parts,
            self._segment.commits + commits,
        )
        return Snapshot(self._storage, state, segment, ts)


def load_snapshot(storage: Storage, version: int | None = None) -> Snapshot:
    """Snapshot of `version` (latest if None)."""
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 0):
        raise InvalidArgumentError(f"version must be a non-negative integer, got {version!r}")
    hint = read_last_checkpoint(storage)
    hint_version = hint.version if hint and (version is None or hint.version <= version) else None
    listing = list_log(storage, hint_version=hint_version)
    target = listing.latest() if version is None else version
    assert target is not None
    if not listing.complete and version is not None and version > (listing.latest() or -1):
        listing = list_log(storage)
    reads = SegmentReads()  # (a second try on the whole listing starts from what the first learnt)
    try:
        state, segment = load_segment(storage, listing, target, reads)
    except (LogCorruptedError, VersionNotFoundError):
        if listing.complete:
            raise
        listing = list_log(storage)
        state, segment = load_segment(storage, listing, target, reads)
    return Snapshot(storage, state, segment, monotonic_timestamps(listing.commits))


def version_at(storage: Storage, timestamp: dt.datetime | str | int, *, in_commit_timestamps: bool) -> int:
    """Latest version whose commit timestamp is <= `timestamp` (ms, ISO string or datetime).

    A timestamp after the last commit gives the latest version ("as of now").
    """
    ts_ms = to_epoch_ms(timestamp)
    listing = list_log(storage)
    stamps = commit_timestamps(storage, listing, in_commit_timestamps=in_commit_timestamps)
    candidates = [v for v, t in stamps.items() if t <= ts_ms]
    if not candidates:
        first = min(stamps.values()) if stamps else None
        raise VersionNotFoundError(
            f"timestamp {timestamp!r} is before the earliest commit available"
            + (f" ({dt.datetime.fromtimestamp(first / 1000, dt.UTC).isoformat()})" if first else "")
        )
    return max(candidates)


def commit_timestamps(storage: Storage, listing: LogListing, *, in_commit_timestamps: bool) -> dict[int, int]:
    """Each listed commit's timestamp (ms): its `inCommitTimestamp` when the table has them and the
    commit carries one, else its file time made monotonic (`monotonic_timestamps`)."""
    stamps = monotonic_timestamps(listing.commits)
    return _in_commit_timestamps(storage, listing, stamps) if in_commit_timestamps else stamps


def _in_commit_timestamps(storage: Storage, listing: LogListing, stamps: dict[int, int]) -> dict[int, int]:
    out = dict(stamps)
    for v, info in read_commit_infos(storage, sorted(listing.commits.items())):
        if IN_COMMIT_TIMESTAMP in info:
            out[v] = int(info[IN_COMMIT_TIMESTAMP])
    return out


def to_epoch_ms(value: dt.datetime | dt.date | str | int) -> int:
    """Milliseconds since the epoch of a datetime (naive = UTC), ISO-8601 string or integer ms."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"invalid timestamp {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidArgumentError(f"invalid timestamp {value!r}: expected ISO-8601") from exc
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return to_epoch_ms(dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC))
    raise InvalidArgumentError(f"invalid timestamp {value!r}")


def read_for_rewrite(storage: Storage, snap: Snapshot, files: Sequence[AddFile]) -> pa.Table:
    """The rows of `files` as a rewrite (OPTIMIZE) copies them: with row tracking enabled, each
    row's stable id and commit version in the table's hidden columns, so the new files keep them
    (write them with `hidden=row_tracking.hidden_columns(conf)`)."""
    conf = dict(snap.properties)
    tracked = conf if tracking.enabled(conf) else None
    data = read_files(
        storage, files, snap.schema, snap.partition_columns, names=snap.column_names, row_ids=tracked
    )
    return data if tracked is None else tracking.to_hidden(data, conf)
