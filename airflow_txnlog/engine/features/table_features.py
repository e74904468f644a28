"""Setting table properties, with the protocol upgrade they need (Delta's ALTER TABLE SET TBLPROPERTIES).

    properties -> the table features they turn on (FEATURE_PROPERTIES; `delta.feature.<name>` =
                  `supported` names one directly; `delta.minReaderVersion` / `minWriterVersion`
                  raise the versions)
               -> the new protocol = the current one + those features, never less:
                  a legacy protocol moving to table features (reader 3 / writer 7) lists the features
                  its versions implied (Delta's rule), so nothing the table had is lost
               -> one commit: metaData with the merged configuration (+ protocol when it grows)

A property whose feature the engine cannot honor (change data feed, row tracking, column mapping,
in-commit timestamps on an existing table, ...) is refused before anything is written; so is any
attempt to lower a protocol version. Turning a feature's property off keeps the feature in the
protocol, as Delta does.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError, UnsupportedFeatureError
from airflow_txnlog.engine.features import column_mapping
from airflow_txnlog.engine.log.actions import Metadata, Protocol
from airflow_txnlog.engine.schema import schema_from_json, schema_to_json
from airflow_txnlog.engine.validate import mapping
from airflow_txnlog.engine.write.transaction import SUPPORTED_WRITER_FEATURES, Transaction, implied_features

READER_WRITER_FEATURES = frozenset(
    {
        "deletionVectors",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "timestampNtz",
        "columnMapping",
        "vacuumProtocolCheck",
    }
)
_VERSION_KEYS = {"delta.minReaderVersion": 3, "delta.minWriterVersion": 7}
FEATURE_PREFIX = "delta.feature."


def features_for(changes: Mapping[str, str]) -> tuple[set[str], set[str]]:
    """(reader features, writer features) the changed properties turn on, `delta.feature.<name>` =
    `supported` included (UnsupportedFeatureError for one the engine cannot honor)."""
    readers, writers = props.property_features(changes)
    for key, value in changes.items():
        if key.startswith(FEATURE_PREFIX) and str(value).strip().lower() == "supported":
            feature = key[len(FEATURE_PREFIX) :]
            if feature not in SUPPORTED_WRITER_FEATURES:
                raise UnsupportedFeatureError(
                    f"{key}=supported: this engine cannot honor table feature {feature!r}; nothing was "
                    "written",
                    feature=feature,
                )
            writers.add(feature)
            if feature in READER_WRITER_FEATURES:
                readers.add(feature)
    return readers, writers


def upgraded(
    protocol: Protocol, readers: set[str], writers: set[str], versions: Mapping[str, int]
) -> Protocol:
    """The protocol with the features added (never lower than `protocol`; itself when it has them)."""
    old_readers, old_writers = implied_features(protocol)
    want_reader = max(protocol.min_reader_version, versions.get("delta.minReaderVersion", 0))
    want_writer = max(protocol.min_writer_version, versions.get("delta.minWriterVersion", 0))
    new_readers, new_writers = readers - old_readers, (writers | readers) - old_writers
    same = (want_reader, want_writer) == (protocol.min_reader_version, protocol.min_writer_version)
    if not new_readers and not new_writers and same:
        return protocol
    want_writer = 7 if new_writers else want_writer
    want_reader = 3 if new_readers else want_reader
    # reader features only at reader 3 with writer 7; reader 2 (column mapping) needs writer 5
    if want_reader == 3:
        want_writer = 7
    elif want_reader == 2:
        want_writer = max(want_writer, 5)
        old_writers = old_writers | {"columnMapping"}
    return Protocol(
        want_reader,
        want_writer,
        tuple(sorted(old_readers | readers)) if want_reader == 3 else None,
        tuple(sorted(old_writers | writers | readers)) if want_writer == 7 else None,
    )


def _versions(changes: Mapping[str, str], protocol: Protocol) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, top in _VERSION_KEYS.items():
        if key not in changes:
            continue
        try:
            v = int(changes[key])
        except ValueError as exc:
            raise InvalidArgumentError(f"{key} must be an integer, got {changes[key]!r}") from exc
        current = protocol.min_reader_version if "Reader" in key else protocol.min_writer_version
        if v < current:
            raise InvalidArgumentError(
                f"{key}={v} would downgrade the protocol (it is {current}); a protocol is never downgraded. "
                "Nothing was written"
            )
        if v > top:
            raise UnsupportedFeatureError(f"{key}={v}: this engine knows versions up to {top}", feature=key)
        out[key] = v
    return out


def set_properties(
    transaction: Callable[[str, dict[str, Any]], Transaction], properties: Mapping[str, str]
) -> int:
    """Merge `properties` into the table's configuration (see the module docstring); the new version.

    :param transaction: the table's `transaction` (operation, parameters) -> a new transaction."""
    changes = mapping("properties", properties, example="{'delta.appendOnly': 'true'}", str_values=True)
    if not changes:
        raise InvalidArgumentError("properties is empty: nothing to set")
    txn = transaction("SET TBLPROPERTIES", {"properties": json.dumps(dict(changes))})
    snap = txn.snapshot
    versions = _versions(changes, snap.protocol)
    readers, writers = features_for(changes)
    # (delta.feature.* and the version keys change the protocol; Delta does not keep them)
    conf = {k: v for k, v in changes.items() if k not in _VERSION_KEYS and not k.startswith(FEATURE_PREFIX)}
    metadata = snap.metadata
    if props.COLUMN_MAPPING_MODE in conf:
        metadata, extra = _mapping(metadata, conf.pop(props.COLUMN_MAPPING_MODE))
        conf.update(extra)
        if extra:
            readers.add("columnMapping")
            writers.add("columnMapping")
    merged = {**metadata.configuration, **conf}
    props.validate({k: v for k, v in merged.items() if k != props.COLUMN_MAPPING_MODE})
    protocol = upgraded(snap.protocol, readers, writers, versions)
    if protocol != snap.protocol:
        txn.update_protocol(protocol)
    txn.update_metadata(dataclasses.replace(metadata, configuration=merged))
    return txn.commit()


def _mapping(metadata: Metadata, value: str) -> tuple[Metadata, dict[str, str]]:
    """(metadata with a mapped schema, properties to set) for `delta.columnMapping.mode` = `value`."""
    new = str(value).strip().lower()
    current = column_mapping.mode(metadata.configuration)
    if new == current:
        return metadata, {}
    if (current, new) != ("none", "name"):
        raise UnsupportedFeatureError(
            f"{props.COLUMN_MAPPING_MODE}: {current!r} -> {new!r} is not supported on an existing table; "
            "only 'none' -> 'name' is (existing files carry no field ids for 'id', and mapping cannot be "
            "undone without rewriting files). Nothing was written",
            feature="columnMapping",
        )
    schema, max_id = column_mapping.mapped_schema(schema_from_json(metadata.schema_string))
    mapped = dataclasses.replace(metadata, schema_string=schema_to_json(schema))
    return mapped, {props.COLUMN_MAPPING_MODE: "name", column_mapping.MAX_COLUMN_ID: str(max_id)}
