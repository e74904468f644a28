"""Version 0 of a new table: the checks of `Table.create`'s arguments, and the actions it commits.

Every argument is checked before the storage is touched, so a refused create writes nothing:
- schema: a non-empty `pyarrow.Schema`, column names non-empty and unique ignoring case;
- partition_by: a list or tuple of schema columns (a bare string is refused rather than read as one
  column per letter), of primitive types, without repeats, leaving at least one data column;
- properties: a mapping of str to str (Delta's `configuration` is text) whose `delta.*` values that
  the engine interprets are well-formed (`engine.properties.validate`);
- name, description: strings or None.
Version 0 holds commitInfo, protocol and metaData. The protocol is (1, 2), or (3, 7) with the
`timestampNtz` feature when the schema has timezone-less timestamps (`appendOnly` then becomes a
writer feature too, when the table is append-only). With `delta.columnMapping.mode` = `name` or `id`
every field (nested ones too) gets an id and a physical name `col-<uuid>`, as Delta's CREATE gives
them, and the protocol is (2, 5) -- or `columnMapping` is listed when table features are needed anyway.
Deferred creation (`Table.create(defer=True)`) writes nothing: the table reads `deferred_snapshot`,
version -1 holding the protocol and metaData, until its first transaction commits them with its own
actions as version 0 -- what Delta writes for a first write to a new path (`df.write.save(path)`) or
a CREATE TABLE AS SELECT: one commit, no empty version for sensors and readers to see.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Mapping, Sequence

import orjson
import pyarrow as pa

from airflow_txnlog._shown import shown
from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import (
    InvalidArgumentError,
    StorageError,
    TableCreatedConcurrentlyError,
    TableExistsError,
    UnsupportedExpressionError,
    UnsupportedFeatureError,
)
from airflow_txnlog.engine.features import (
    char_varchar,
    clustering,
    column_defaults,
    column_mapping,
    constraints,
    generated,
    iceberg_compat,
    identity,
    row_tracking,
    table_features,
    variant,
)
from airflow_txnlog.engine.features.identity import IdentityColumn
from airflow_txnlog.engine.features.table_features import upgraded, with_writer_feature
from airflow_txnlog.engine.log.actions import (
    DOMAIN_METADATA,
    IN_COMMIT_TIMESTAMP,
    Action,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    serialize_actions,
)
from airflow_txnlog.engine.log.log_paths import commit_name
from airflow_txnlog.engine.log.log_segment import LogSegment
from airflow_txnlog.engine.log.replay import LogState
from airflow_txnlog.engine.log.stats import stats_columns
from airflow_txnlog.engine.schema import normalize_schema, schema_to_json, uses_timestamp_ntz, uses_variant
from airflow_txnlog.engine.state.snapshot import Snapshot, load_snapshot
from airflow_txnlog.engine.storage import LOG_DIR, Storage
from airflow_txnlog.engine.validate import mapping, text
from airflow_txnlog.engine.write import provenance, version_checksums
from airflow_txnlog.engine.write.transaction import ENGINE_INFO


def _partition_columns(partition_by: object) -> tuple[str, ...]:
    if isinstance(partition_by, str | bytes) or not isinstance(partition_by, Sequence):
        raise InvalidArgumentError(
            f"partition_by must be a list or tuple of column names such as ['day'], or (); "
            f"got {type(partition_by).__name__} {shown(partition_by)}"
        )
    parts = tuple(partition_by)
    if not all(isinstance(c, str) for c in parts):
        raise InvalidArgumentError(f"partition_by must hold column names (str), got {shown(list(parts))}")
    return parts


def _validate_schema(schema: pa.Schema, partition_by: tuple[str, ...]) -> pa.Schema:
    if not isinstance(schema, pa.Schema) or len(schema) == 0:
        raise InvalidArgumentError("schema must be a non-empty pyarrow.Schema")
    lowered = [n.lower() for n in schema.names]
    if len(set(lowered)) != len(lowered) or any(not n for n in schema.names):
        raise InvalidArgumentError(
            f"column names must be non-empty and unique (case-insensitive): {schema.names}"
        )
    for c in partition_by:
        if c not in schema.names:
            raise InvalidArgumentError(f"partition column {c!r} is not in the schema {schema.names}")
        t = schema.field(c).type
        if pa.types.is_nested(t):
            raise InvalidArgumentError(f"partition column {c!r} must have a primitive type, not {t}")
    if len(set(partition_by)) != len(partition_by):
        raise InvalidArgumentError(f"partition columns repeat: {list(partition_by)}")
    if partition_by and len(partition_by) == len(schema):
        raise InvalidArgumentError("at least one column must not be a partition column")
    return normalize_schema(schema)


# Column metadata the engine writes itself (`Feature.assigned`: identity columns, column mapping ids and
# names): a column carrying it raw is refused. (Generation expressions come through `generated=` or
# the field metadata, invariants through the field metadata: both checked.)
_ASSIGNED = tuple(f for f in registry.FEATURES if f.assigned)


def _refuse_column_features(schema: pa.Schema) -> None:
    def walk(field: pa.Field, path: str) -> None:
        for raw_key in field.metadata or {}:
            key = raw_key.decode() if isinstance(raw_key, bytes) else str(raw_key)
            for feature in _ASSIGNED:
                if feature.marks(key):
                    raise UnsupportedFeatureError(
                        f"column {path!r} has metadata {key!r}, which needs the table feature "
                        f"{feature.name!r}; nothing was created. Help: make identity columns with "
                        "identity_columns= (which checks them), and column mapping with the "
                        "delta.columnMapping.mode property",
                        feature=feature.name,
                    )
        t = field.type
        if pa.types.is_struct(t):
            children = [(c, f"{path}.{c.name}") for c in t]
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            children = [(t.value_field, f"{path}.element")]
        elif pa.types.is_map(t):
            children = [(t.key_field, f"{path}.key"), (t.item_field, f"{path}.value")]
        else:
            children = []
        for child, child_path in children:
            walk(child, child_path)

    for f in schema:
        walk(f, f.name)


def version_zero(
    schema: pa.Schema,
    *,
    partition_by: Sequence[str],
    properties: Mapping[str, str] | None,
    name: str | None,
    description: str | None,
    generated_columns: Mapping[str, str] | None = None,
    identity_columns: Mapping[str, IdentityColumn] | None = None,
    cluster_by: Sequence[str] | None = None,
    spark_expressions: bool = False,
) -> list[Action]:
    """commitInfo, protocol and metaData of a new table (InvalidArgumentError for a bad argument),
    and with `cluster_by` its `delta.clustering` domain.

    :param generated_columns: column -> Spark SQL generation expression (engine.features.generated).
    :param identity_columns: column -> IdentityColumn (engine.features.identity).
    :param cluster_by: clustering columns (engine.features.clustering); never with partition_by.
    :param spark_expressions: accept generation expressions only Spark computes (SparkTable.create)."""
    parts = _partition_columns(partition_by)
    schema, norm = _checked_schema(schema, parts, generated_columns, identity_columns, spark_expressions)
    conf = _checked_properties(properties)
    text("name", name)
    text("description", description)
    variant.refuse_generated(norm, generated.of_schema(norm))
    char_varchar.specs(norm)  # (a CHAR / VARCHAR type string the writes could not keep is refused now)
    schema, conf = _named_columns(schema, norm, conf)
    protocol = _with_rules(_protocol(conf, ntz=uses_timestamp_ntz(norm)), schema, conf)
    if uses_variant(schema_to_json(norm)):  # (reader 3 / writer 7 with the feature on both sides)
        protocol = table_features.upgraded(protocol, {variant.FEATURE}, {variant.FEATURE}, {})
    protocol, domains = _clustering(protocol, cluster_by, parts, norm, schema, conf)
    now = int(time.time() * 1000)
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=schema_to_json(schema),
        partition_columns=parts,
        configuration=conf,
        name=name,
        description=description,
        created_time=now,
    )
    iceberg_compat.check_commit(None, metadata, protocol, ())
    return [_commit_info(now, metadata, domains, schema), protocol, metadata, *domains]


def _checked_schema(
    schema: pa.Schema,
    parts: tuple[str, ...],
    generated_columns: Mapping[str, str] | None,
    identity_columns: Mapping[str, IdentityColumn] | None,
    spark_expressions: bool,
) -> tuple[pa.Schema, pa.Schema]:
    """(the schema with its identity and generated columns, the same normalized), or the error of
    the first bad column."""
    _refuse_column_features(schema)  # (raw identity metadata: identity_columns= checks it instead)
    if identity_columns:
        schema = identity.with_identity(schema, identity_columns, list(parts))
    # (expressions given as field metadata are checked the same way; a variant result first: no
    # expression could give one)
    by_lower = {n.lower(): n for n in schema.names}
    named = {by_lower.get(str(c).lower(), str(c)): e for c, e in (generated_columns or {}).items()}
    variant.refuse_generated(schema, {**generated.of_schema(schema), **named})
    schema = generated.with_generated(schema, generated_columns or {}, spark_only=spark_expressions)
    return schema, _validate_schema(schema, parts)


def _checked_properties(properties: object) -> dict[str, str]:
    """The properties of a new table, in Delta's spelling and checked (engine.properties)."""
    conf = mapping("properties", properties, example="{'delta.appendOnly': 'true'}", str_values=True)
    conf = props.checked_changes(conf)
    if props.TableProperties(conf).iceberg_compat_v2 and props.COLUMN_MAPPING_MODE not in conf:
        conf[props.COLUMN_MAPPING_MODE] = "name"  # (Delta's CREATE sets it: icebergCompatV2 needs it)
    iceberg_compat.check_configuration(conf)
    props.validate(conf)
    stats_columns(conf)  # malformed quoting in delta.dataSkippingStatsColumns: InvalidArgumentError
    return conf


def _named_columns(
    schema: pa.Schema, norm: pa.Schema, conf: dict[str, str]
) -> tuple[pa.Schema, dict[str, str]]:
    """The schema and properties with the names the features give: under column mapping every field
    (of `norm`, the normalized schema) an id and a new physical name, as Delta's CREATE gives them;
    with row tracking the hidden columns (PROTOCOL.md "Row Tracking")."""
    mapped = props.TableProperties(conf).column_mapping_mode != "none"
    if mapped:
        schema, top = column_mapping.mapped_schema(norm, fresh=True)
        if props.TableProperties(conf).iceberg_compat_v2:
            schema, top = column_mapping.with_nested_ids(schema, top)
        conf[props.MAX_COLUMN_ID] = str(top)
    if props.TableProperties(conf).row_tracking:
        taken = [*schema.names, *(column_mapping.physical_names(schema).values() if mapped else ())]
        conf = row_tracking.with_column_names(conf, taken)
    return schema, conf


def _commit_info(
    now: int, metadata: Metadata, domains: Sequence[DomainMetadata], schema: pa.Schema
) -> CommitInfo:
    """Version 0's commitInfo (Delta's CREATE TABLE parameters; `clusterBy` for a clustered table)."""
    conf = dict(metadata.configuration)
    parameters = {
        "isManaged": "false",
        "description": metadata.description or "",
        "partitionBy": orjson.dumps(list(metadata.partition_columns)).decode(),
        "properties": orjson.dumps(conf).decode(),
    }
    if domains:
        keys = clustering.columns_of(_domain_map(domains), schema, conf)
        parameters["clusterBy"] = orjson.dumps(keys).decode()
    return CommitInfo(
        timestamp=now,
        operation="CREATE TABLE",
        operation_parameters=parameters,
        is_blind_append=True,
        engine_info=ENGINE_INFO,
        txn_id=str(uuid.uuid4()),
        extra={IN_COMMIT_TIMESTAMP: now} if props.TableProperties(conf).in_commit_timestamps else {},
    )


def _domain_map(domains: Sequence[DomainMetadata]) -> dict[str, str]:
    return {d.domain: d.configuration for d in domains}


def _clustering(  # noqa: PLR0917 (version_zero's pieces, passed straight on)
    protocol: Protocol,
    cluster_by: Sequence[str] | None,
    parts: Sequence[str],
    norm: pa.Schema,
    schema: pa.Schema,
    conf: Mapping[str, str],
) -> tuple[Protocol, list[DomainMetadata]]:
    """The protocol and domain of a clustered table (`cluster_by` checked; none for None)."""
    if cluster_by is None:
        return protocol, []
    if parts:
        raise InvalidArgumentError(
            "cluster_by and partition_by cannot be used together: a clustered table is never "
            'partitioned (PROTOCOL.md "Clustered Table"); choose one'
        )
    keys = clustering.layout_columns(
        cluster_by, norm, partition_columns=(), conf=conf, what="cluster_by",
        limit=clustering.MAX_CLUSTERING_COLUMNS,
    )  # fmt: skip
    for feature in (*registry.CLUSTERING.requires, registry.CLUSTERING.name):
        protocol = with_writer_feature(protocol, feature)
    return protocol, [clustering.domain_action(keys, schema, conf)]


def _protocol(conf: Mapping[str, str], *, ntz: bool) -> Protocol:
    """(1, 2) unless a feature needs table features: timestampNtz (reader and writer), in-commit
    timestamps (writer only), and the features properties turn on (`table_features.upgraded`); at
    writer version 7 appendOnly is listed when the property is on."""
    parsed = props.TableProperties(conf)
    ntz_name = registry.TIMESTAMP_NTZ.name
    writer = [ntz_name] if ntz else []
    writer += [registry.IN_COMMIT_TIMESTAMP.name] if parsed.in_commit_timestamps else []
    base = Protocol(1, 2)
    if writer:
        writer += [registry.APPEND_ONLY.name] if parsed.append_only else []
        base = Protocol(3, 7, (ntz_name,), tuple(writer)) if ntz else Protocol(1, 7, None, tuple(writer))
    readers, writers = props.property_features(conf)  # deletion vectors, type widening, v2 checkpoints
    versions: dict[str, int] = {}
    if parsed.column_mapping_mode != "none":
        if readers or writers or base.min_writer_version == 7:
            readers.add(registry.COLUMN_MAPPING.name)
        else:  # on its own: the legacy (2, 5), which every reader of column mapping knows
            assert registry.COLUMN_MAPPING.legacy is not None
            reader, writer_version = registry.COLUMN_MAPPING.legacy
            versions = {props.MIN_READER_VERSION: reader, props.MIN_WRITER_VERSION: writer_version}
    return upgraded(base, readers, writers, versions)


def _with_rules(protocol: Protocol, schema: pa.Schema, conf: Mapping[str, str]) -> Protocol:
    """`protocol` with the features the table's CHECK constraints and invariants need (each
    expression checked to parse over the schema's columns first: PredicateError)."""
    metadata = Metadata(
        id="", schema_string=schema_to_json(schema), partition_columns=(), configuration=dict(conf)
    )
    generated.refuse_nested(metadata.schema_string)
    identity.refuse_generated(identity.of_metadata(metadata), generated.of_schema(schema))
    if identity.of_metadata(metadata):
        protocol = table_features.with_writer_feature(protocol, registry.IDENTITY_COLUMNS.name)
    if generated.of_schema(schema):
        protocol = table_features.with_writer_feature(protocol, registry.GENERATED_COLUMNS.name)
    column_defaults.refuse_nested(metadata.schema_string)
    if defaults := column_defaults.of_schema(schema):
        for column, expression in defaults.items():  # (each must evaluate: refused now)
            column_defaults.value(expression, schema.field(column), schema)
        protocol = table_features.with_writer_feature(protocol, column_defaults.FEATURE)
    for rule in constraints.rules(metadata, protocol):
        if rule.kind == constraints.GENERATED:
            continue
        constraints.check_expression(
            rule.expression, schema, rule.name if rule.kind == constraints.CHECK else None
        )
        with contextlib.suppress(UnsupportedExpressionError):  # (Spark evaluates what the engine cannot)
            constraints.compile_rules([rule], schema)  # a non-boolean one: PredicateError
        feature = registry.CHECK_CONSTRAINTS if rule.kind == constraints.CHECK else registry.INVARIANTS
        protocol = table_features.with_writer_feature(protocol, feature.name)
    return protocol


def with_provenance(actions: list[Action]) -> list[Action]:
    """Version 0's commitInfo with the provenance every Transaction commit gets (engine.write.provenance)."""
    out: list[Action] = []
    for action in actions:
        if isinstance(action, CommitInfo):
            tags, extra = provenance.commit_fields({}, action.extra)
            out.append(dataclasses.replace(action, extra={**extra, "tags": tags} if tags else extra))
        else:
            out.append(action)
    return out


def deferred_snapshot(storage: Storage, actions: list[Action]) -> Snapshot:
    """What a table created with `defer=True` reads before its first commit: version -1, with the
    protocol and metaData of `version_zero`'s `actions` (which that commit writes; see the module)."""
    protocol = next(a for a in actions if isinstance(a, Protocol))
    metadata = next(a for a in actions if isinstance(a, Metadata))
    domains = {a.domain: a.to_wire()[DOMAIN_METADATA] for a in actions if isinstance(a, DomainMetadata)}
    state = LogState(version=-1, protocol=protocol, metadata=metadata, domains=domains)
    return Snapshot(storage, state, LogSegment(-1, None, [], []), {})


def unclaimed(snap: Snapshot) -> Snapshot:
    """A deferred create's `snap` while its location is still empty; once another writer has made a
    version 0 there, TableCreatedConcurrentlyError (its table may differ from the one asked for)."""
    if snap.update().version >= 0:
        raise TableCreatedConcurrentlyError()
    return snap


def create_at(storage: Storage, actions: list[Action], *, defer: bool) -> Snapshot:
    """Create the table `actions` (version_zero's) describe at `storage`: refuse a location that has a
    table (TableExistsError), then write version 0 and return its snapshot, or with `defer` write
    nothing and return the deferred snapshot (version -1) the first commit will make real."""
    try:
        existing = storage.list_log()
    except OSError as exc:  # e.g. a file where the folder should be, a missing bucket
        raise StorageError(f"cannot create the table at {storage.root!r}: {exc}") from exc
    if any(f.name.endswith(".json") for f in existing):
        raise TableExistsError(f"a Delta table already exists at {storage.root!r}")
    if defer:
        return deferred_snapshot(storage, actions)
    try:
        storage.put_if_absent(f"{LOG_DIR}/{commit_name(0)}", serialize_actions(actions))
    except FileExistsError as exc:
        raise TableExistsError(f"a Delta table already exists at {storage.root!r}") from exc
    except OSError as exc:
        raise StorageError(f"cannot create the table at {storage.root!r}: {exc}") from exc
    snapshot = load_snapshot(storage)
    version_checksums.write_exact(storage, snapshot)
    return snapshot
