"""Replaying many JSON commits in bulk: file actions decoded by Arrow, reconciled by sorting.

A table without a checkpoint (or read from version 0) can have thousands of commits and hundreds of
thousands of file actions. Replaying them one Python dict at a time (`replay._Applier`) costs about
10 us per action; here the file actions never become Python objects:

1. every commit file is read (batched `read_many`) and split into lines; a line that starts with
   `{"add":` or `{"remove":` is a file action (one object per line, its only key the action), every
   other line (protocol, metaData, commitInfo, txn, domainMetadata, ...) is parsed with orjson and
   applied by the ordinary applier, so those rules exist once;
2. the add lines, then the remove lines, are joined into newline-delimited documents and decoded by
   `pyarrow.json` with an explicit schema (partition values as a struct over the table's partition
   columns; a run whose metaData actions change them is handed back). The reader is told to *fail*
   on any field the schema does not name, on non-empty `tags` (a map, which Arrow's JSON reader
   cannot build), on a type that does not fit, or on a file action we did not recognise by its
   prefix: then `bulk_state` returns None and the caller replays the commits one action at a time,
   as before. Bulk replay is a fast path, never a second set of rules (tests/compat/test_bulk_replay
   checks it equals the per-action replay on every reference log it accepts);
3. reconciliation (Delta's "latest action per file key wins") is a stable sort of all file actions
   by (key, position in the log); the last row of each key's run wins; a winning add is a live file,
   a winning remove a tombstone. Files come out in the order of each key's first appearance, the
   order the dict-based replay gives.

The result is a `LogState` whose base layer holds the replayed files as in-memory Arrow (no
`source`: every field is already there), so snapshots, checkpoints and later commits treat it like
a checkpoint's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.log.actions import ADD, METADATA, REMOVE
from airflow_txnlog.engine.log.log_reader import CommitFiles, read_commit_blobs
from airflow_txnlog.engine.log.replay import ADD_TYPE, REMOVE_TYPE, STR_MAP, LogState, struct_keys
from airflow_txnlog.engine.storage import Storage

MIN_COMMITS = 32  # below this the per-action replay is as fast and keeps the usual incremental layout
_ADD_PREFIX, _REMOVE_PREFIX = b'{"add":', b'{"remove":'
# `tags` is a string map, which Arrow's JSON reader cannot build: accepted only null or `{}` (an empty
# struct), so a file with real tags makes the reader fail and the per-action replay take over.
_NO_TAGS = pa.struct([])


def _file_types(partition_columns: list[str]) -> tuple[pa.StructType, pa.StructType]:
    """The checkpoint's add / remove types as the JSON reader must see them: partition values as a
    struct of the partition columns, tags as `_NO_TAGS`; removes also carry what commits may put in
    them (stats, tags, row tracking) and checkpoints leave out."""
    pv = pa.struct([(c, pa.string()) for c in partition_columns])
    as_json = {"partitionValues": pv, "tags": _NO_TAGS}
    add = pa.struct([pa.field(f.name, as_json.get(f.name, f.type)) for f in ADD_TYPE])
    extra = [
        ("stats", pa.string()),
        ("tags", _NO_TAGS),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
    remove = pa.struct([pa.field(f.name, as_json.get(f.name, f.type)) for f in REMOVE_TYPE] + extra)
    return add, remove


class _Unsuitable(Exception):
    """These commits need the per-action replay (an unexpected field, type or line shape)."""


@dataclass
class _Lines:
    """A run of commits split into the applier's small actions and the file-action lines."""

    small: list[tuple[int, list[dict[str, Any]], str]] = field(default_factory=list)
    adds: list[bytes] = field(default_factory=list)
    add_seq: list[int] = field(default_factory=list)
    removes: list[bytes] = field(default_factory=list)
    remove_seq: list[int] = field(default_factory=list)

    def partition_columns(self) -> list[str]:
        """The partition columns, the same in every metaData of the run (else `_Unsuitable`: files
        of two partitionings must keep their own keys, which a struct over both cannot say)."""
        seen = {
            tuple(a[METADATA].get("partitionColumns") or ())
            for _, actions, _ in self.small
            for a in actions
            if isinstance(a.get(METADATA), dict)
        }
        if len(seen) != 1:
            raise _Unsuitable
        return list(seen.pop())


def _small_action(line: bytes) -> dict[str, Any]:
    try:
        action = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise _Unsuitable from exc  # the per-action replay names the file and the error
    if not isinstance(action, dict) or ADD in action or REMOVE in action:
        raise _Unsuitable
    return action


def _split(storage: Storage, commits: CommitFiles) -> _Lines:
    out, seq = _Lines(), 0
    for version, name, data in read_commit_blobs(storage, commits):
        others: list[dict[str, Any]] = []
        seen = False
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            seen, seq = True, seq + 1
            if line.startswith(_ADD_PREFIX):
                out.adds.append(line)
                out.add_seq.append(seq)
            elif line.startswith(_REMOVE_PREFIX):
                out.removes.append(line)
                out.remove_seq.append(seq)
            else:
                others.append(_small_action(line))
        if not seen:
            raise LogCorruptedError(f"{name} is empty")
        out.small.append((version, others, name))
    return out


def _decode(lines: list[bytes], column: str, t: pa.StructType) -> pa.StructArray:
    if not lines:
        return pa.array([], type=t)
    longest = max(map(len, lines))
    try:
        table = pj.read_json(
            pa.BufferReader(b"\n".join(lines)),
            read_options=pj.ReadOptions(block_size=max(16 << 20, 2 * longest + 2)),
            parse_options=pj.ParseOptions(
                explicit_schema=pa.schema([(column, t)]), unexpected_field_behavior="error"
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise _Unsuitable from exc
    chunks = table.column(column).chunks
    rows = chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)
    if len(rows) != len(lines) or rows.null_count or rows.field("path").null_count:
        raise _Unsuitable  # an action without a body or a path: let the per-action replay say so
    return rows


def _as_map(values: pa.StructArray) -> pa.Array:
    """A struct of partition values as the protocol's map (every partition column a key)."""
    n, names = len(values), [f.name for f in values.type]
    width = len(names)
    offsets = pa.array(np.arange(n + 1, dtype=np.int32) * width)
    if not width:
        return pa.MapArray.from_arrays(offsets, pa.array([], pa.string()), pa.array([], pa.string()))
    keys = pa.array(np.tile(np.array(names, dtype=object), n), pa.string())
    columns = [values.field(c).to_numpy(zero_copy_only=False) for c in names]
    items = pa.array(np.stack(columns, axis=1).ravel(), pa.string())
    return pa.MapArray.from_arrays(offsets, keys, items)


def _with_map(rows: pa.StructArray) -> pa.StructArray:
    fields, children = list(rows.type), rows.flatten()
    pv, tags = rows.type.get_field_index("partitionValues"), rows.type.get_field_index("tags")
    fields[pv], children[pv] = pa.field("partitionValues", STR_MAP), _as_map(children[pv])
    fields[tags], children[tags] = pa.field("tags", STR_MAP), pa.nulls(len(rows), STR_MAP)
    return pa.StructArray.from_arrays(children, fields=fields)


def _winners(keys: pa.Array, seq: np.ndarray) -> np.ndarray:
    """Positions of the winning (last) action of each key, ordered by each key's first appearance."""
    if len(keys) == 0:
        return np.array([], dtype=np.int64)
    rank = pc.rank(keys, sort_keys="ascending", tiebreaker="dense").to_numpy()
    order = np.lexsort((seq, rank))  # by key, then by position in the log
    ranked = rank[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = ranked[1:] != ranked[:-1]
    first = np.ones(len(order), dtype=bool)
    first[1:] = ranked[1:] != ranked[:-1]
    win, born = order[last], seq[order[first]]
    return win[np.argsort(born, kind="stable")]


def bulk_state(storage: Storage, commits: CommitFiles, *, min_commits: int = MIN_COMMITS) -> LogState | None:
    """The state after `commits` (from version 0, no checkpoint), or None when the per-action replay
    must do it (see the module docstring) or there are fewer than `min_commits`."""
    if len(commits) < min_commits:
        return None
    try:
        lines = _split(storage, commits)
        state = LogState(version=-1).apply_many(lines.small)
        add_type, remove_type = _file_types(lines.partition_columns())
        adds = _decode(lines.adds, ADD, add_type)
        removes = _decode(lines.removes, REMOVE, remove_type)
    except _Unsuitable:
        return None
    keys = pa.concat_arrays([struct_keys(adds), struct_keys(removes)])
    win = _winners(keys, np.array(lines.add_seq + lines.remove_seq, dtype=np.int64))
    n_add = len(adds)
    live = pa.array(win[win < n_add], pa.int64())
    dead = pa.array(win[win >= n_add], pa.int64())
    return replace(
        state,
        base_adds=_with_map(adds.take(live)),
        base_add_keys=keys.take(live),
        base_removes=_with_map(removes.take(pc.subtract(dead, n_add))),
        base_remove_keys=keys.take(dead),
    )
