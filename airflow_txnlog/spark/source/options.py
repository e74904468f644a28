"""The options of the `txnlog` data source, checked before any Spark job.

Delta's option names, matched case-insensitively as Spark does:

    read   path, versionAsOf, timestampAsOf (ISO-8601; a zone-less value is UTC), maxPartitionBytes,
           rowTracking, release (a release log's URI: the table's version in its current release;
           engine.releases) + releaseSequence (that release instead; the log is read with the
           table's storage options)
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
from dataclasses import dataclass, field, replace
from typing import Any

from airflow_txnlog.engine import InvalidArgumentError, ReleaseNotFoundError, Releases, Snapshot, Table

STORAGE_PREFIX = "storage."
DEFAULT_PARTITION_BYTES = 128 * 1024 * 1024
DEFAULT_MAX_ROWS = 1_000_000
_COMMON = frozenset({"path", "storageoptions"})
READ_OPTIONS = _COMMON | {
    "versionasof",
    "timestampasof",
    "maxpartitionbytes",
    "rowtracking",
    "release",
    "releasesequence",
}
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
    "releasesequence": "releaseSequence",
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
    release: str | None = None  # a release log's URI: the table's version in its (current) release
    release_sequence: int | None = None  # releaseSequence: that release instead of the current one

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        opts, storage = _common(options, READ_OPTIONS, "read")
        version = _int_option("versionAsOf", opts.get("versionasof"), minimum=0)
        if version is not None and opts.get("timestampasof"):
            raise InvalidArgumentError("txnlog: give versionAsOf or timestampAsOf, not both")
        size = _int_option("maxPartitionBytes", opts.get("maxpartitionbytes"), minimum=1)
        tracking = _bool_option("rowTracking", opts.get("rowtracking"))
        release, sequence = _release(opts)
        if release is not None and (version is not None or opts.get("timestampasof")):
            raise InvalidArgumentError(
                "txnlog: give release or versionAsOf / timestampAsOf, not both (the release names the "
                "version)"
            )
        return cls(
            opts["path"],
            version,
            opts.get("timestampasof"),
            size or DEFAULT_PARTITION_BYTES,
            storage,
            tracking,
            release,
            sequence,
        )

    def snapshot(self) -> tuple[Table, Snapshot]:
        table = Table.open(self.path, storage_options=self.storage_options or None)
        if self.release is not None:
            log = Releases.open(
                self.release,
                storage_options=self.storage_options or None,
                table_storage_options=self.storage_options or None,
            )
            found = log.current() if self.release_sequence is None else log.get(self.release_sequence)
            if found is None:
                raise ReleaseNotFoundError(f"txnlog: nothing is released yet in the release log {log.uri!r}")
            return table, table.snapshot(release=found)
        return table, table.snapshot(version=self.version, timestamp=self.timestamp)

    def pinned(self, snapshot: Snapshot) -> ReadOptions:
        """These options reading `snapshot`'s version whatever commits (or is released) next."""
        return replace(self, version=snapshot.version, timestamp=None, release=None, release_sequence=None)


def _release(opts: Mapping[str, str]) -> tuple[str | None, int | None]:
    """(release, releaseSequence), checked."""
    release = opts.get("release")
    sequence = _int_option("releaseSequence", opts.get("releasesequence"), minimum=0)
    if release is not None and not release.strip():
        raise InvalidArgumentError("txnlog: release must be a release log's URI, got ''")
    if sequence is not None and release is None:
        raise InvalidArgumentError("txnlog: releaseSequence needs release (the release log's URI)")
    return (None if release is None else release.strip()), sequence


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
