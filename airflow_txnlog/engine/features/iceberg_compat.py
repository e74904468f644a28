"""IcebergCompatV2 (PROTOCOL.md "Iceberg Compatibility V2"): data files an Iceberg reader can use as
they are, the ground UniForm (`delta.universalFormat.enabledFormats=iceberg`) stands on.

`delta.enableIcebergCompatV2=true` turns on the writer feature `icebergCompatV2`, which requires
`columnMapping` (mode `name` or `id`; at create an unset mode becomes `name`, as Delta's CREATE sets
it). While it is on, every commit keeps these rules (`check_commit`, Delta's IcebergCompatV2 checks):

    types       every type at any depth in Delta's V2 allow-list (no variant, no void); partition
                columns of primitive types only (`check_schema`)
    partitions  a partitioned table keeps its partition columns (no partition evolution)
    adds        every add has `numRecords` in its stats and no deletion vector;
                `delta.enableDeletionVectors` is not true (the feature may stay listed)
    widening    only the type changes Iceberg allows (integers wider, float -> double, decimal
                precision up with the same scale)

and every data file the engine writes (engine.write.writer / streamed) carries the partition columns
(materialized, as Iceberg needs them in the file), parquet field ids at every level - list elements
and map keys / values too, from `delta.columnMapping.nested.ids` - int64 timestamps (pyarrow's) and
the add tag `ICEBERG_COMPAT_VERSION=2` (how Delta's REORG ... UPGRADE UNIFORM knows a file needs no
rewrite).

Nested ids: `column_mapping.with_nested_ids` (given whenever a column gets its id while this is on).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pyarrow as pa

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError, UnsupportedFeatureError
from airflow_txnlog.engine.features import column_mapping, type_widening
from airflow_txnlog.engine.log.actions import AddFile, Metadata, Protocol
from airflow_txnlog.engine.schema import is_variant, schema_from_json

FEATURE = "icebergCompatV2"
KEY = props.ICEBERG_COMPAT_V2
FORMATS_KEY = props.UNIFORM_FORMATS
NESTED_IDS = column_mapping.NESTED_IDS
TAG = "ICEBERG_COMPAT_VERSION"
METADATA_DIR = "metadata"  # UniForm's Iceberg metadata (engine.uniform; vacuum leaves it)
TAGS = {TAG: "2"}
OTHER_VERSIONS = ("delta.enableIcebergCompatV1", "delta.enableIcebergCompatV3")
_HELP = "Help: Table.create(..., properties={KEY: 'true', FORMATS_KEY: 'iceberg'}) or set_properties"


def enabled(conf: Mapping[str, str]) -> bool:
    """Whether `delta.enableIcebergCompatV2` is on."""
    return str(conf.get(KEY, "false")).strip().lower() == "true"


def formats(conf: Mapping[str, str]) -> list[str]:
    """The UniForm formats (`delta.universalFormat.enabledFormats`), lower case."""
    return [f.strip().lower() for f in str(conf.get(FORMATS_KEY, "")).split(",") if f.strip()]


def uniform_iceberg(conf: Mapping[str, str]) -> bool:
    """Whether the table asks for Iceberg metadata (UniForm)."""
    return "iceberg" in formats(conf) and enabled(conf)


def check_configuration(conf: Mapping[str, str]) -> None:
    """Refuse a configuration the engine cannot honor (names the key; nothing is written)."""
    fmts = formats(conf)
    if unknown := [f for f in fmts if f != "iceberg"]:
        raise UnsupportedFeatureError(
            f"{FORMATS_KEY}={conf[FORMATS_KEY]!r}: this engine writes Iceberg metadata only, not "
            f"{unknown[0]!r}. Nothing was written",
            feature="universalFormat",
        )
    if len(set(fmts)) != len(fmts):
        raise InvalidArgumentError(f"{FORMATS_KEY}={conf[FORMATS_KEY]!r} names a format twice")
    if fmts and not enabled(conf):
        raise InvalidArgumentError(
            f"{FORMATS_KEY}=iceberg needs {KEY}=true (UniForm stands on IcebergCompatV2, as in Delta). "
            f"Nothing was written. {_HELP}"
        )
    if not enabled(conf):
        return
    if column_mapping.mode(conf) == "none":
        raise InvalidArgumentError(
            f"{KEY}=true needs column mapping (delta.columnMapping.mode = 'name' or 'id'); it is 'none'. "
            "Nothing was written. Help: leave the mode unset at create (it becomes 'name'), or set "
            "delta.columnMapping.mode='name' with it"
        )
    if str(conf.get("delta.enableDeletionVectors", "false")).strip().lower() == "true":
        raise InvalidArgumentError(
            f"{KEY}=true and delta.enableDeletionVectors=true cannot be on together: Iceberg readers "
            "would see deleted rows. Nothing was written. Help: set delta.enableDeletionVectors='false'"
        )


# ------------------------------------------------------------------------------- the allowed types
def _allowed(t: pa.DataType) -> bool:
    if is_variant(t):
        return False
    if pa.types.is_struct(t):
        return all(_allowed(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _allowed(t.value_type)
    if pa.types.is_map(t):
        return _allowed(t.key_type) and _allowed(t.item_type)
    return _primitive(t)


def _primitive(t: pa.DataType) -> bool:
    return bool(
        (pa.types.is_integer(t) and pa.types.is_signed_integer(t))
        or (pa.types.is_floating(t) and not pa.types.is_float16(t))
        or pa.types.is_decimal(t)
        or pa.types.is_string(t) or pa.types.is_large_string(t)
        or pa.types.is_binary(t) or pa.types.is_large_binary(t)
        or pa.types.is_boolean(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)
    )  # fmt: skip


def check_schema(schema: pa.Schema, partition_columns: Iterable[str]) -> None:
    """Every column's type in IcebergCompatV2's allow-list; partition columns primitive."""
    for f in schema:
        if not _allowed(f.type):
            raise UnsupportedFeatureError(
                f"column {f.name!r} ({f.type}) has a type Iceberg cannot read ({KEY}=true allows "
                "numbers, decimals, strings, binary, booleans, dates, timestamps, arrays, maps and "
                "structs; no variant or void). Nothing was written",
                feature=FEATURE,
            )
    for name in partition_columns:
        if not _primitive(schema.field(name).type):
            raise UnsupportedFeatureError(
                f"partition column {name!r} ({schema.field(name).type}) cannot be an Iceberg partition "
                "source. Nothing was written",
                feature=FEATURE,
            )
    for _, change in type_widening.type_changes(schema):
        if not _iceberg_widening(str(change.get("fromType")), str(change.get("toType"))):
            raise UnsupportedFeatureError(
                f"type change {change.get('fromType')} -> {change.get('toType')} is one Iceberg does not "
                f"allow ({KEY}=true). Nothing was written",
                feature=FEATURE,
            )


_INTEGER_ORDER = ("byte", "short", "integer", "long")


def _iceberg_widening(old: str, new: str) -> bool:
    """Delta's `isTypeChangeSupportedByIceberg`."""
    if old == new:
        return True
    if old in _INTEGER_ORDER and new in _INTEGER_ORDER:
        return _INTEGER_ORDER.index(old) <= _INTEGER_ORDER.index(new)
    if (old, new) == ("float", "double"):
        return True
    if old.startswith("decimal") and new.startswith("decimal"):
        o, n = _precision_scale(old), _precision_scale(new)
        return o is not None and n is not None and o[1] == n[1] and o[0] <= n[0]
    return False


def _precision_scale(t: str) -> tuple[int, int] | None:
    inside = t[t.find("(") + 1 : t.rfind(")")]
    parts = [p.strip() for p in inside.split(",")]
    return (int(parts[0]), int(parts[1])) if len(parts) == 2 and all(p.isdigit() for p in parts) else None


# ------------------------------------------------------------------------------- every commit
def check_commit(
    before: Metadata | None, metadata: Metadata, protocol: Protocol, adds: Iterable[AddFile]
) -> None:
    """The rules of the module docstring for a commit leaving `metadata` (`before`: what it read;
    None for a new table)."""
    conf = metadata.configuration
    check_configuration(conf)
    if not enabled(conf):
        return
    if FEATURE not in (protocol.writer_features or ()):
        raise UnsupportedFeatureError(f"{KEY}=true needs the {FEATURE} writer feature", feature=FEATURE)
    if (
        before is not None
        and before.partition_columns
        and before.partition_columns != metadata.partition_columns
    ):
        raise InvalidArgumentError(
            f"the table's partition columns cannot change while {KEY}=true (Iceberg partition "
            "evolution is not written). Nothing was written"
        )
    if before is None or not enabled(before.configuration) or before.schema_string != metadata.schema_string:
        check_schema(schema_from_json(metadata.schema_string), metadata.partition_columns)
    for add in adds:
        if add.deletion_vector is not None or add.num_records is None:
            what = "a deletion vector" if add.deletion_vector is not None else "no numRecords in its stats"
            raise InvalidArgumentError(
                f"add {add.path!r} has {what}: while {KEY}=true every file must be whole and counted "
                "(Iceberg reads it as it is). Nothing was written"
            )
