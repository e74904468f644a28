"""The options of the `txnlog` data source, checked before any Spark job.

Delta's option names, matched case-insensitively as Spark does:

    read   path, versionAsOf, timestampAsOf (ISO-8601; a zone-less value is UTC), maxPartitionBytes
    write  path, replaceWhere, mergeSchema, overwriteSchema, partitionBy (a JSON list or
           comma-separated names, as DataFrameWriter.partitionBy passes them), txnAppId + txnVersion,
           maxRowsPerFile
    both   storage.<fsspec option> (one option each; Spark lowercases option names, so give names
           with capitals in storageOptions), storageOptions (a JSON object)

An unknown option, a malformed value, or two options that exclude each other is an
`InvalidArgumentError` naming it. Storage options travel to the executors with the tasks (Spark
pickles them) and are never logged or put in an error message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_txnlog.engine import InvalidArgumentError, Snapshot, Table

STORAGE_PREFIX = "storage."
DEFAULT_PARTITION_BYTES = 128 * 1024 * 1024
DEFAULT_MAX_ROWS = 1_000_000
_COMMON = frozenset({"path", "storageoptions"})
READ_OPTIONS = _COMMON | {"versionasof", "timestampasof", "maxpartitionbytes", "rowtracking"}
WRITE_OPTIONS = _COMMON | {
    "replacewhere",
    "mergeschema",
    "overwriteschema",
    "partitionby",
    "__partition_columns",  # what DataFrameWriter.partitionBy sets
    "txnappid",
    "txnversion",
    "maxrowsperfile",
    "__txnlog_plan",  # internal: SparkTable's file writes (see writer.files_plan)
    "__txnlog_manifest",
}

# How the options are spelled in docs/spark.md (Spark matches option names case-insensitively).
_SPELLING = {
    "storageoptions": "storageOptions",
    "versionasof": "versionAsOf",
    "timestampasof": "timestampAsOf",
    "maxpartitionbytes": "maxPartitionBytes",
    "rowtracking": "rowTracking",
    "replacewhere": "replaceWhere",
    "mergeschema": "mergeSchema",
    "overwriteschema": "overwriteSchema",
    "partitionby": "partitionBy",
    "txnappid": "txnAppId",
    "txnversion": "txnVersion",
    "maxrowsperfile": "maxRowsPerFile",
}


def _option_value(raw: str) -> Any:
    """A `storage.<key>` value: `true` / `false` / numbers as such (fsspec takes `anon=False`, not
    the truthy text "false"), anything else as text."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, bool | int | float) else raw


def _common(
    options: Mapping[str, str], known: frozenset[str], what: str
) -> tuple[dict[str, str], dict[str, Any]]:
    """(the options, keys lowercased; the storage options)."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    unknown = sorted(k for k in opts if k not in known and not k.startswith(STORAGE_PREFIX))
    if unknown:
        accepted = ", ".join(_SPELLING.get(k, k) for k in sorted(known) if not k.startswith("__"))
        raise InvalidArgumentError(
            f"txnlog: unknown {what} options {unknown}; {what} options: {accepted}, "
            f"{STORAGE_PREFIX}<key> (docs/spark.md)"
        )
    if not opts.get("path"):
        raise InvalidArgumentError(
            f"txnlog: no table path; use .{'load' if what == 'read' else 'save'}(path)"
        )
    storage = {
        k[len(STORAGE_PREFIX) :]: _option_value(v) for k, v in opts.items() if k.startswith(STORAGE_PREFIX)
    }
    if "storageoptions" in opts:
        storage.update(_json_object("storageOptions", opts["storageoptions"]))
    return opts, storage


def _int_option(name: str, raw: str | None, *, minimum: int) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise InvalidArgumentError(f"txnlog: {name} must be an integer >= {minimum}, got {raw!r}")
    return value


def _bool_option(name: str, raw: str | None) -> bool:
    if raw is None:
        return False
    if raw.strip().lower() not in ("true", "false"):
        raise InvalidArgumentError(f"txnlog: {name} must be true or false, got {raw!r}")
    return raw.strip().lower() == "true"


def _json_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise InvalidArgumentError(f"txnlog: {name} must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"txnlog: {name} must be a JSON object, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class ReadOptions:
    """The options of a read, checked."""

    path: str
    version: int | None
    timestamp: str | None
    partition_bytes: int
    storage_options: dict[str, Any] = field(repr=False)
    row_tracking: bool = False  # rowTracking=true: each row's stable id and commit version too

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        opts, storage = _common(options, READ_OPTIONS, "read")
        version = _int_option("versionAsOf", opts.get("versionasof"), minimum=0)
        if version is not None and opts.get("timestampasof"):
            raise InvalidArgumentError("txnlog: give versionAsOf or timestampAsOf, not both")
        size = _int_option("maxPartitionBytes", opts.get("maxpartitionbytes"), minimum=1)
        tracking = _bool_option("rowTracking", opts.get("rowtracking"))
        return cls(
            opts["path"],
            version,
            opts.get("timestampasof"),
            size or DEFAULT_PARTITION_BYTES,
            storage,
            tracking,
        )

    def snapshot(self) -> tuple[Table, Snapshot]:
        table = Table.open(self.path, storage_options=self.storage_options or None)
        return table, table.snapshot(version=self.version, timestamp=self.timestamp)


def _partition_by(opts: Mapping[str, str]) -> tuple[str, ...] | None:
    raw = opts.get("partitionby", opts.get("__partition_columns"))
    if raw is None:
        return None
    text = raw.strip()
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise InvalidArgumentError(f"txnlog: partitionBy is not a JSON list: {exc}") from exc
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise InvalidArgumentError(f"txnlog: partitionBy must list column names, got {raw!r}")
        return tuple(value)
    return tuple(c.strip() for c in text.split(",") if c.strip())


@dataclass(frozen=True)
class WriteOptions:
    """The options of a write, checked."""

    path: str
    replace_where: str | None
    merge_schema: bool
    overwrite_schema: bool
    partition_by: tuple[str, ...] | None
    txn: tuple[str, int] | None
    max_rows: int
    storage_options: dict[str, Any] = field(repr=False)
    files_plan: str | None = None  # internal: write files only, as this plan says (JSON)
    manifest: str | None = None  # internal: where to put their add actions instead of committing

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        opts, storage = _common(options, WRITE_OPTIONS, "write")
        app, version = opts.get("txnappid"), _int_option("txnVersion", opts.get("txnversion"), minimum=0)
        if (app is None) != (version is None) or (app is not None and not app.strip()):
            raise InvalidArgumentError(
                "txnlog: txnAppId and txnVersion go together (a non-empty id and a version)"
            )
        rows = _int_option("maxRowsPerFile", opts.get("maxrowsperfile"), minimum=1)
        return cls(
            opts["path"],
            opts.get("replacewhere"),
            _bool_option("mergeSchema", opts.get("mergeschema")),
            _bool_option("overwriteSchema", opts.get("overwriteschema")),
            _partition_by(opts),
            (app, version) if app is not None and version is not None else None,
            rows or DEFAULT_MAX_ROWS,
            storage,
            opts.get("__txnlog_plan"),
            opts.get("__txnlog_manifest"),
        )
