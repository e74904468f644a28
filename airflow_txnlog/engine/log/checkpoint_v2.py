"""V2 checkpoints (Delta PROTOCOL.md "V2 Checkpoint Table Feature", "V2 Spec", "Sidecar Files").

A UUID-named checkpoint `n.checkpoint.<uuid>.json|parquet` holds the table's non-file actions
(protocol, metaData, txn, domainMetadata), exactly one `checkpointMetadata` action ({version, tags}),
and either the file actions themselves or `sidecar` actions naming parquet files in
`_delta_log/_sidecars/` that hold them (add / remove columns only). Reading one:

    main file (JSON lines or parquet)  -> small actions, checkpointMetadata, sidecar names,
                                          and any add / remove it holds itself
    sidecars (parquet)                 -> the add / remove rows, read column by column on demand
                                          like any checkpoint part (`CheckpointColumns`)

The state is built exactly as for a classic checkpoint: the sidecars are its parts; file actions a
JSON main file holds inline are applied after them (a checkpoint has one action per file key, so the
order does not matter).

Writing one (`state.checkpoint`, for tables whose protocol has `v2Checkpoint`; multi-part checkpoints
are forbidden there):
    1. the file actions (add / remove rows, the same columns a classic checkpoint has) are streamed
       into sidecars `_delta_log/_sidecars/<uuid>.parquet` (`state.checkpoint_parts.SidecarWriters`:
       one per 262,144 live files, at most 8, each written on its own thread; none when there are
       no file actions);
    2. then the main file `n.checkpoint.<uuid>.parquet` (`write_main`): the non-file actions, one
       `checkpointMetadata` {version} and one `sidecar` action {path (the file name only),
       sizeInBytes, modificationTime} per sidecar;
    3. the caller then points `_last_checkpoint` at it, with `v2Checkpoint` {path, sizeInBytes,
       modificationTime, sidecarFiles} (`nonFileActions` is optional and left out).
Both names are new UUIDs, so two writers racing never overwrite each other: each complete main file
is a valid checkpoint, and a sidecar whose main file was never written is an orphan that log cleanup
reclaims once it is past the log retention (a main file is written only after its sidecars).
"""

from __future__ import annotations

import io
import time
import uuid
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.log.actions import decode_path
from airflow_txnlog.engine.storage import LOG_DIR, Storage, has_scheme

SIDECAR_DIR = "_sidecars"
CHECKPOINT_METADATA = "checkpointMetadata"
SIDECAR = "sidecar"


def is_v2_name(name: str) -> bool:
    """`n.checkpoint.<uuid>.json|parquet` (a classic or multi-part name has no UUID)."""
    parts = name.split(".")
    return len(parts) == 4 and parts[1] == "checkpoint" and len(parts[2]) == 36


def _sidecar_part(path: str, checkpoint: str) -> str:
    if has_scheme(path) or path.startswith("/") or "/" in decode_path(path):
        raise LogCorruptedError(
            f"checkpoint {checkpoint} names sidecar {path!r} outside _delta_log/_sidecars/; this engine "
            "reads sidecars only where the protocol puts them"
        )
    return f"{SIDECAR_DIR}/{decode_path(path)}"


def _json_actions(storage: Storage, name: str) -> list[dict[str, Any]]:
    try:
        data = storage.read(f"{LOG_DIR}/{name}")
        return [orjson.loads(line) for line in data.splitlines() if line.strip()]
    except FileNotFoundError as exc:
        raise LogCorruptedError(f"checkpoint {name} is missing") from exc
    except orjson.JSONDecodeError as exc:
        raise LogCorruptedError(f"checkpoint {name} is not valid JSON lines: {exc}") from exc


def _parquet_sidecars(storage: Storage, name: str) -> list[str]:
    """The sidecar paths a parquet main file names."""
    try:
        with storage.open_input(f"{LOG_DIR}/{name}") as fh:
            f = pq.ParquetFile(fh)
            if SIDECAR not in f.schema_arrow.names:
                return []
            rows = f.read(columns=[f"{SIDECAR}.path"]).column(SIDECAR).to_pylist()
    except FileNotFoundError as exc:
        raise LogCorruptedError(f"checkpoint {name} is missing") from exc
    except (OSError, pa.ArrowException) as exc:
        raise LogCorruptedError(f"checkpoint {name} is unreadable: {exc}") from exc
    return [r["path"] for r in rows if r and r.get("path")]


def plan(storage: Storage, name: str) -> tuple[list[str], list[dict[str, Any]]]:
    """(checkpoint parts holding add / remove rows, actions to apply besides: the small actions of a
    JSON main file and any file actions it holds inline). A parquet main file's small actions are read
    as a part's are."""
    if name.endswith(".json"):
        actions = _json_actions(storage, name)
        sidecars = [a[SIDECAR]["path"] for a in actions if isinstance(a.get(SIDECAR), dict)]
        rest = [a for a in actions if SIDECAR not in a and CHECKPOINT_METADATA not in a]
        meta = [a for a in actions if CHECKPOINT_METADATA in a]
        _check_metadata(name, [m[CHECKPOINT_METADATA] for m in meta])
        return [_sidecar_part(p, name) for p in sidecars], rest
    # the main file is the first part: its small actions (and any add / remove rows) are read as a
    # classic checkpoint's are; the sidecars add their file rows
    return [name] + [_sidecar_part(p, name) for p in _parquet_sidecars(storage, name)], []


def _check_metadata(name: str, found: list[Any]) -> None:
    if len(found) != 1 or not isinstance(found[0], dict):
        raise LogCorruptedError(f"checkpoint {name} must hold exactly one checkpointMetadata action")


# ----------------------------------------------------------------------------- write
CHECKPOINT_METADATA_TYPE = pa.struct([("version", pa.int64()), ("tags", pa.map_(pa.string(), pa.string()))])
SIDECAR_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("sizeInBytes", pa.int64()),
        ("modificationTime", pa.int64()),
        ("tags", pa.map_(pa.string(), pa.string())),
    ]
)


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    return buf.getvalue()


def _one_column_rows(table: pa.Table, column: str, rows: list[dict[str, Any]], t: pa.DataType) -> pa.Table:
    """`table` (whose other columns are null for these rows) plus a column holding `rows`."""
    extra = pa.table({f.name: pa.nulls(len(rows), f.type) for f in table.schema})
    values = pa.concat_arrays([pa.nulls(table.num_rows, t), pa.array(rows, t)])
    return pa.concat_tables([table, extra]).append_column(column, values)


def write_main(
    storage: Storage, version: int, small: pa.Table, sidecars: list[dict[str, Any]]
) -> dict[str, Any]:
    """Write the UUID-named main file of a V2 checkpoint: `small` (a checkpoint's non-file rows, in
    its columns without add / remove), one checkpointMetadata and a `sidecar` action per entry of
    `sidecars` (already written); returns the `v2Checkpoint` entry for `_last_checkpoint`."""
    small = _one_column_rows(small, CHECKPOINT_METADATA, [{"version": version}], CHECKPOINT_METADATA_TYPE)
    main = _one_column_rows(small, SIDECAR, sidecars, SIDECAR_TYPE)
    main_name = f"{version:020d}.checkpoint.{uuid.uuid4()}.parquet"
    data = _parquet(main)
    storage.write(f"{LOG_DIR}/{main_name}", data)
    return {
        "path": main_name,
        "sizeInBytes": len(data),
        "modificationTime": int(time.time() * 1000),
        "sidecarFiles": sidecars,
    }
