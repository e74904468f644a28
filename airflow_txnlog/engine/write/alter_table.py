"""Delta's ALTER TABLE: metadata-only commits. SET TBLPROPERTIES (with the protocol upgrade the
properties need, engine.features.table_features), and the schema changes of column-mapped tables:
RENAME COLUMN, DROP COLUMNS, turning column mapping on (Delta PROTOCOL.md "Column Mapping").

Under column mapping a field's logical name (what users see) is separate from its physical name
(what files, stats and partition values use), so renaming changes only the logical name and dropping
only removes the field from the schema: no data file is rewritten, and older versions read as before.

    enable (`delta.columnMapping.mode` = `name` on a table without mapping): every field, nested ones
        too, gets `delta.columnMapping.id` (1, 2, ... depth first) and `physicalName` = its current
        name, which is what the existing files use; `delta.columnMapping.maxColumnId` records the
        highest id; the protocol gains the `columnMapping` feature. `id` mode needs field ids in
        every file, which existing files lack: only at table creation (refused here).
    rename `a` -> `b` (dotted paths for nested fields: `s.x`): the field keeps its physical name and
        id; a renamed partition column is renamed in `partitionColumns` too.
    drop: the fields leave the schema (never a partition column, never every column).

Each is one commit of a new metaData (and protocol, when mapping is enabled).

ADD CONSTRAINT / DROP CONSTRAINT (engine.features.constraints): adding one first checks every live
row of the version the transaction read (the engine's Arrow evaluator by default; `SparkTable`
passes a Spark check) and commits only if none breaks it, with the protocol raised as Delta raises
it (a legacy writer version to 3, else the `checkConstraints` feature). The transaction records the
whole table as read, so a concurrent append (rows nobody checked) makes it fail with a conflict.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import (
    InvalidArgumentError,
    PropertyNotSetError,
    UnsupportedExpressionError,
    UnsupportedFeatureError,
)
from airflow_txnlog.engine.features import (
    clustering,
    column_defaults,
    column_mapping,
    constraints,
    generated,
    iceberg_compat,
    identity,
    row_tracking,
    table_features,
)
from airflow_txnlog.engine.log.actions import Metadata
from airflow_txnlog.engine.schema import schema_from_json, schema_to_json
from airflow_txnlog.engine.sql.expressions import violations
from airflow_txnlog.engine.state.scan import read_file
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.validate import mapping, names, text
from airflow_txnlog.engine.write.transaction import Transaction

HELP_ENABLE = "Help: set_properties({'delta.columnMapping.mode': 'name'}) first (no file is rewritten)"
Begin = Callable[[str, dict[str, Any]], Transaction]
# (snapshot, rule) -> (how many live rows break the rule, one of them or None)
RowCheck = Callable[[Snapshot, constraints.Rule], tuple[int, dict[str, Any] | None]]


def _require_mapping(snap: Snapshot, what: str) -> None:
    if snap.table_properties.column_mapping_mode == "none":
        raise UnsupportedFeatureError(
            f"{what} needs column mapping (the files keep the old names); this table has none. {HELP_ENABLE}",
            feature=registry.COLUMN_MAPPING.name,
        )


def _path(spec: str, what: str) -> list[str]:
    text(what, spec)
    parts = spec.split(".")
    if not spec or any(not p for p in parts):
        raise InvalidArgumentError(f"{what}: {spec!r} is not a column name or dotted path")
    return parts


def _rename_in(fields: list[pa.Field], path: list[str], new: str, full: str) -> list[pa.Field]:
    lower = {f.name.lower(): i for i, f in enumerate(fields)}
    i = lower.get(path[0].lower())
    if i is None:
        raise InvalidArgumentError(
            f"rename_column: no column {full!r}; columns are {[f.name for f in fields]}"
        )
    f = fields[i]
    if len(path) > 1:
        if not pa.types.is_struct(f.type):
            raise InvalidArgumentError(
                f"rename_column: {f.name!r} is not a struct, so {full!r} names nothing"
            )
        f = f.with_type(pa.struct(_rename_in(list(f.type), path[1:], new, full)))
    else:
        if new.lower() in lower and lower[new.lower()] != i:
            raise InvalidArgumentError(f"rename_column: a column {new!r} already exists there")
        f = f.with_name(new)
    return [*fields[:i], f, *fields[i + 1 :]]


def _refuse_ruled(txn: Transaction, columns: Sequence[str], what: str, *, dropping: bool = False) -> None:
    """InvalidArgumentError when a row rule (constraint, invariant, generated column) names one of
    `columns` or is on one of them: renamed or dropped, its expression would name nothing (Delta
    refuses the same). `dropping`: a rule on a dropped column goes with it (a generated column or
    an invariant is dropped whole)."""
    snap = txn.snapshot
    lower = {c.lower() for c in columns}
    for rule in constraints.rules(snap.metadata, snap.protocol):
        named = generated.expression_columns(rule.generation or rule.expression)
        if dropping and rule.kind != constraints.CHECK and rule.name.split(".")[0].lower() in lower:
            continue
        if rule.kind != constraints.CHECK:
            named.add(rule.name.split(".")[0].lower())  # the column an invariant or generation is on
        if named & lower:
            raise InvalidArgumentError(
                f"{what}: {rule.label} uses column {sorted(named & lower)[0]!r}; drop or change the rule "
                "first. Nothing was written"
            )


def rename_column(begin: Begin, old: str, new: str) -> int:
    """Rename column `old` (a dotted path for a nested field) to `new`; the new version."""
    path = _path(old, "rename_column: old")
    text("rename_column: new", new)
    if not new or "." in new:
        raise InvalidArgumentError(f"rename_column: new name {new!r} must be a plain, non-empty name")
    txn = begin("RENAME COLUMN", {"oldColumnPath": old, "newColumnPath": new})
    meta = txn.snapshot.metadata
    _refuse_ruled(txn, [path[0]], "rename_column")
    _require_mapping(txn.snapshot, "rename_column")
    schema = schema_from_json(meta.schema_string)
    renamed = pa.schema(_rename_in(list(schema), path, new, old), metadata=schema.metadata)
    parts = tuple(
        new if len(path) == 1 and c.lower() == path[0].lower() else c for c in meta.partition_columns
    )
    txn.update_metadata(
        dataclasses.replace(meta, schema_string=schema_to_json(renamed), partition_columns=parts)
    )
    return txn.commit()


def drop_columns(begin: Begin, columns: Sequence[str]) -> int:
    """Drop top-level `columns` from the schema; the new version."""
    wanted = names("drop_columns: columns", list(columns), none_means="")
    if not wanted:
        raise InvalidArgumentError("drop_columns: name at least one column")
    txn = begin("DROP COLUMNS", {"columns": json.dumps(list(wanted))})
    meta = txn.snapshot.metadata
    _require_mapping(txn.snapshot, "drop_columns")
    schema = schema_from_json(meta.schema_string)
    by_lower = {f.name.lower(): f.name for f in schema}
    missing = [c for c in wanted if c.lower() not in by_lower]
    if missing:
        raise InvalidArgumentError(f"drop_columns: no columns {missing}; columns are {schema.names}")
    drop = {by_lower[c.lower()] for c in wanted}
    _refuse_ruled(txn, sorted(drop), "drop_columns", dropping=True)
    keys = drop & set(txn.snapshot.clustering_columns())
    if keys:
        raise InvalidArgumentError(
            f"drop_columns: {sorted(keys)} are clustering columns; change the keys first (cluster_by)"
        )
    parts = drop & set(meta.partition_columns)
    if parts:
        raise InvalidArgumentError(
            f"drop_columns: {sorted(parts)} are partition columns and cannot be dropped"
        )
    if len(drop) == len(schema):
        raise InvalidArgumentError("drop_columns: a table keeps at least one column")
    kept = pa.schema([f for f in schema if f.name not in drop], metadata=schema.metadata)
    txn.update_metadata(dataclasses.replace(meta, schema_string=schema_to_json(kept)))
    return txn.commit()


def set_properties(begin: Begin, properties: Mapping[str, str], *, rewrite_files: bool = False) -> int:
    """Merge `properties` into the table's configuration and upgrade the protocol to the features
    they turn on (engine.features.table_features); the new version.

    :param begin: the table's `transaction` (operation, parameters) -> a new transaction.
    :param rewrite_files: the caller rewrites the files icebergCompatV2 needs rewritten
        (engine.maintenance.uniform); without it, turning the compat on for a table with
        files is refused."""
    changes = mapping("properties", properties, example="{'delta.appendOnly': 'true'}", str_values=True)
    if not changes:
        raise InvalidArgumentError("properties is empty: nothing to set")
    changes = props.checked_changes(changes)
    for key in changes:
        if key.lower().startswith(constraints.CONSTRAINT_PREFIX):
            raise InvalidArgumentError(
                f"{key} cannot be set as a property: a CHECK constraint is added with add_constraint, which "
                "checks the existing rows first. Nothing was written"
            )
    txn = begin("SET TBLPROPERTIES", {"properties": json.dumps(dict(changes))})
    snap = txn.snapshot
    versions = table_features.requested_versions(changes, snap.protocol)
    readers, writers = table_features.features_for(changes)
    # (delta.feature.* and the version keys change the protocol; Delta does not keep them)
    conf = {k: v for k, v in changes.items() if not table_features.changes_protocol_only(k)}
    metadata = snap.metadata
    conf = _iceberg_compat_on(snap, conf, rewrite_files)
    if props.COLUMN_MAPPING_MODE in conf:
        metadata, extra = table_features.enable_column_mapping(metadata, conf.pop(props.COLUMN_MAPPING_MODE))
        conf.update(extra)
        if extra:
            readers.add(registry.COLUMN_MAPPING.name)
            writers.add(registry.COLUMN_MAPPING.name)
    merged = {**metadata.configuration, **conf}
    _check_configuration(snap, metadata, merged, "set_properties")
    protocol = table_features.upgraded(snap.protocol, readers, writers, versions)
    if protocol != snap.protocol:
        txn.update_protocol(protocol)
    turning_on = row_tracking.enabled(merged) and not row_tracking.enabled(metadata.configuration)
    row_tracking.check_names(metadata.configuration, changes, turning_on=turning_on)
    if turning_on:
        merged = _enable_row_tracking(txn, metadata, merged)
    if props.TableProperties(merged).iceberg_compat_v2 and not iceberg_compat.enabled(metadata.configuration):
        schema, top = column_mapping.with_nested_ids(
            schema_from_json(metadata.schema_string), props.TableProperties(merged).max_column_id
        )
        merged[props.MAX_COLUMN_ID] = str(top)
        metadata = dataclasses.replace(metadata, schema_string=schema_to_json(schema))
    txn.update_metadata(dataclasses.replace(metadata, configuration=merged))
    return txn.commit()


def _iceberg_compat_on(snap: Snapshot, conf: dict[str, str], rewrite_files: bool) -> dict[str, str]:
    """Turning icebergCompatV2 on: column mapping `name` when the table has none (as Delta's REORG
    ... UPGRADE UNIFORM sets it); on a table with files only when the caller rewrites them next
    (their partition values and nested field ids: engine.maintenance.uniform)."""
    if not props.TableProperties(conf).iceberg_compat_v2 or iceberg_compat.enabled(
        snap.metadata.configuration
    ):
        return conf
    if snap.num_files and not rewrite_files:
        raise UnsupportedFeatureError(
            f"{iceberg_compat.KEY}=true on a table with data files needs them rewritten (partition values "
            "in the files, field ids for list and map levels: Delta's REORG ... UPGRADE UNIFORM). Nothing "
            "was written. Help: Table.set_properties does the rewrite",
            feature=iceberg_compat.FEATURE,
        )
    if (
        column_mapping.mode({**snap.metadata.configuration, **conf}) == "none"
        and props.COLUMN_MAPPING_MODE not in conf
    ):
        return {**conf, props.COLUMN_MAPPING_MODE: "name"}
    return conf


def _check_configuration(snap: Snapshot, metadata: Metadata, merged: dict[str, str], what: str) -> None:
    """The configuration a SET / UNSET would leave: well-formed values, and the clustering keys'
    stats still collected."""
    props.validate({k: v for k, v in merged.items() if k != props.COLUMN_MAPPING_MODE})
    schema = schema_from_json(metadata.schema_string)
    if keys := [k for k in snap.clustering_columns() if k in schema.names]:  # (their stats must stay)
        clustering.layout_columns(
            keys, schema, partition_columns=(), conf=merged,
            what=f"{what}: clustering columns", limit=len(keys),
        )  # fmt: skip


# Keys an UNSET would turn into a lie or a broken table: key -> what to do instead.
_KEEP_ON_UNSET = {
    props.COLUMN_MAPPING_MODE: "column mapping cannot be removed (the files use physical names)",
    props.ROW_ID_COLUMN_KEY: "the hidden row id column is named for good",
    props.COMMIT_VERSION_COLUMN_KEY: "the hidden row commit version column is named for good",
    **props.MANAGED,
    **{k: f"set it to '{'false' if on == 'true' else 'classic'}' to turn it off" for k, (_, _, on) in
       props.FEATURE_PROPERTIES.items()},
}  # fmt: skip


def unset_properties(begin: Begin, keys: Sequence[str], *, if_exists: bool = False) -> int | None:
    """Delta's ALTER TABLE UNSET TBLPROPERTIES [IF EXISTS]: remove `keys` from the configuration (say
    a typo recorded before keys were checked); the new version, None when `if_exists` and none was
    set. A key that is not set is refused unless `if_exists` (Delta: DELTA_UNSET_NON_EXISTENT_PROPERTY)."""
    if (
        isinstance(keys, str | bytes)
        or not isinstance(keys, Sequence)
        or not all(isinstance(k, str) for k in keys)
    ):
        raise InvalidArgumentError(f"unset_properties: keys must be a list of property names, got {keys!r}")
    wanted = list(keys)
    if not wanted:
        raise InvalidArgumentError("unset_properties: keys is empty: nothing to unset")
    txn = begin("UNSET TBLPROPERTIES", {"properties": json.dumps(wanted), "ifExists": str(if_exists).lower()})
    snap = txn.snapshot
    conf = dict(snap.metadata.configuration)
    lower = {k.lower(): k for k in conf}
    present = [conf_key for k in wanted if (conf_key := k if k in conf else lower.get(k.lower()))]
    missing = [k for k in wanted if k not in conf and k.lower() not in lower]
    if missing and not if_exists:
        raise PropertyNotSetError(missing[0])
    for key in present:
        if key in _KEEP_ON_UNSET or key.lower().startswith(constraints.CONSTRAINT_PREFIX):
            why = _KEEP_ON_UNSET.get(key, "a CHECK constraint is removed with drop_constraint")
            raise InvalidArgumentError(f"unset_properties: {key} cannot be unset: {why}. Nothing was written")
    if not present:
        return None
    merged = {k: v for k, v in conf.items() if k not in present}
    _check_configuration(snap, snap.metadata, merged, "unset_properties")
    txn.update_metadata(dataclasses.replace(snap.metadata, configuration=merged))
    return txn.commit()


def set_column_default(begin: Begin, column: str, expression: str | None) -> int | None:
    """ALTER TABLE ALTER COLUMN `column` SET DEFAULT `expression` (DROP DEFAULT when None): one
    metadata commit, the protocol gaining allowColumnDefaults (engine.features.column_defaults) with
    the first default; the expression is evaluated now (refused if the engine cannot, or its value
    does not fit the column). None when there is no default to drop."""
    txn = begin("CHANGE COLUMN", {"column": json.dumps(column), "default": json.dumps(expression)})
    snap = txn.snapshot
    tree = json.loads(snap.metadata.schema_string)
    fields = tree.get("fields", [])
    found = [f for f in fields if isinstance(column, str) and str(f.get("name")).lower() == column.lower()]
    if not found:
        raise InvalidArgumentError(
            f"set_column_default: no top-level column {column!r} in {snap.schema.names}"
        )
    field, name = found[0], str(found[0].get("name"))
    meta = dict(field.get("metadata") or {})
    if expression is None and column_defaults.KEY not in meta:
        return None
    if expression is not None:
        computed = {
            *generated.of_schema(snap.schema),
            *(i.column for i in identity.of_metadata(snap.metadata)),
        }
        if name in computed:
            raise InvalidArgumentError(f"set_column_default: {name!r} is a generated or identity column")
        column_defaults.value(expression, snap.schema.field(name), snap.schema)
        meta[column_defaults.KEY] = expression.strip()
        if (
            grown := table_features.with_writer_feature(snap.protocol, column_defaults.FEATURE)
        ) != snap.protocol:
            txn.update_protocol(grown)
    else:
        meta.pop(column_defaults.KEY)
    field["metadata"] = meta
    schema_string = json.dumps(tree, separators=(",", ":"))
    txn.update_metadata(dataclasses.replace(snap.metadata, schema_string=schema_string))
    return txn.commit()


def _enable_row_tracking(txn: Transaction, metadata: Metadata, conf: dict[str, str]) -> dict[str, str]:
    """Turning row tracking on: the hidden columns named, and every live file without row ids
    recommitted in this commit (Delta's backfill; the transaction numbers them). The whole table is
    read, so a concurrent append (rows without ids) makes the commit fail and retry from scratch."""
    schema = schema_from_json(metadata.schema_string)
    mapped = column_mapping.mode(conf) != "none"
    taken = [*schema.names, *(column_mapping.physical_names(schema).values() if mapped else ())]
    for f in txn.read_files():
        if f.base_row_id is None or f.default_row_commit_version is None:
            txn.add(dataclasses.replace(f, data_change=False))
    txn.rows_checked()  # (the same files recommitted: their rows kept the rules already)
    return row_tracking.with_column_names(conf, taken)


def cluster_by(begin: Begin, columns: Sequence[str] | None) -> int:
    """Delta's ALTER TABLE CLUSTER BY: the new clustering keys (None removes them, CLUSTER BY NONE);
    files are not rewritten (the next OPTIMIZE clusters by the new keys). The new version. An empty
    list is refused, as at create: it would remove the keys without saying so."""
    if columns is not None and (isinstance(columns, str) or not isinstance(columns, Sequence)):
        raise InvalidArgumentError(f"cluster_by: columns must be a list of column names, got {columns!r}")
    if columns is not None and not columns:
        raise InvalidArgumentError(
            "cluster_by: columns is empty; nothing was written. Help: cluster_by(None) removes the keys "
            "(CLUSTER BY NONE; the CLI: txnlog cluster-by TABLE --none)"
        )
    txn = begin("CLUSTER BY", {})
    snap = txn.snapshot
    if snap.partition_columns:
        raise InvalidArgumentError(
            f"cluster_by: the table is partitioned by {snap.partition_columns}; a table is never "
            'partitioned and clustered at once (PROTOCOL.md "Clustered Table")'
        )
    conf = snap.metadata.configuration
    schema = schema_from_json(snap.metadata.schema_string)
    old = snap.clustering_columns()
    keys = [] if not columns else clustering.layout_columns(
        columns, schema, partition_columns=(), conf=conf, what="cluster_by",
        limit=clustering.MAX_CLUSTERING_COLUMNS,
    )  # fmt: skip
    if not keys and clustering.DOMAIN not in snap.domain_metadata():
        raise InvalidArgumentError("cluster_by: the table is not clustered; there are no keys to remove")
    txn.parameters.update(oldClusteringColumns=",".join(old), newClusteringColumns=",".join(keys))
    protocol = snap.protocol
    for feature in (*registry.CLUSTERING.requires, registry.CLUSTERING.name):
        protocol = table_features.with_writer_feature(protocol, feature)
    txn.update_protocol(protocol)
    txn.stage_domain(clustering.domain_action(keys, schema, conf))
    return txn.commit()


def add_constraint(begin: Begin, name: str, expression: str, *, check: RowCheck | None = None) -> int:
    """Add CHECK constraint `name` once every live row satisfies it; the new version.

    :param check: counts the violating rows (default: the engine reads every live file)."""
    constraints.constraint_key(name)
    txn = begin("ADD CONSTRAINT", {"name": name, "expr": expression})
    snap = txn.snapshot
    metadata = constraints.with_constraint(snap.metadata, name, expression)
    rule = constraints.Rule(constraints.CHECK, name, metadata.configuration[constraints.constraint_key(name)])
    txn.read_files()  # the whole table was read: a concurrent append of unchecked rows conflicts
    count, row = (check or rows_breaking)(snap, rule)
    if count:
        error = constraints.violation_error(rule, row or {}, count)
        raise type(error)(
            f"cannot add {rule.label}: {count:,} existing {'row breaks' if count == 1 else 'rows break'} "
            f"it; one of them: {constraints.shown_row(row or {})}. Nothing was written. Help: fix or "
            "delete those rows first",
            constraint=rule.name, expression=rule.expression, row=row, count=count,
        )  # fmt: skip
    txn.existing_rows_checked()
    protocol = table_features.with_writer_feature(snap.protocol, registry.CHECK_CONSTRAINTS.name)
    if protocol != snap.protocol:
        txn.update_protocol(protocol)
    txn.update_metadata(metadata)
    return txn.commit()


def rows_breaking(snap: Snapshot, rule: constraints.Rule) -> tuple[int, dict[str, Any] | None]:
    """(live rows of `snap` that break `rule`, one of them: the columns it names), file by file."""
    try:
        [(_, compiled)] = constraints.compile_rules([rule], snap.schema)
    except UnsupportedExpressionError as exc:
        raise UnsupportedExpressionError(
            f"{exc} Help: SparkTable.add_constraint checks existing rows with Spark SQL"
        ) from exc
    # (at least one column: a file read with none has no rows, and `1 = 2` must still see them all)
    columns = [c for c in snap.schema.names if c in compiled.columns] or snap.schema.names[:1]
    count, example = 0, None
    for add in snap.files():
        rows = read_file(
            snap.storage, add, snap.schema, snap.partition_columns, columns=columns, row_filter=None,
            names=snap.column_names,
        )  # fmt: skip
        mask = violations(compiled, rows)
        found = int(pc.sum(mask).as_py() or 0)
        if found and example is None:
            example = rows.filter(mask).slice(0, 1).to_pylist()[0]
        count += found
    return count, example


def drop_constraint(begin: Begin, name: str, *, if_exists: bool = False) -> int | None:
    """Drop CHECK constraint `name` (any name the table holds, matched ignoring case); the new
    version (None: it was absent and `if_exists`)."""
    constraints.constraint_name(name)
    txn = begin("DROP CONSTRAINT", {"name": name})
    dropped = constraints.without_constraint(txn.snapshot.metadata, name, if_exists=if_exists)
    if dropped is None:
        return None
    metadata, expression = dropped
    txn.parameters["expr"] = expression
    txn.update_metadata(metadata)
    return txn.commit()
