"""Delta table features: which ones this engine reads and writes, and how properties turn them on.

Every fact about a feature (wire name, reader-writer or writer-only, the legacy versions implying it,
what turns it on, whether the engine reads, writes and checkpoints it) is in the feature registry
(engine.feature_registry); the sets below are derived from it, and the rules here apply them:

    read   check_read_supported: the reader version and features (SUPPORTED_READER_FEATURES), type
           widening it can read, the column-mapping mode
    write  check_write_supported: the writer version and features (SUPPORTED_WRITER_FEATURES), and the
           features a table's metadata uses that a writer must enforce (constraints, generated and
           identity columns, invariants): a table using one the engine cannot enforce is refused
    legacy implied_features: what a protocol below reader 3 / writer 7 implies (`Feature.legacy`)
    change features_for / upgraded / requested_versions: properties -> the table features they turn
           on (`Feature.switch`, engine.properties.property_features; `delta.feature.<name>` =
           `supported` names one directly; `delta.minReaderVersion` / `minWriterVersion` raise the
           versions) -> the new protocol = the current one + those features, never less: a legacy
           protocol moving to table features lists the features its versions implied (Delta's rule),
           so nothing the table had is lost.

A property whose feature the engine cannot honor (change data feed, row tracking, column mapping,
in-commit timestamps on an existing table, ...) is refused before anything is written; so is any
attempt to lower a protocol version. Turning a feature's property off keeps the feature in the
protocol, as Delta does. The commit that changes properties is engine.write.alter_table's.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError, UnsupportedFeatureError
from airflow_txnlog.engine.features import column_mapping, type_widening
from airflow_txnlog.engine.log.actions import Metadata, Protocol
from airflow_txnlog.engine.schema import (
    schema_from_json,
    schema_to_json,
    uses_timestamp_ntz_json,
    uses_variant,
)

READER_WRITER_FEATURES = registry.names(where="readers")
_VERSION_KEYS = {props.MIN_READER_VERSION: 3, props.MIN_WRITER_VERSION: 7}

# columnMapping: modes name and id (engine.features.column_mapping), read with logical names.
# variantType: read as delta-rs does (engine.schema.VARIANT) and written unshredded
# (engine.features.variant).
SUPPORTED_READER_FEATURES = frozenset(f.name for f in registry.FEATURES if f.readers and f.reads)
MAX_READER_VERSION = 3


def check_read_supported(protocol: Protocol, metadata: Metadata) -> None:
    """Raise UnsupportedFeatureError unless this engine can read the table correctly."""
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedFeatureError(
            f"the table needs reader version {protocol.min_reader_version}; this engine reads up to 3",
            feature=f"readerVersion{protocol.min_reader_version}",
        )
    features = set(protocol.reader_features or ()) if protocol.min_reader_version == 3 else set()
    for feature in sorted(features - SUPPORTED_READER_FEATURES):
        raise UnsupportedFeatureError(
            f"the table uses reader feature {feature!r}, which is not supported", feature=feature
        )
    if features & type_widening.FEATURES or type_widening.TYPE_CHANGES in metadata.schema_string:
        type_widening.check_supported(schema_from_json(metadata.schema_string))
    mapping = column_mapping.mode(metadata.configuration)
    if mapping not in props.COLUMN_MAPPING_MODES:
        raise UnsupportedFeatureError(
            f"column mapping mode {mapping!r} is not supported", feature=registry.COLUMN_MAPPING.name
        )


# deletionVectors: honored by never writing a new DV (allowed: a writer MAY use them), by every
# remove carrying the DV of the file it removes (the key is path + DV id) and by reading DVs wherever
# rows are read (engine scan, Spark scan); maintenance keeps DV files (vacuum, savepoints, restore).
# inCommitTimestamp: every commit's commitInfo (first, as always) carries a strictly increasing
# `inCommitTimestamp`; the commit that turns it on records the enablement version and timestamp.
# changeDataFeed: appends and whole-file removes need nothing (readers infer inserts / deletes); the
# engine's Spark DML, which rewrites parts of files, writes change files (`add_cdc`); a raw
# transaction that rewrites part of a file must add them itself.
# columnMapping: read, renamed, dropped (metadata only); the writers write physical names and field
# ids (`column_mapping.Names.to_files`); a raw transaction adding files must have written them too.
# v2Checkpoint: read; written as UUID-named V2 checkpoints with sidecars while delta.checkpointPolicy=v2
# (engine.log.checkpoint_v2, engine.state.checkpoint), else as classic ones (Delta's default policy).
# domainMetadata: every domain kept as it is (replay, checkpoints) unless a transaction changes it
# (Transaction.set_domain_metadata / remove_domain_metadata, user domains only); a concurrent change
# of the same domain is a conflict (engine.write.conflicts).
# clustering: the `delta.clustering` domain written by Table.create(cluster_by=) / Table.cluster_by with
# physical names, key columns always within the stats columns (a property or drop that would take their
# stats is refused), clusteringProvider set only by the engine's clustering OPTIMIZE, which re-clusters
# only unclustered files or its own (engine.features.clustering, engine.maintenance.layout).
# rowTracking: every commit assigns baseRowId / defaultRowCommitVersion to adds lacking them and moves
# the delta.rowTracking high-water mark, re-based after a lost race (engine.features.row_tracking);
# enabling it backfills the live files in the same commit (engine.write.alter_table).
# typeWidening: honored by never changing a column's type (schema evolution only adds columns, and
# keeps every field's metadata, `delta.typeChanges` included) and by reading widened files.
SUPPORTED_WRITER_FEATURES = registry.names(where="writes")
MAX_WRITER_VERSION = 7
# Features a column or property uses (`features_in_use`) that every write path enforces
# (engine.features.constraints, .generated, .identity; the Spark layer evaluates the same
# expressions with Spark SQL, and refuses what it cannot number), so a table using them is writable.
# Only their nested uses, which Delta has none of, are refused (`_TOP_LEVEL_ONLY`).
ENFORCED_WHEN_USED = registry.names(where="row_rules")
# The row-rule features a column's metadata marks (`Feature.column_key`); Delta makes only top-level
# columns generated or identity columns, and the writers here enforce only those.
_MARKED = tuple(f for f in registry.FEATURES if f.row_rules and f.column_key)
_TOP_LEVEL_ONLY = (registry.GENERATED_COLUMNS, registry.IDENTITY_COLUMNS)


def check_write_supported(protocol: Protocol, metadata: Metadata) -> None:
    """Raise UnsupportedFeatureError unless this engine can write the table without breaking it."""
    check_read_supported(protocol, metadata)
    w = protocol.min_writer_version
    if w > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(f"the table needs writer version {w}", feature=f"writerVersion{w}")
    if w == MAX_WRITER_VERSION:
        listed = set(protocol.writer_features or ())
        for feature in sorted(listed - SUPPORTED_WRITER_FEATURES):
            raise UnsupportedFeatureError(
                f"the table uses writer feature {feature!r}, which this engine cannot write", feature=feature
            )
    for feature, where in sorted(features_in_use(metadata).items()):
        if feature in ENFORCED_WHEN_USED and not _nested_use(metadata, feature):
            continue
        raise UnsupportedFeatureError(
            f"the table uses {feature} ({where}), which this engine cannot enforce when writing",
            feature=feature,
        )


def _nested_use(metadata: Metadata, feature: str) -> bool:
    """Whether a nested field uses `feature`, one of `_TOP_LEVEL_ONLY` (generation expression,
    identity metadata); False for the other features."""
    marked = next((f for f in _TOP_LEVEL_ONLY if f.name == feature), None)
    if marked is None:
        return False
    paths = _field_metadata(json.loads(metadata.schema_string))
    return any("." in path and any(marked.marks(k) for k in keys) for path, keys in paths)


def features_in_use(metadata: Metadata) -> dict[str, str]:
    """The features the table's properties and columns use that a writer must enforce, each with
    where it is used (a property, or a column path)."""
    used: dict[str, str] = {}
    constraints = sorted(k for k in metadata.configuration if k.startswith(props.CONSTRAINT_PREFIX))
    if constraints:
        used[registry.CHECK_CONSTRAINTS.name] = f"property {constraints[0]}"
    for path, keys in _field_metadata(json.loads(metadata.schema_string)):
        for feature in _MARKED:
            if any(feature.marks(k) for k in keys):
                used.setdefault(feature.name, f"column {path}")
    return used


def schema_features(protocol: Protocol, schema_string: str) -> set[str]:
    """The reader-writer features a schema's types need that `protocol` does not name yet:
    `variantType` for a variant column (unless Delta 3's `variantType-preview` is there: the same
    format, and readers that know only that name must keep reading), `timestampNtz` for a timestamp
    without time zone (at any depth)."""
    _, named = implied_features(protocol)
    needed = set()
    variants = {registry.VARIANT_TYPE.name, registry.VARIANT_TYPE_PREVIEW.name}
    if uses_variant(schema_string) and not named & variants:
        needed.add(registry.VARIANT_TYPE.name)
    if uses_timestamp_ntz_json(schema_string) and registry.TIMESTAMP_NTZ.name not in named:
        needed.add(registry.TIMESTAMP_NTZ.name)
    return needed


def _field_metadata(node: Any, path: str = "") -> Iterator[tuple[str, set[str]]]:
    """(column path, its metadata keys) of every field of a Delta schema JSON, nested ones included."""
    if not isinstance(node, dict):
        return
    if node.get("type") == "struct":
        for field in node.get("fields", []):
            name = f"{path}.{field.get('name')}" if path else str(field.get("name"))
            yield name, set(field.get("metadata") or {})
            yield from _field_metadata(field.get("type"), name)
    elif node.get("type") == "array":
        yield from _field_metadata(node.get("elementType"), f"{path}.element")
    elif node.get("type") == "map":
        yield from _field_metadata(node.get("keyType"), f"{path}.key")
        yield from _field_metadata(node.get("valueType"), f"{path}.value")


# What a legacy protocol version implies (PROTOCOL.md "Table Features"): feature -> (reader, writer).
_LEGACY = {f.name: (f, f.legacy) for f in registry.FEATURES if f.legacy is not None}


def implied_features(protocol: Protocol) -> tuple[set[str], set[str]]:
    """(reader features, writer features) the protocol supports: listed ones at versions 3 / 7,
    the ones a legacy version implies below them (reader-writer ones on the reader side too)."""
    readers = set(protocol.reader_features or ())
    writers = set(protocol.writer_features or ())
    r, w = protocol.min_reader_version, protocol.min_writer_version
    for name, (feature, (reader, writer)) in _LEGACY.items():
        if w < MAX_WRITER_VERSION and writer <= w:
            writers.add(name)
        if r < MAX_READER_VERSION and feature.readers and reader <= r:
            readers.add(name)
    return readers, writers


# Writer features whose state a classic checkpoint (engine.state.checkpoint's columns) carries
# completely (`Feature.checkpoints`): table properties, schema metadata, column types, domainMetadata
# rows and the add fields of row tracking and clustering, and the deletion vector descriptors of adds
# and removes (deletionVectors; a part may hold an add and a tombstone of one path with different DVs:
# rows are keyed by (path, DV id)). v2Checkpoint tables with policy v2 get UUID-named V2 checkpoints
# with sidecars (engine.state.checkpoint). Anything else (features not yet known) is refused
# rather than written lossily. (The log holds no variant values; stats_parsed has its nullCount only.)
CHECKPOINT_WRITER_FEATURES = registry.names(where="checkpoints")


def require_checkpoint_supported(protocol: Protocol, action: str) -> None:
    """UnsupportedFeatureError unless a checkpoint written by this engine keeps all of the table's state.

    :param action: what the caller was about to do, for the message ("write a checkpoint", ...).
    """
    w = protocol.min_writer_version
    if w > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"cannot {action}: the table needs writer version {w}; this engine writes checkpoints up to 7",
            feature=f"writerVersion{w}",
        )
    if w < MAX_WRITER_VERSION:
        return  # legacy protocols imply only features a classic checkpoint carries
    for feature in sorted(set(protocol.writer_features or ()) - CHECKPOINT_WRITER_FEATURES):
        raise UnsupportedFeatureError(
            f"cannot {action}: the table uses writer feature {feature!r}, which this engine's checkpoints "
            "cannot carry; a checkpoint without it would lose table state once older commits are cleaned. "
            "Nothing was written. Help: let an engine that supports the feature checkpoint this table",
            feature=feature,
        )


def changes_protocol_only(key: str) -> bool:
    """`delta.feature.*` and the version keys change the protocol; Delta does not keep them as properties."""
    return key in _VERSION_KEYS or key.startswith(props.FEATURE_PREFIX)


def features_for(changes: Mapping[str, str]) -> tuple[set[str], set[str]]:
    """(reader features, writer features) the changed properties turn on, `delta.feature.<name>` =
    `supported` included (UnsupportedFeatureError for one the engine cannot honor)."""
    readers, writers = props.property_features(changes)
    for key, value in changes.items():
        if key.startswith(props.FEATURE_PREFIX) and str(value).strip().lower() == "supported":
            feature = key[len(props.FEATURE_PREFIX) :]
            if feature == registry.CLUSTERING.name:  # (Delta refuses it too: the table needs its domain)
                raise InvalidArgumentError(
                    f"{key}: a table is clustered by naming its keys; nothing was written. Help: use "
                    "Table.cluster_by([...]) (or cluster_by= at create)"
                )
            if feature not in SUPPORTED_WRITER_FEATURES:
                raise UnsupportedFeatureError(
                    f"{key}=supported: this engine cannot honor table feature {feature!r}; nothing was "
                    "written",
                    feature=feature,
                )
            writers.add(feature)
            if feature in READER_WRITER_FEATURES:
                readers.add(feature)
    return readers, registry.with_required(writers)


def upgraded(
    protocol: Protocol, readers: set[str], writers: set[str], versions: Mapping[str, int]
) -> Protocol:
    """The protocol with the features added (never lower than `protocol`; itself when it has them)."""
    old_readers, old_writers = implied_features(protocol)
    want_reader = max(protocol.min_reader_version, versions.get(props.MIN_READER_VERSION, 0))
    want_writer = max(protocol.min_writer_version, versions.get(props.MIN_WRITER_VERSION, 0))
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
        old_writers = old_writers | {registry.COLUMN_MAPPING.name}
    return Protocol(
        want_reader,
        want_writer,
        tuple(sorted(old_readers | readers)) if want_reader == 3 else None,
        tuple(sorted(old_writers | writers | readers)) if want_writer == 7 else None,
    )


# The legacy writer version that first implied each feature (PROTOCOL.md "Table Features").
LEGACY_WRITER_VERSION = {name: versions[1] for name, (_, versions) in _LEGACY.items()}


def with_writer_feature(protocol: Protocol, feature: str) -> Protocol:
    """The protocol that supports writer `feature`, as Delta upgrades a table when a metadata change
    first uses it: a legacy protocol rises to the writer version that implies the feature (adding a
    CHECK constraint to a (1, 2) table gives (1, 3)); a table-features protocol lists it."""
    if feature in implied_features(protocol)[1]:
        return protocol
    legacy = LEGACY_WRITER_VERSION.get(feature)
    if protocol.min_writer_version < MAX_WRITER_VERSION and legacy is not None:
        return Protocol(protocol.min_reader_version, legacy)
    return upgraded(protocol, set(), {feature}, {})


def requested_versions(changes: Mapping[str, str], protocol: Protocol) -> dict[str, int]:
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


def enable_column_mapping(metadata: Metadata, value: str) -> tuple[Metadata, dict[str, str]]:
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
            feature=registry.COLUMN_MAPPING.name,
        )
    schema, max_id = column_mapping.mapped_schema(schema_from_json(metadata.schema_string))
    mapped = dataclasses.replace(metadata, schema_string=schema_to_json(schema))
    return mapped, {props.COLUMN_MAPPING_MODE: "name", props.MAX_COLUMN_ID: str(max_id)}


def v2_checkpoints(conf: Mapping[str, str]) -> bool:
    """Whether `delta.checkpointPolicy` asks for V2 checkpoints (`v2`; Delta's default is `classic`:
    a table listing the v2Checkpoint feature without the property gets classic ones, as from Delta)."""
    return str(conf.get(props.CHECKPOINT_POLICY, "classic")).strip().lower() == "v2"
