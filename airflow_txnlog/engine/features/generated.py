"""Generated columns (PROTOCOL.md "Generated Columns"): a column whose value is a Spark SQL
expression of the row's other columns, e.g. a `date` partition column `CAST(ts AS DATE)`.

Stored as Delta stores it: the field metadata `delta.generationExpression` = the expression text
(feature `generatedColumns`, legacy writer version 4). Only top-level columns are generated (as in
Delta); an expression may name only the table's other, non-generated columns.

On every write, as Delta's writers do:
- a generated column the data lacks is filled with its expression, cast to the column's type
  (`fill`, with the engine's Arrow evaluator; Spark paths fill it with Spark SQL);
- a supplied value must equal it: the row rule `(col <=> (expression))` (`constraints.rules`), so a
  NULL expression result needs a NULL value, and anything else is a ConstraintViolationError.
At create (`with_generated`) the expression must parse, name existing non-generated columns, be one
the engine computes exactly as Spark does (else UnsupportedExpressionError, unless the table is made
for Spark's writes: `SparkTable.create`) and give exactly the column's type (Delta's rule: no
silent cast).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import TokenType, exp

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine.errors import (
    InvalidArgumentError,
    PredicateError,
    SchemaMismatchError,
    UnsupportedExpressionError,
    UnsupportedFeatureError,
)
from airflow_txnlog.engine.features.table_features import implied_features
from airflow_txnlog.engine.log.actions import Metadata, Protocol
from airflow_txnlog.engine.sql import parse as sql_parse
from airflow_txnlog.engine.sql.expressions import compile_expression

GENERATION_KEY = registry.GENERATION_KEY
FEATURE = registry.GENERATED_COLUMNS.name
_KEY = GENERATION_KEY.encode()


def of_schema(schema: pa.Schema) -> dict[str, str]:
    """The generated columns of a table schema (field metadata as the engine keeps it: JSON values):
    column -> expression, in schema order."""
    out: dict[str, str] = {}
    for f in schema:
        raw = (f.metadata or {}).get(_KEY)
        if raw is not None:
            value = orjson.loads(raw)
            if not isinstance(value, str) or not value.strip():
                raise PredicateError(f"column {f.name!r} has an unreadable {GENERATION_KEY}: {raw!r}")
            out[f.name] = value
    return out


def enforced(metadata: Metadata, protocol: Protocol) -> dict[str, str]:
    """The generated columns writes must fill and check: column -> expression. None unless the
    protocol supports `generatedColumns` (writer 4+, or the feature listed): Delta treats the
    metadata of a table whose protocol lacks it as a plain column's (e.g. a table Databricks 8.0
    wrote), and so do we."""
    if FEATURE not in implied_features(protocol)[1]:
        return {}
    return of_schema_json(metadata.schema_string)


def of_schema_json(schema_string: str) -> dict[str, str]:
    """`of_schema` for a Delta `schemaString`."""
    fields = json.loads(schema_string).get("fields", [])
    return {
        f["name"]: f["metadata"][GENERATION_KEY]
        for f in fields
        if isinstance(f.get("metadata"), dict) and GENERATION_KEY in f["metadata"]
    }


def row_expression(expression: object, what: str) -> tuple[str, exp.Expr]:
    """(`expression` stripped, its sqlglot tree) after checking it is one Spark SQL row expression:
    PredicateError naming `what` (e.g. "constraint expression") for anything else."""
    if not isinstance(expression, str) or not expression.strip():
        raise PredicateError(f"{what}: the expression must be a non-empty SQL string, got {expression!r}")
    text = expression.strip()
    try:
        if any(t.token_type == TokenType.SEMICOLON for t in sql_parse.tokens(text)):
            raise PredicateError(f"{what}: {text!r} must be one expression, without ';'")
        node = sql_parse.parse(text)
    except sql_parse.SYNTAX_ERRORS as exc:
        raise PredicateError(f"{what}: {text!r} does not parse as Spark SQL: {exc}") from exc
    if isinstance(node, exp.Query | exp.Command) or node.find(exp.AggFunc, exp.Window, exp.Subquery):
        raise PredicateError(
            f"{what}: {text!r} must be a row expression: no query, aggregate, window or subquery"
        )
    return text, node


def check_expression(column: str, expression: object, schema: pa.Schema, generated: Mapping[str, str]) -> str:
    """`expression` stripped, after checking it as the generation expression of `column`
    (PredicateError naming the problem)."""
    text, node = row_expression(expression, f"generated column {column!r}")
    by_lower = {n.lower(): n for n in schema.names}
    for col in node.find_all(exp.Column):
        top = col.parts[0].name if col.parts else col.name
        named = by_lower.get(top.lower())
        if named is None:
            raise PredicateError(
                f"generated column {column!r}: {text!r} names column {top!r}, which the table lacks; "
                f"columns are {schema.names}"
            )
        if named in generated or named == column:
            raise PredicateError(
                f"generated column {column!r}: {text!r} names generated column {named!r}; a generation "
                "expression may name only columns that are not generated (Delta's rule)"
            )
    return text


def with_generated(schema: pa.Schema, generated: Mapping[str, str], *, spark_only: bool = False) -> pa.Schema:
    """`schema` with `generated` (column -> expression) stored in its fields' metadata, each checked:
    one the engine cannot compute is refused (UnsupportedExpressionError) unless `spark_only`."""
    if not isinstance(generated, Mapping):
        raise InvalidArgumentError(
            f"generated must be a mapping of column -> SQL expression, got {generated!r}"
        )
    by_lower = {n.lower(): n for n in schema.names}
    wanted: dict[str, str] = {}
    for column in generated:
        named = by_lower.get(str(column).lower()) if isinstance(column, str) else None
        if named is None:
            raise InvalidArgumentError(
                f"generated: column {column!r} is not in the schema {schema.names} (only top-level columns "
                "can be generated)"
            )
        wanted[named] = generated[column]
    all_generated = {**of_schema(schema), **wanted}
    for column, text in all_generated.items():  # (ones given as field metadata are checked too)
        check_expression(column, text, schema, all_generated)
    fields = []
    for f in schema:
        if f.name in wanted:
            text = check_expression(f.name, wanted[f.name], schema, all_generated)
            _check_type(f, text, schema, spark_only=spark_only)
            fields.append(f.with_metadata({**(f.metadata or {}), _KEY: orjson.dumps(text)}))
        else:
            fields.append(f)
    return pa.schema(fields, metadata=schema.metadata)


def _check_type(field: pa.Field, text: str, schema: pa.Schema, *, spark_only: bool) -> None:
    try:
        result = compile_expression(text, schema).result_type
    except UnsupportedExpressionError as exc:
        if spark_only:
            return  # Spark evaluates it on Spark paths; the engine's writes refuse the table
        raise UnsupportedExpressionError(
            f"generated column {field.name!r}: {str(exc).rstrip('.')}. Nothing was created. Help: create "
            "the table with SparkTable.create, whose writes compute it with Spark (the engine's own writes "
            "then refuse the table), or use an expression the engine computes (docs/constraints.md)"
        ) from None
    if not pa.types.is_null(result) and not _same_type(result, field.type):
        raise SchemaMismatchError(
            f"generated column {field.name!r}: {text!r} gives {result}, the column is {field.type}; the "
            "types must match (Delta's rule). Help: CAST the expression to the column's type"
        )


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    def plain(t: pa.DataType) -> pa.DataType:
        return pa.string() if pa.types.is_large_string(t) else t

    return bool(plain(a) == plain(b))


def missing(generated: Mapping[str, str], columns: list[str]) -> list[str]:
    """The `generated` columns that `columns` (the data's, matched case-insensitively) lack."""
    have = {c.lower() for c in columns}
    return [c for c in generated if c.lower() not in have]


def relaxed(schema: pa.Schema, columns: list[str]) -> pa.Schema:
    """`schema` with `columns` (generated ones the data lacks) nullable, so conforming the data
    leaves them NULL for `fill` instead of refusing a missing NOT NULL column."""
    return pa.schema(
        [f.with_nullable(True) if f.name in columns else f for f in schema], metadata=schema.metadata
    )


def fill(data: pa.Table, schema: pa.Schema, generated: Mapping[str, str], columns: list[str]) -> pa.Table:
    """`data` (conformed to `relaxed(schema, columns)`) with each of `columns` computed from its
    `generated` expression and cast to the column's type (`schema`'s nullability then checked)."""
    for column in columns:
        compiled = compile_expression(generated[column], schema)
        field = schema.field(column)
        try:
            values = pc.cast(compiled.evaluate(data), field.type)
        except pa.ArrowInvalid as exc:
            raise SchemaMismatchError(
                f"generated column {column!r} ({generated[column]}) gives values that are not "
                f"{field.type}: {exc}"
            ) from exc
        if not field.nullable and values.null_count:
            raise SchemaMismatchError(
                f"generated column {column!r} is NOT NULL, but {generated[column]} is NULL for "
                f"{values.null_count} row(s); nothing was written"
            )
        i = data.schema.get_field_index(column)
        data = data.set_column(i, field, values)
    return data


def expression_columns(expression: str) -> set[str]:
    """The top-level columns a Spark SQL expression names, lower-cased."""
    node = sql_parse.parse(expression)
    return {(c.parts[0].name if c.parts else c.name).lower() for c in node.find_all(exp.Column)}


def rewrite_columns(expression: str, values: Mapping[str, str]) -> str:
    """`expression` with each column `c` (lower-cased key) replaced by `(values[c])`, a nested field
    `c.f` by `(values[c]).f`; both Spark SQL, through sqlglot's tree, so a name inside a string
    literal is never touched."""
    node = sql_parse.parse(expression)

    def swap(n: exp.Expr) -> exp.Expr:
        if not isinstance(n, exp.Column) or not n.parts or n.parts[0].name.lower() not in values:
            return n
        out: exp.Expr = exp.Paren(this=sql_parse.parse(values[n.parts[0].name.lower()]))
        for part in n.parts[1:]:
            out = exp.Dot(this=out, expression=part.copy())
        return out

    return node.transform(swap).sql(dialect="spark")


def refuse_nested(schema_string: str) -> None:
    """UnsupportedFeatureError for a generation expression on a nested field (Delta has none)."""

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict) and node.get("type") == "struct":
            for f in node.get("fields", []):
                name = f"{path}.{f.get('name')}"
                if GENERATION_KEY in (f.get("metadata") or {}):
                    raise UnsupportedFeatureError(
                        f"nested field {name[1:]!r} has a generation expression; only top-level columns are "
                        "generated columns", feature=FEATURE,
                    )  # fmt: skip
                walk(f.get("type"), name)

    for f in json.loads(schema_string).get("fields", []):
        walk(f.get("type"), f".{f.get('name')}")
