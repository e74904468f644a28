"""allowColumnDefaults (PROTOCOL.md "Default Columns"): a column's `CURRENT_DEFAULT` field metadata
holds a SQL expression whose value every writer puts in a row that gives the column no value.

Rules, as Delta applies them:
- the key means something only when the protocol lists `allowColumnDefaults` (writer 7);
- a write that lacks a defaulted column fills it with the default's value; an explicit value, NULL
  included, is kept (so only a missing column is filled, never a null one);
- a default is declared on an existing column (`Table.set_column_default`, ALTER COLUMN SET / DROP
  DEFAULT) or at create; never on a column the same command adds (schema evolution: refused);
- variant columns default to NULL only; only top-level columns have defaults (Spark's rule).
This engine evaluates a default with its own SQL room (engine.sql), once per write: the expression
must name no column and be one the room evaluates (a literal, arithmetic, CAST, ...; CURRENT_DATE
and other non-deterministic functions are refused when declared), and its value must fit the
column's type without parsing text (a string default for a numeric column is refused, as Spark's
analysis refuses it). So every write path (the engine's writer, Spark's, the data source's) fills
the same value, and delta-rs reads it as any other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine.errors import InvalidArgumentError, SchemaMismatchError, TxnLogError
from airflow_txnlog.engine.features.table_features import implied_features
from airflow_txnlog.engine.log.actions import Metadata, Protocol
from airflow_txnlog.engine.schema import is_variant, schema_from_json
from airflow_txnlog.engine.sql import parse as sql_parse
from airflow_txnlog.engine.sql.expressions import compile_expression

KEY = "CURRENT_DEFAULT"
FEATURE = registry.ALLOW_COLUMN_DEFAULTS.name


def of_schema(schema: pa.Schema) -> dict[str, str]:
    """{column: default expression} of the top-level fields that declare one (field metadata as the
    engine keeps it: JSON values; a default that is not a JSON string is refused)."""
    out = {}
    for f in schema:
        raw = (f.metadata or {}).get(KEY.encode())
        if raw is not None:
            text = json.loads(raw)
            if not isinstance(text, str):
                raise InvalidArgumentError(f"column {f.name!r} has a {KEY} that is not SQL text: {raw!r}")
            out[f.name] = text
    return out


def enforced(metadata: Metadata, protocol: Protocol) -> dict[str, str]:
    """The defaults writers must fill: the schema's, when the protocol has the feature."""
    if FEATURE not in implied_features(protocol)[1]:
        return {}
    return of_schema(schema_from_json(metadata.schema_string))


def refuse_nested(schema_string: str) -> None:
    """InvalidArgumentError when a nested field declares a default."""
    for path in _nested_defaults(json.loads(schema_string).get("fields", []), ""):
        raise InvalidArgumentError(
            f"column default on nested field {path!r}: only top-level columns have defaults"
        )


def _nested_defaults(fields: list[dict[str, object]], prefix: str) -> list[str]:
    """Paths of the fields below the top level (inside structs) that declare a default."""
    found = []
    for f in fields:
        t, name = f.get("type"), f"{prefix}{f.get('name')}"
        inner = t.get("fields") if isinstance(t, dict) and t.get("type") == "struct" else None
        if isinstance(inner, list):
            found += [f"{name}.{c.get('name')}" for c in inner if KEY in (c.get("metadata") or {})]
            found += _nested_defaults(inner, f"{name}.")
    return found


def value(text: object, field: pa.Field, schema: pa.Schema) -> pa.Scalar:
    """The value of default `text` for column `field`, or InvalidArgumentError saying why it cannot
    be one (see the module doc)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"the default of {field.name!r} must be a SQL expression, got {text!r}")
    what = f"default {text!r} of column {field.name!r}"
    try:
        compiled = compile_expression(text, schema)  # (bad SQL: PredicateError, before the parse below)
        if sql_parse.parse(text).find(exp.Column) is not None:
            raise InvalidArgumentError("it names a column; a default is a constant")
        got = compiled.evaluate(pa.Table.from_arrays([pa.nulls(1, pa.int8())], names=["__txnlog_row"]))
    except TxnLogError as exc:
        raise InvalidArgumentError(f"{what}: {exc}") from exc
    return _fitted(got, field, what)[0]


def _fitted(got: pa.Array, field: pa.Field, what: str) -> pa.Array:
    t, v = field.type, got.type
    if pa.types.is_null(v):
        if not field.nullable:
            raise InvalidArgumentError(f"{what}: NULL for a NOT NULL column")
        return pa.nulls(len(got), t)
    if is_variant(t):
        raise InvalidArgumentError(f"{what}: a variant column defaults to NULL only (PROTOCOL.md)")
    text_like = pa.types.is_string(v) or pa.types.is_large_string(v) or pa.types.is_binary(v)
    if text_like != (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)):
        raise InvalidArgumentError(f"{what}: a {v} value does not fit a {t} column")
    try:
        return pc.cast(got, t)  # (safe: an overflow or a lost digit is refused)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidArgumentError(f"{what}: a {v} value does not fit a {t} column ({exc})") from exc


def fill(data: pa.Table, schema: pa.Schema, defaults: Mapping[str, str], columns: list[str]) -> pa.Table:
    """`data` (conformed, `columns` null) with each of `columns` set to its default's value."""
    for column in columns:
        field = schema.field(column)
        try:
            one = value(defaults[column], field, schema)
        except InvalidArgumentError as exc:  # (a foreign writer's default this engine cannot evaluate)
            raise SchemaMismatchError(f"{exc}; give the column a value. Nothing was written") from exc
        values = pa.repeat(one, data.num_rows)
        data = data.set_column(data.schema.get_field_index(column), field, values)
    return data


def missing(defaults: Mapping[str, str], columns: list[str]) -> list[str]:
    """The defaulted columns the data lacks."""
    have = set(columns)
    return [c for c in defaults if c not in have]
