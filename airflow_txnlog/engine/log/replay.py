"""Log replay: reconcile the actions of a checkpoint and the commits after it into table state.

Reconciliation (Delta protocol, "Action Reconciliation"):
- the latest `protocol` and `metaData` win; the latest `txn` per appId wins; the latest
  `domainMetadata` per domain wins (a `removed` one deletes the domain);
- file actions are keyed by (decoded path, deletion-vector id); for each key the newest action wins:
  a surviving `add` is a live file, a surviving `remove` is a tombstone.

State is kept in two layers so that large tables stay cheap:
- `base_adds` / `base_removes`: the checkpoint's file actions as Arrow struct arrays (never turned
  into Python objects unless asked for). A state read from a checkpoint holds only the fields of the
  file keys there; `source` (`CheckpointColumns`) reads any other field of the same rows on demand,
  so `live_base_adds(fields)` costs only the columns a caller uses;
- `tail`: a dict key -> (is_add, wire dict) of file actions from JSON commits after the checkpoint.
A key in `tail` hides the same key in the base layer. Applying more commits copies only the tail,
so a cached state is updated incrementally by reading just the new commits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.log.actions import (
    ADD,
    COMMIT_INFO,
    DOMAIN_METADATA,
    METADATA,
    PROTOCOL,
    REMOVE,
    TXN,
    Metadata,
    Protocol,
    Txn,
    decode_path,
)
from airflow_txnlog.engine.log.checkpoint_columns import CheckpointColumns
from airflow_txnlog.engine.log.stats_struct import may_contain

# A deletion vector descriptor as checkpoints store it (part of a file's reconciliation key).
DV_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)

# The file actions as a checkpoint stores them (`checkpoint`); `bulk_replay` derives from them the
# types it decodes JSON commits with.
STR_MAP = pa.map_(pa.string(), pa.string())
ADD_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STR_MAP),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
    ]
)
# Checkpoint tombstones serve VACUUM only: the protocol leaves `stats` and `tags` out of them. The
# deletion vector stays: it is part of the file's reconciliation key.
REMOVE_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", STR_MAP),
        ("size", pa.int64()),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),  # (row tracking: the removed add's, PROTOCOL.md "Row Tracking")
        ("defaultRowCommitVersion", pa.int64()),
    ]
)


def file_key(path: str, dv: Any = None) -> str:
    """Reconciliation key: the decoded path, plus the deletion vector's unique id when present.

    Absolute local paths are canonicalised as Spark does: `file:/x`, `file:///x` and `/x` are one file.
    """
    if path.startswith("file:"):
        path = "/" + path[5:].lstrip("/")
    if not dv:
        return path
    return f"{path}\x00{dv.get('storageType')}{dv.get('pathOrInlineDv')}@{dv.get('offset')}"


KEY_SEPARATOR = "\x00"  # between a file key's path and its deletion vector's id


def key_path(key: str) -> str:
    """The file path of a reconciliation key (`file_key` without its deletion-vector id)."""
    return key.split(KEY_SEPARATOR, 1)[0]


def key_paths(keys: pa.Array) -> pa.Array:
    """`key_path` of each key, in Arrow."""
    return pc.replace_substring_regex(keys, pattern="\\x00.*", replacement="")


def positions_not_in(keys: pa.Array, others: pa.Array) -> list[int]:
    """Positions of `keys` that are not among `others` (ascending)."""
    return pc.indices_nonzero(pc.invert(pc.is_in(keys, value_set=others))).to_pylist()  # type: ignore[no-any-return]


def _key_of(d: dict[str, Any]) -> str:
    path: str = d["path"]
    # The hot path of JSON replay: most paths need no decoding and have no deletion vector.
    if "%" not in path and not path.startswith("file:") and not d.get("deletionVector"):
        return path
    return file_key(decode_path(path), d.get("deletionVector"))


def struct_keys(arr: pa.StructArray) -> pa.Array:
    """`file_key` of each row of a struct array of file actions (path, deletionVector), vectorized
    in the common case (no decoding, canonicalising or deletion vector needed)."""
    path_col = arr.field("path").cast(pa.string())
    has_dv = arr.type.get_field_index("deletionVector") >= 0 and arr.field("deletionVector").null_count < len(
        arr
    )
    # Fast path (the common case): nothing to decode or canonicalise, the column is the key.
    needs_work = may_contain(path_col, b"%", b"file:") and bool(
        pc.any(pc.match_substring_regex(path_col, r"%|^file:")).as_py()
    )
    if not has_dv and not needs_work:
        return path_col
    paths = path_col.to_pylist()
    dvs: list[Any] = arr.field("deletionVector").to_pylist() if has_dv else [None] * len(paths)
    keys = [file_key(decode_path(p), dv) for p, dv in zip(paths, dvs, strict=True)]
    return pa.array(keys, type=pa.string())


@dataclass(frozen=True)
class LogState:
    """Reconciled state of the table at `version`."""

    version: int
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)
    base_adds: pa.StructArray | None = None
    base_add_keys: pa.Array | None = None  # decoded keys of base_adds, same order
    base_removes: pa.StructArray | None = None
    base_remove_keys: pa.Array | None = None
    tail: dict[str, tuple[bool, dict[str, Any]]] = field(default_factory=dict)
    commit_infos: dict[int, dict[str, Any]] = field(default_factory=dict)
    source: CheckpointColumns | None = None  # the rest of the base rows' fields, read on demand

    def apply(self, version: int, actions: Iterable[dict[str, Any]], *, name: str = "") -> LogState:
        """State after one more commit (does not modify self)."""
        return _Applier(self).run([(version, actions, name)])

    def apply_many(self, commits: Sequence[tuple[int, Iterable[dict[str, Any]], str]]) -> LogState:
        return _Applier(self).run(commits) if commits else self

    # ------------------------------------------------------------------ derived views
    @cached_property
    def _hidden(self) -> pa.Array:
        return pa.array(list(self.tail.keys()), type=pa.string())

    @cached_property
    def _live_add_mask(self) -> pa.Array | None:
        return self._live_mask(self.base_add_keys)

    @cached_property
    def _live_remove_mask(self) -> pa.Array | None:
        return self._live_mask(self.base_remove_keys)

    def live_base_add_mask(self) -> pa.Array | None:
        """Per checkpoint add row: is it still live, not replaced by a later commit? None when every
        row is (computed once: a hash lookup of every checkpoint key, ~22 ms at 1M files)."""
        return self._live_add_mask

    def _live_mask(self, keys: pa.Array | None) -> pa.Array | None:
        """Per base row: is its key not replaced by a later commit? (None: every row is live)."""
        if keys is None or not self.tail:
            return None
        hidden = pc.is_in(keys, value_set=self._hidden)
        return None if not pc.any(hidden).as_py() else pc.invert(hidden)

    def _base_rows(
        self, column: str, rows: pa.StructArray | None, mask: pa.Array | None, fields: Sequence[str] | None
    ) -> pa.StructArray | None:
        if rows is None:
            return None
        if self.source is not None:
            rows = self.source.read(column, fields)
        elif fields is not None:
            # (never zero fields: a struct of none has no length; `path` keeps the row count; a
            # dotted name, part of a field, gets all of it: in memory there is nothing to save)
            tops = dict.fromkeys(f.partition(".")[0] for f in fields)
            present = [f for f in tops if rows.type.get_field_index(f) >= 0] or ["path"]
            rows = pa.StructArray.from_arrays([rows.field(f) for f in present], names=present)
        return rows if mask is None else rows.filter(mask)

    def live_base_adds(self, fields: Sequence[str] | None = None) -> pa.StructArray | None:
        """The checkpoint's add rows no later commit replaced: `fields` of them (every field if None;
        names the checkpoint lacks are left out)."""
        return self._base_rows(ADD, self.base_adds, self._live_add_mask, fields)

    def live_base_add_derived(
        self, name: str, fn: Callable[[pa.Array], pa.Array]
    ) -> pa.Array | pa.ChunkedArray | None:
        """`fn` over field `name` of the live checkpoint add rows, read in batches and not kept
        (`CheckpointColumns.derive`); None when the rows are in memory (then `live_base_adds`)."""
        if self.base_adds is None or self.source is None:
            return None
        out = self.source.derive(ADD, name, fn)
        mask = self._live_add_mask
        return out if mask is None else out.filter(mask)

    def live_base_add_keys(self) -> list[str]:
        if self.base_add_keys is None:
            return []
        mask = self._live_add_mask
        keys = self.base_add_keys if mask is None else self.base_add_keys.filter(mask)
        return keys.to_pylist()  # type: ignore[no-any-return]

    def live_base_removes(self, fields: Sequence[str] | None = None) -> pa.StructArray | None:
        return self._base_rows(REMOVE, self.base_removes, self._live_remove_mask, fields)

    def live_add_keys(self) -> pa.Array:
        """Keys of the live files, Arrow, in `Snapshot.files()` order (base rows, then tail adds)."""
        tail = pa.array(self.tail_add_keys(), pa.string())
        if self.base_add_keys is None:
            return tail
        mask = self._live_add_mask
        base = self.base_add_keys if mask is None else self.base_add_keys.filter(mask)
        return pa.concat_arrays([base.cast(pa.string()), tail])

    def live_add_sizes(self) -> pa.Array:
        """`size` of the live files (0 where missing), in the order of `live_add_keys`."""
        tail = pa.array([int(d.get("size") or 0) for d in self.tail_adds()], pa.int64())
        base = self.live_base_adds(["size"])
        if base is None or base.type.get_field_index("size") < 0:
            return pa.concat_arrays([pc.fill_null(pa.nulls(len(base or ()), pa.int64()), 0), tail])
        return pa.concat_arrays([pc.fill_null(base.field("size").cast(pa.int64()), 0), tail])

    def live_removes(self) -> pa.Table:
        """The tombstones as columns: key, deletion_timestamp (0 where missing), size (null where missing)."""
        rows = self.tail_removes()
        keys = [k for k, (is_add, _) in self.tail.items() if not is_add]
        cols = {
            "key": pa.array(keys, pa.string()),
            "deletion_timestamp": pa.array([int(d.get("deletionTimestamp") or 0) for d in rows], pa.int64()),
            "size": pa.array([d.get("size") for d in rows], pa.int64()),
        }
        base = self.live_base_removes(["deletionTimestamp", "size"])
        if base is None or self.base_remove_keys is None:
            return pa.table(cols)
        mask = self._live_remove_mask
        base_keys = self.base_remove_keys if mask is None else self.base_remove_keys.filter(mask)
        fields = {base.type.field(i).name: base.field(i) for i in range(base.type.num_fields)}
        n = len(base_keys)
        ts = fields.get("deletionTimestamp", pa.nulls(n, pa.int64()))
        size = fields.get("size", pa.nulls(n, pa.int64()))
        return pa.table(
            {
                "key": pa.concat_arrays([base_keys.cast(pa.string()), cols["key"]]),
                "deletion_timestamp": pa.concat_arrays(
                    [pc.fill_null(ts.cast(pa.int64()), 0), cols["deletion_timestamp"]]
                ),
                "size": pa.concat_arrays([size.cast(pa.int64()), cols["size"]]),
            }
        )

    def deletion_vectors(self, *, removed_after: int | None = None) -> list[dict[str, Any]]:
        """The `deletionVector` descriptors of the live files or, with `removed_after` (ms), of the
        tombstones deleted after that time; files without one are left out."""
        fields = ["deletionVector", "deletionTimestamp"]
        removes = removed_after is not None
        base = self.live_base_removes(fields) if removes else self.live_base_adds(fields)
        out: list[dict[str, Any]] = []
        if base is not None and base.type.get_field_index("deletionVector") >= 0:
            dvs = base.field("deletionVector")
            keep = dvs.is_valid()
            if removes and base.type.get_field_index("deletionTimestamp") >= 0:
                ts = pc.fill_null(base.field("deletionTimestamp"), 0)
                keep = pc.and_(keep, pc.greater(ts, removed_after))
            if pc.any(keep).as_py():
                out = dvs.filter(keep).to_pylist()
        tail = self.tail_removes() if removes else self.tail_adds()
        after = removed_after if removed_after is not None else -1
        out.extend(
            d["deletionVector"]
            for d in tail
            if d.get("deletionVector") and (not removes or (d.get("deletionTimestamp") or 0) > after)
        )
        return out

    def tail_adds(self) -> list[dict[str, Any]]:
        return [d for is_add, d in self.tail.values() if is_add]

    def tail_removes(self) -> list[dict[str, Any]]:
        return [d for is_add, d in self.tail.values() if not is_add]

    def tail_add_keys(self) -> list[str]:
        return [k for k, (is_add, _) in self.tail.items() if is_add]

    def num_base_files(self) -> int:
        """The live files that are checkpoint rows (the first ones of `live_add_keys`)."""
        if self.base_adds is None:
            return 0
        mask = self._live_add_mask
        return len(self.base_adds) if mask is None else int(pc.sum(mask).as_py() or 0)

    def num_files(self) -> int:
        return self.num_base_files() + sum(1 for a, _ in self.tail.values() if a)

    def require_complete(self) -> None:
        if self.protocol is None:
            raise LogCorruptedError(f"no protocol action found while reconstructing version {self.version}")
        if self.metadata is None:
            raise LogCorruptedError(f"no metaData action found while reconstructing version {self.version}")


class _Applier:
    """Applies commits in order to a copy of a state's mutable parts."""

    def __init__(self, state: LogState) -> None:
        self.state = state
        self.protocol = state.protocol
        self.metadata = state.metadata
        self.txns = dict(state.txns)
        self.domains = dict(state.domains)
        self.tail = dict(state.tail)
        self.infos = dict(state.commit_infos)

    def run(self, commits: Sequence[tuple[int, Iterable[dict[str, Any]], str]]) -> LogState:
        version = self.state.version
        for version, actions, name in commits:
            for action in actions:
                try:
                    self._one(version, action, name)
                except (KeyError, TypeError, AttributeError, ValueError) as exc:
                    raise LogCorruptedError(
                        f"{name or version}: malformed action {action!r:.200}: {exc!r}"
                    ) from exc
        return replace(
            self.state,
            version=version,
            protocol=self.protocol,
            metadata=self.metadata,
            txns=self.txns,
            domains=self.domains,
            tail=self.tail,
            commit_infos=self.infos,
        )

    def _one(self, version: int, action: dict[str, Any], name: str) -> None:
        if (d := action.get(ADD)) is not None:
            self.tail[_key_of(d)] = (True, d)
        elif (d := action.get(REMOVE)) is not None:
            self.tail[_key_of(d)] = (False, d)
        elif (d := action.get(COMMIT_INFO)) is not None:
            self.infos[version] = d
        elif (d := action.get(TXN)) is not None:
            self.txns[d["appId"]] = Txn.from_wire(d)
        elif (d := action.get(METADATA)) is not None:
            try:
                self.metadata = Metadata.from_wire(d)
            except KeyError as exc:
                raise LogCorruptedError(f"{name}: metaData is missing field {exc}") from exc
        elif (d := action.get(PROTOCOL)) is not None:
            self.protocol = Protocol.from_wire(d)
        elif (d := action.get(DOMAIN_METADATA)) is not None:
            if d.get("removed"):
                self.domains.pop(d["domain"], None)
            else:
                self.domains[d["domain"]] = d
        # cdc and unknown actions do not affect the snapshot.
