"""Log actions as frozen dataclasses, and their exact JSON wire form.

Each commit file holds one JSON object per line, with exactly one key naming the action
(`commitInfo`, `protocol`, `metaData`, `add`, `remove`, `txn`, `domainMetadata`, and on read `cdc`).
`to_wire()` produces the object a Delta writer would write; `from_wire()` accepts what Spark and
delta-rs write (missing optional fields, empty strings for null partition values).

Paths: `add.path` / `remove.path` are URIs relative to the table root, percent-encoded. The
dataclasses hold the decoded path (what a storage key is made of) and remember the encoded form
they were read with, so that a `remove` written for a file reproduces its `add`'s path byte for byte.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import orjson

from airflow_txnlog.engine.storage import has_scheme

# Wire names of the actions.
COMMIT_INFO = "commitInfo"
PROTOCOL = "protocol"
METADATA = "metaData"
ADD = "add"
REMOVE = "remove"
TXN = "txn"
CDC = "cdc"
DOMAIN_METADATA = "domainMetadata"
STATS_PARSED = "stats_parsed"  # checkpoint-only add field: the stats as a typed struct
IN_COMMIT_TIMESTAMP = "inCommitTimestamp"  # commitInfo field of tables with in-commit timestamps
PARTITION_VALUES_PARSED = "partitionValues_parsed"  # checkpoint-only add field: typed partition values
EMPTY_SCHEMA = '{"type":"struct","fields":[]}'
KNOWN_ACTIONS = frozenset({COMMIT_INFO, PROTOCOL, METADATA, ADD, REMOVE, TXN, CDC, DOMAIN_METADATA})

# Characters left unescaped in a log path (RFC 2396 "pchar" minus ':' which could read as a scheme).
_PATH_SAFE = "/=-_.~!*'(),;$&+@"


def encode_path(path: str) -> str:
    """Percent-encode a relative path for the log (absolute URIs keep their scheme)."""
    if has_scheme(path):
        scheme, rest = path.split(":", 1)
        return f"{scheme}:{quote(rest, safe=_PATH_SAFE)}"
    return quote(path, safe=_PATH_SAFE)


def decode_path(path: str) -> str:
    """Decode a log path once: the result names the file (relative to the root, or absolute)."""
    return unquote(path) if "%" in path else path


def _opt_map(value: Any) -> dict[str, Any] | None:
    return dict(value) if value else None


@dataclass(frozen=True, slots=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            out["readerFeatures"] = list(self.reader_features)
        if self.writer_features is not None:
            out["writerFeatures"] = list(self.writer_features)
        return {PROTOCOL: out}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> Protocol:
        rf, wf = d.get("readerFeatures"), d.get("writerFeatures")
        return cls(
            int(d["minReaderVersion"]),
            int(d["minWriterVersion"]),
            tuple(rf) if rf is not None else None,
            tuple(wf) if wf is not None else None,
        )


@dataclass(frozen=True, slots=True)
class Metadata:
    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    created_time: int | None = None
    format_provider: str = "parquet"
    format_options: Mapping[str, str] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "format": {"provider": self.format_provider, "options": dict(self.format_options)},
            "schemaString": self.schema_string,
            "partitionColumns": list(self.partition_columns),
            "configuration": dict(self.configuration),
            "createdTime": self.created_time,
        }
        return {METADATA: {k: v for k, v in out.items() if v is not None}}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> Metadata:
        fmt = d.get("format") or {}
        return cls(
            id=str(d["id"]),
            # Some old writers omitted the schema of an empty table; read it as no columns.
            schema_string=str(d.get("schemaString") or EMPTY_SCHEMA),
            partition_columns=tuple(d.get("partitionColumns") or ()),
            configuration={k: v for k, v in (d.get("configuration") or {}).items() if v is not None},
            name=d.get("name"),
            description=d.get("description"),
            created_time=d.get("createdTime"),
            format_provider=fmt.get("provider", "parquet"),
            format_options=dict(fmt.get("options") or {}),
        )


@dataclass(frozen=True, slots=True)
class AddFile:
    """A data file made live by a commit.

    :param path: the file's path relative to the table root (decoded), or an absolute URI.
    :param partition_values: partition column -> serialized value (None for null).
    :param stats: the stats JSON string (numRecords, minValues, maxValues, nullCount) or None.
    """

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None
    tags: Mapping[str, str] | None = None
    deletion_vector: Mapping[str, Any] | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None
    encoded_path: str | None = field(default=None, compare=False, repr=False)

    @property
    def wire_path(self) -> str:
        return self.encoded_path if self.encoded_path is not None else encode_path(self.path)

    @property
    def num_records(self) -> int | None:
        if not self.stats:
            return None
        n = orjson.loads(self.stats).get("numRecords")
        return int(n) if n is not None else None

    def parsed_stats(self, *, exact_decimals: bool = False) -> dict[str, Any] | None:
        """The stats as a dict; `exact_decimals` keeps non-integer numbers as `Decimal` (slower)."""
        if not self.stats:
            return None
        if exact_decimals:
            return json.loads(self.stats, parse_float=decimal.Decimal)  # type: ignore[no-any-return]
        return orjson.loads(self.stats)  # type: ignore[no-any-return]

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.wire_path,
            "partitionValues": dict(self.partition_values),
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": self.data_change,
        }
        if self.stats is not None:
            out["stats"] = self.stats
        optional = {
            "tags": _opt_map(self.tags),
            "deletionVector": _opt_map(self.deletion_vector),
            "baseRowId": self.base_row_id,
            "defaultRowCommitVersion": self.default_row_commit_version,
            "clusteringProvider": self.clustering_provider,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        return {ADD: out}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> AddFile:
        raw = str(d["path"])
        return cls(
            path=decode_path(raw),
            partition_values=dict(d.get("partitionValues") or {}),
            size=int(d.get("size") or 0),
            modification_time=int(d.get("modificationTime") or 0),
            data_change=bool(d.get("dataChange", True)),
            stats=d.get("stats"),
            tags=_opt_map(d.get("tags")),
            deletion_vector=_opt_map(d.get("deletionVector")),
            base_row_id=d.get("baseRowId"),
            default_row_commit_version=d.get("defaultRowCommitVersion"),
            clustering_provider=d.get("clusteringProvider"),
            encoded_path=raw,
        )

    def remove(self, *, deletion_timestamp: int, data_change: bool = True) -> RemoveFile:
        """The `remove` action that logically deletes this file (extended metadata included).

        Its `stats` hold only `numRecords`, as Delta on Spark writes them (e.g. for MERGE): readers
        of the log (history views, row counts per commit) learn the rows a commit removed without
        the full statistics doubling the commit's size."""
        try:
            records = self.num_records
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
            records = None  # unreadable stats stay with the add; the remove simply has none
        return RemoveFile(
            path=self.path,
            deletion_timestamp=deletion_timestamp,
            data_change=data_change,
            extended_file_metadata=True,
            partition_values=dict(self.partition_values),
            size=self.size,
            stats=None if records is None else f'{{"numRecords":{records}}}',
            tags=self.tags,
            deletion_vector=self.deletion_vector,
            base_row_id=self.base_row_id,
            default_row_commit_version=self.default_row_commit_version,
            encoded_path=self.wire_path,
        )


@dataclass(frozen=True, slots=True)
class RemoveFile:
    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: Mapping[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: Mapping[str, str] | None = None
    deletion_vector: Mapping[str, Any] | None = None
    base_row_id: int | None = None  # (row tracking: the removed add's, as PROTOCOL.md requires)
    default_row_commit_version: int | None = None
    encoded_path: str | None = field(default=None, compare=False, repr=False)

    @property
    def wire_path(self) -> str:
        return self.encoded_path if self.encoded_path is not None else encode_path(self.path)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.wire_path, "dataChange": self.data_change}
        optional: dict[str, Any] = {
            "deletionTimestamp": self.deletion_timestamp,
            "extendedFileMetadata": self.extended_file_metadata,
            "partitionValues": dict(self.partition_values) if self.partition_values is not None else None,
            "size": self.size,
            "stats": self.stats,
            "tags": _opt_map(self.tags),
            "deletionVector": _opt_map(self.deletion_vector),
            "baseRowId": self.base_row_id,
            "defaultRowCommitVersion": self.default_row_commit_version,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        return {REMOVE: out}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> RemoveFile:
        raw = str(d["path"])
        pv = d.get("partitionValues")
        return cls(
            path=decode_path(raw),
            deletion_timestamp=d.get("deletionTimestamp"),
            data_change=bool(d.get("dataChange", True)),
            extended_file_metadata=d.get("extendedFileMetadata"),
            partition_values=dict(pv) if pv is not None else None,
            size=d.get("size"),
            stats=d.get("stats"),
            tags=_opt_map(d.get("tags")),
            deletion_vector=_opt_map(d.get("deletionVector")),
            base_row_id=d.get("baseRowId"),
            default_row_commit_version=d.get("defaultRowCommitVersion"),
            encoded_path=raw,
        )


@dataclass(frozen=True, slots=True)
class AddCDCFile:
    """A change data file (`cdc`): rows with `_change_type` for the change data feed of one commit;
    never part of the table state (dataChange is always false)."""

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    tags: Mapping[str, str] | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": encode_path(self.path),
            "partitionValues": dict(self.partition_values),
            "size": self.size,
            "dataChange": False,
        }
        if self.tags:
            out["tags"] = dict(self.tags)
        return {CDC: out}


@dataclass(frozen=True, slots=True)
class Txn:
    app_id: str
    version: int
    last_updated: int | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"appId": self.app_id, "version": self.version}
        if self.last_updated is not None:
            out["lastUpdated"] = self.last_updated
        return {TXN: out}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> Txn:
        return cls(str(d["appId"]), int(d["version"]), d.get("lastUpdated"))


@dataclass(frozen=True, slots=True)
class DomainMetadata:
    """A named domain's configuration (PROTOCOL.md "Domain Metadata"): the newest action per domain
    wins; `removed` deletes the domain. Domains named `delta.*` belong to Delta's own features."""

    domain: str
    configuration: str
    removed: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {
            DOMAIN_METADATA: {
                "domain": self.domain,
                "configuration": self.configuration,
                "removed": self.removed,
            }
        }

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> DomainMetadata:
        return cls(str(d["domain"]), str(d.get("configuration") or ""), bool(d.get("removed", False)))


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """Provenance of a commit; free-form on the wire, these are the fields we always write."""

    timestamp: int
    operation: str
    operation_parameters: Mapping[str, Any] = field(default_factory=dict)
    read_version: int | None = None
    isolation_level: str = "Serializable"
    is_blind_append: bool = False
    operation_metrics: Mapping[str, Any] = field(default_factory=dict)
    engine_info: str = ""
    txn_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        # Delta writes operationParameters and operationMetrics values as strings.
        params = {
            k: v if isinstance(v, str) else orjson.dumps(v).decode()
            for k, v in self.operation_parameters.items()
        }
        metrics = {k: str(v) for k, v in self.operation_metrics.items()}
        out: dict[str, Any] = {
            "timestamp": self.timestamp,
            "operation": self.operation,
            "operationParameters": params,
            "readVersion": self.read_version,
            "isolationLevel": self.isolation_level,
            "isBlindAppend": self.is_blind_append,
            "operationMetrics": metrics,
            "engineInfo": self.engine_info,
            "txnId": self.txn_id,
        }
        out.update(self.extra)
        return {COMMIT_INFO: {k: v for k, v in out.items() if v is not None}}


FileAction = AddFile | RemoveFile
Action = Protocol | Metadata | AddFile | RemoveFile | AddCDCFile | Txn | DomainMetadata | CommitInfo


def serialize_actions(actions: list[Action]) -> bytes:
    """Newline-delimited JSON of a commit, commitInfo first (as Delta writers do)."""
    ordered = sorted(actions, key=lambda a: 0 if isinstance(a, CommitInfo) else 1)
    return b"".join(orjson.dumps(a.to_wire()) + b"\n" for a in ordered)
