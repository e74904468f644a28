"""Delta schema JSON <-> pyarrow schema, and partition values as the log stores them.

Delta types map to Arrow as: string->string, long->int64, integer->int32, short->int16, byte->int8,
float->float32, double->float64, boolean->bool, binary->binary, date->date32,
timestamp->timestamp[us, UTC], timestamp_ntz->timestamp[us], decimal(p,s)->decimal128(p,s),
array/map/struct recursively. `variant` (reader / writer feature `variantType`) becomes what delta-rs
gives: struct<metadata: binary NOT NULL, value: binary NOT NULL>, the two binary encodings of Spark's
Variant format as the parquet group holds them (`VARIANT`); its fields carry the marker
`delta.variant`, so the type goes back to `variant` in a schemaString and a user's own struct of two
binaries never does. Partition values are strings in the log (null = JSON null or "");
`serialize_partition_value` / `parse_partition_value` convert them for every primitive type, in the
forms Spark's cast to string gives (the one every Delta reader parses):

- timestamps `yyyy-MM-dd HH:mm:ss.SSSSSS` in UTC, the year always four digits (`0999-...`: a
  three-digit year is refused by Spark and by this reader's strict form, and delta-rs misreads it);
  the reader still accepts shorter years, which older versions of this engine wrote;
- binary as the UTF-8 decoding of the bytes: Spark casts binary <-> string as UTF-8 and every
  reader (Spark, delta-rs, kernels) encodes the string back as UTF-8. Bytes that are not UTF-8 have
  no lossless string form and are refused (`InvalidArgumentError`). delta-rs's writer instead puts
  one `\\u00XX` escape per byte (PROTOCOL.md's example `"\\u0001\\u0002\\u0003"` read literally), so a
  value made only of such escapes is read as those bytes; for the same reason a value whose UTF-8
  text is only such escapes is refused on write (it would read back as other bytes);
- decimals in plain notation (`0.0000000000`, never `0E-10`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

import orjson
import pyarrow as pa

from airflow_txnlog.engine.errors import InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError

_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}
VARIANT_MARK = {b"delta.variant": b"true"}
VARIANT = pa.struct(
    [
        pa.field("metadata", pa.binary(), False, VARIANT_MARK),
        pa.field("value", pa.binary(), False, VARIANT_MARK),
    ]
)


_VARIANT_TYPE_RE = re.compile(r'"(?:type|elementType|keyType|valueType)"\s*:\s*"variant"')
_NTZ_TYPE_RE = re.compile(r'"(?:type|elementType|keyType|valueType)"\s*:\s*"timestamp_ntz"')


def uses_timestamp_ntz_json(schema_string: str) -> bool:
    """Whether a schemaString has a `timestamp_ntz` column (at any depth; a name is not a type)."""
    return bool(_NTZ_TYPE_RE.search(schema_string))


def uses_variant(schema_string: str) -> bool:
    """Whether a schemaString has a `variant` column (at any depth)."""
    return bool(_VARIANT_TYPE_RE.search(schema_string))


def is_variant(t: pa.DataType) -> bool:
    """Whether `t` is the Arrow form of Delta's `variant` (see `VARIANT`)."""
    if not (pa.types.is_struct(t) and t.num_fields == 2):
        return False
    return all((f.metadata or {}).get(b"delta.variant") == b"true" for f in t)


_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_SHORT_YEAR_RE = re.compile(r"^(\d{1,3})-")
_ESCAPED_BYTES_RE = re.compile(r"(?:\\u00[0-9A-Fa-f]{2})+")
_HIVE_ESCAPE = frozenset("\"#%'*/:=?\\\x7f{[]^")


# ---------------------------------------------------------------- Delta JSON -> Arrow
def _delta_type_to_arrow(t: Any) -> pa.DataType:
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t]
        if m := _DECIMAL_RE.match(t):
            return pa.decimal128(int(m.group(1)), int(m.group(2)))
        if t == "decimal":
            return pa.decimal128(10, 0)
        if t == "variant":
            return VARIANT
        raise UnsupportedFeatureError(f"column type {t!r} is not supported", feature=t)
    kind = t.get("type")
    if kind == "array":
        elem = pa.field("element", _delta_type_to_arrow(t["elementType"]), t.get("containsNull", True))
        return pa.list_(elem)
    if kind == "map":
        return pa.map_(
            pa.field("key", _delta_type_to_arrow(t["keyType"]), False),
            pa.field("value", _delta_type_to_arrow(t["valueType"]), t.get("valueContainsNull", True)),
        )
    if kind == "struct":
        return pa.struct([_delta_field_to_arrow(f) for f in t["fields"]])
    raise UnsupportedFeatureError(f"column type {kind!r} is not supported", feature=str(kind))


def _delta_field_to_arrow(f: dict[str, Any]) -> pa.Field:
    meta = f.get("metadata") or {}
    md = {k: orjson.dumps(v) for k, v in meta.items()} if meta else None
    return pa.field(f["name"], _delta_type_to_arrow(f["type"]), f.get("nullable", True), metadata=md)


def type_text(t: Any) -> str:
    """A Delta schema type (a name, or a nested JSON object) as Spark's simple string, e.g.
    `long`, `decimal(10,2)`, `array<string>`, `map<string,long>`, `struct<a:int>`."""
    if isinstance(t, str):
        return t
    kind = t.get("type") if isinstance(t, dict) else None
    if kind == "array":
        return f"array<{type_text(t['elementType'])}>"
    if kind == "map":
        return f"map<{type_text(t['keyType'])},{type_text(t['valueType'])}>"
    if kind == "struct":
        inner = ",".join(f"{f['name']}:{type_text(f['type'])}" for f in t.get("fields", []))
        return f"struct<{inner}>"
    return orjson.dumps(t, option=orjson.OPT_SORT_KEYS).decode()


def schema_from_json(schema_string: str) -> pa.Schema:
    """Arrow schema of a `metaData.schemaString`."""
    data = orjson.loads(schema_string)
    if data.get("type") != "struct":
        raise SchemaMismatchError("schemaString is not a struct type")
    return pa.schema([_delta_field_to_arrow(f) for f in data["fields"]])


# ---------------------------------------------------------------- Arrow -> Delta JSON
def _arrow_type_to_delta(t: pa.DataType, name: str) -> Any:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    for delta_name, arrow_type in _PRIMITIVES.items():
        if t == arrow_type:
            return delta_name
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {
            "type": "array",
            "elementType": _arrow_type_to_delta(t.value_type, name),
            "containsNull": t.value_field.nullable,
        }
    if pa.types.is_map(t):
        return {
            "type": "map",
            "keyType": _arrow_type_to_delta(t.key_type, name),
            "valueType": _arrow_type_to_delta(t.item_type, name),
            "valueContainsNull": t.item_field.nullable,
        }
    if is_variant(t):
        return "variant"
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_arrow_field_to_delta(t.field(i)) for i in range(t.num_fields)]}
    raise InvalidArgumentError(f"column {name!r}: Arrow type {t} has no Delta equivalent")


# Field metadata the protocol defines as a JSON string holding JSON (PROTOCOL.md "Column Invariants":
# Delta on Spark reads it with getString); given as a JSON object, it is written as that string.
_JSON_TEXT_KEYS = ("delta.invariants",)


def _arrow_field_to_delta(f: pa.Field) -> dict[str, Any]:
    meta = {k.decode(): orjson.loads(v) for k, v in (f.metadata or {}).items()}
    for key in _JSON_TEXT_KEYS:
        if isinstance(meta.get(key), dict):
            meta[key] = orjson.dumps(meta[key]).decode()
    return {
        "name": f.name,
        "type": _arrow_type_to_delta(f.type, f.name),
        "nullable": f.nullable,
        "metadata": meta,
    }


def schema_to_json(schema: pa.Schema) -> str:
    """`metaData.schemaString` for an Arrow schema (field metadata must be JSON values)."""
    try:
        fields = [_arrow_field_to_delta(f) for f in schema]
    except orjson.JSONDecodeError as exc:
        raise InvalidArgumentError(f"field metadata must be JSON values: {exc}") from exc
    return orjson.dumps({"type": "struct", "fields": fields}).decode()


def uses_timestamp_ntz(schema: pa.Schema) -> bool:
    return uses_timestamp_ntz_json(schema_to_json(schema))


def normalize_schema(schema: pa.Schema) -> pa.Schema:
    """The schema as the table stores it (what a round trip through schemaString gives)."""
    return schema_from_json(schema_to_json(schema))


# ---------------------------------------------------------------- partition values
def serialize_partition_value(value: Any, arrow_type: pa.DataType, column: str = "") -> str | None:
    """The log's string form of a partition value (None for null); `column` names it in errors."""
    if value is None:
        return None
    if pa.types.is_boolean(arrow_type):
        return "true" if value else "false"
    if pa.types.is_timestamp(arrow_type):
        ts: dt.datetime = value
        if ts.tzinfo is not None:
            ts = ts.astimezone(dt.UTC).replace(tzinfo=None)
        # isoformat pads the year to four digits; strftime("%Y") does not on glibc (year 999 -> "999")
        return ts.isoformat(sep=" ", timespec="microseconds")
    if pa.types.is_date(arrow_type):
        return value.isoformat()  # type: ignore[no-any-return]
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return _binary_to_text(bytes(value), column)
    if pa.types.is_decimal(arrow_type):
        return format(decimal.Decimal(value), "f")
    if pa.types.is_floating(arrow_type):
        return repr(float(value)).replace("inf", "Infinity").replace("nan", "NaN")
    text = str(value)
    if text == "" and pa.types.is_string(arrow_type):
        return None  # Delta cannot tell an empty-string partition from null
    return text


def _binary_to_text(value: bytes, column: str) -> str:
    where = f"column {column!r}: " if column else ""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"{where}binary partition value {value!r} is not valid UTF-8; Delta stores binary partition "
            "values as their UTF-8 text, so these bytes cannot be a partition value"
        ) from exc
    if _ESCAPED_BYTES_RE.fullmatch(text):
        raise InvalidArgumentError(
            f"{where}binary partition value {value!r} is UTF-8 text made only of \\u00XX escapes, which "
            "this engine reads as delta-rs's escaped form of other bytes; it cannot be a partition value"
        )
    return text


def _text_to_binary(text: str) -> bytes:
    if _ESCAPED_BYTES_RE.fullmatch(text):  # delta-rs's form: one `\u00XX` per byte
        return bytes(int(text[i + 4 : i + 6], 16) for i in range(0, len(text), 6))
    return text.encode("utf-8")


def _pad_year(text: str) -> str:
    """`999-12-31...` -> `0999-12-31...`: years of fewer than four digits, as older versions of this
    engine wrote them (strftime), read as the year they meant."""
    m = _SHORT_YEAR_RE.match(text)
    return text if m is None else m.group(1).zfill(4) + text[m.end(1) :]


def _parse_timestamp(text: str, tz_aware: bool) -> dt.datetime:
    s = _pad_year(text.strip().replace("T", " "))
    zone = None
    if s.endswith("Z"):
        s, zone = s[:-1], dt.UTC
    ts = dt.datetime.fromisoformat(s)
    if ts.tzinfo is None and zone is not None:
        ts = ts.replace(tzinfo=zone)
    if tz_aware:
        return ts.replace(tzinfo=dt.UTC) if ts.tzinfo is None else ts.astimezone(dt.UTC)
    return ts.replace(tzinfo=None) if ts.tzinfo is None else ts.astimezone(dt.UTC).replace(tzinfo=None)


def parse_partition_value(text: str | None, arrow_type: pa.DataType) -> Any:
    """Python value of a partition value string of the given type ('' and None mean null)."""
    if text is None or (text == "" and not pa.types.is_string(arrow_type)):
        return None
    if text == "":
        return None
    try:
        if pa.types.is_string(arrow_type):
            return text
        if pa.types.is_integer(arrow_type):
            return int(text)
        if pa.types.is_floating(arrow_type):
            return float(text)
        if pa.types.is_boolean(arrow_type):
            return text.strip().lower() == "true"
        if pa.types.is_date(arrow_type):
            return dt.date.fromisoformat(_pad_year(text.strip())[:10])
        if pa.types.is_timestamp(arrow_type):
            return _parse_timestamp(text, arrow_type.tz is not None)
        if pa.types.is_decimal(arrow_type):
            return decimal.Decimal(text)
        if pa.types.is_binary(arrow_type):
            return _text_to_binary(text)
    except (ValueError, OverflowError) as exc:  # OverflowError: a zone offset past year 1 or 9999
        raise SchemaMismatchError(f"partition value {text!r} is not a valid {arrow_type}") from exc
    raise UnsupportedFeatureError(
        f"partition column type {arrow_type} is not supported", feature=str(arrow_type)
    )


def hive_escape(value: str | None) -> str:
    """Escape a partition value for a `col=value` folder name as Spark/Hive do."""
    if value is None:
        return HIVE_NULL
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPE or ord(c) < 0x20 else c for c in value)
