"""Checkpoints read: the parts of a checkpoint (classic, multi-part or V2 with its sidecars) into a
`LogState` at its version.

The parts are read with pyarrow, only the columns needed (`checkpoint_columns`): the small actions
whole, of `add` / `remove` only the fields of the file key; the file actions stay Arrow struct arrays
whose other fields (whatever the writer put there: `remove.tags`, `add.stats_parsed`, ...) are read
when first asked for, through `LogState.source`. Only protocol / metaData / txn / domainMetadata
rows become Python objects, and they go through the same reconciliation as JSON commits. A
checkpoint that cannot be read, or lacks its protocol or metadata, is a `LogCorruptedError` naming
it. (`stats_struct.add_stats_json` gives the JSON stats of checkpoint add rows, rendering
`stats_parsed` where `stats` is null.)
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.log import checkpoint_v2
from airflow_txnlog.engine.log.actions import ADD, DOMAIN_METADATA, METADATA, PROTOCOL, REMOVE, TXN
from airflow_txnlog.engine.log.checkpoint_columns import CheckpointColumns
from airflow_txnlog.engine.log.replay import LogState, struct_keys
from airflow_txnlog.engine.storage import LOG_DIR, Storage


def _to_wire(value: Any) -> Any:
    """pyarrow's to_pylist gives maps as lists of pairs; the log has JSON objects."""
    if isinstance(value, dict):
        return {k: _to_wire(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return {k: _to_wire(v) for k, v in value}
    if isinstance(value, list):
        return [_to_wire(v) for v in value]
    return value


def read_checkpoint(
    storage: Storage, version: int, part_names: list[str], *, folder: str = LOG_DIR
) -> LogState:
    """State at `version` from checkpoint-format files in `folder` (LogCorruptedError naming a bad file).

    Reads the small actions whole and of the file actions only what their keys need (path and
    deletion vector); the rest is read on demand through `LogState.source` (`CheckpointColumns`).
    """
    extra: list[dict[str, Any]] = []
    if len(part_names) == 1 and checkpoint_v2.is_v2_name(part_names[0]) and folder == LOG_DIR:
        name = part_names[0]
        part_names, extra = checkpoint_v2.plan(storage, name)
        if not part_names:  # a JSON checkpoint holding everything itself
            state = LogState(version=-1).apply(version, extra, name=name)
            return _complete(state, name)
    source = CheckpointColumns(storage, folder, part_names)
    key_fields = ("path", "deletionVector")
    try:
        rows = source.load((PROTOCOL, METADATA, TXN, DOMAIN_METADATA), {ADD: key_fields, REMOVE: key_fields})
    except pa.ArrowException as exc:
        raise LogCorruptedError(
            f"checkpoint parts of version {version} cannot be read together: {exc}"
        ) from exc
    small: list[dict[str, Any]] = []
    for column in (PROTOCOL, METADATA, TXN, DOMAIN_METADATA):
        if column in rows:
            small.extend({column: _to_wire(r)} for r in rows[column].to_pylist())
    adds, removes = rows.get(ADD), rows.get(REMOVE)
    state = LogState(
        version=version,
        base_adds=adds,
        base_add_keys=struct_keys(adds) if adds is not None else None,
        base_removes=removes,
        base_remove_keys=struct_keys(removes) if removes is not None else None,
        source=source,
    )
    # The small actions go through the same reconciliation code as JSON commits (with a JSON v2
    # checkpoint, its actions besides the sidecars' rows too).
    state = state.apply(version, small + extra, name=part_names[0])
    return _complete(state, part_names[0])


def _complete(state: LogState, name: str) -> LogState:
    try:
        state.require_complete()
    except LogCorruptedError as exc:
        raise LogCorruptedError(f"checkpoint {name} is incomplete: {exc}") from exc
    return state
