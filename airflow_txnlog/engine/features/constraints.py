"""CHECK constraints and column invariants: the row rules every Delta writer must enforce.

Where they live (PROTOCOL.md "Column Invariants" and "CHECK Constraints"):
- a CHECK constraint is the table property `delta.constraints.<name>` = a Spark SQL boolean
  expression (feature `checkConstraints`, legacy writer version 3). Names are case-insensitive;
  Delta stores them lower-cased, and so do we. A name is any identifier Delta's ADD CONSTRAINT
  takes, a quoted one (`my-check`, `a.b`, `with space`) too: any non-empty text but the name of
  Delta's own char/varchar check (`__CHAR_VARCHAR_STRING_LENGTH_CHECK__`, which Delta refuses).
  DROP CONSTRAINT finds any name the table holds, whichever engine added it;
- a column invariant is the field metadata `delta.invariants` =
  `{"expression": {"expression": "<sql>"}}` (feature `invariants`, legacy writer version 2); the
  expression names the column by its full path.
A row satisfies a rule when the expression is TRUE: FALSE and NULL both break it (Delta on Spark's
`CheckDeltaInvariant`), so `CHECK (x > 0)` rejects `x = NULL`.

Enforcement by the engine (`compile_rules` then `check_rows`): every rule is compiled against the
table schema once, before a byte is written. An expression the Arrow evaluator
(engine.sql.expressions) cannot compute is refused with `UnsupportedExpressionError`,
never skipped; Spark paths evaluate the same text with Spark SQL instead. A violation raises
`ConstraintViolationError` naming the rule, its expression, how many rows break it and one of them
(its values as Spark SQL literals, engine.sql.literal_text: `d=DATE '2026-11-27'`, `x=NULL`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import (
    ConstraintNotFoundError,
    ConstraintViolationError,
    InvalidArgumentError,
    PredicateError,
    UnsupportedExpressionError,
)
from airflow_txnlog.engine.features import char_varchar, generated
from airflow_txnlog.engine.log.actions import Metadata, Protocol
from airflow_txnlog.engine.schema import schema_from_json
from airflow_txnlog.engine.sql.expressions import CompiledExpression, compile_expression, violations
from airflow_txnlog.engine.sql.literal_text import sql_literal

CONSTRAINT_PREFIX = props.CONSTRAINT_PREFIX
INVARIANTS_KEY = registry.INVARIANTS_KEY
CHECK = "CHECK constraint"
INVARIANT = "invariant"
GENERATED = "generated column"
EXPECTATION = "expectation"  # (a write's own rule, spark.features.expectations; never stored in a table)
_SHOWN_VALUE = 200  # characters of one value shown in a violation message


@dataclass(frozen=True)
class Rule:
    """One row rule of a table: a CHECK constraint (`name` = its name) or a column invariant
    (`name` = the column path)."""

    kind: str
    name: str
    expression: str
    generation: str = ""  # a generated column's expression (`expression` is the check built on it)

    @property
    def label(self) -> str:
        if self.kind == CHECK:
            return f"CHECK constraint {self.name} ({self.expression})"
        if self.kind == GENERATED:
            return f"generated column {self.name} = {self.generation}"
        if self.kind == EXPECTATION:
            return f"expectation {self.name} ({self.expression})"
        return f"invariant on column {self.name} ({self.expression})"


def constraints(metadata: Metadata) -> dict[str, str]:
    """The table's CHECK constraints: name (as stored) -> expression, in name order."""
    conf = metadata.configuration  # (the prefix in any case: Delta's property keys are case-insensitive)
    return {
        k[len(CONSTRAINT_PREFIX) :]: conf[k] for k in sorted(conf) if k.lower().startswith(CONSTRAINT_PREFIX)
    }


def rules(metadata: Metadata, protocol: Protocol) -> list[Rule]:
    """Every CHECK constraint, column invariant and generated column's rule of the table."""
    found = [Rule(CHECK, name, text) for name, text in constraints(metadata).items()]
    fields = json.loads(metadata.schema_string).get("fields", [])
    found.extend(Rule(INVARIANT, path, text) for path, text in _invariants(fields, ""))
    for column, text in generated.enforced(metadata, protocol).items():
        quoted = "`" + column.replace("`", "``") + "`"
        found.append(Rule(GENERATED, column, f"{quoted} <=> ({text})", text))
    return found


def _invariants(fields: Sequence[Any], prefix: str) -> Iterator[tuple[str, str]]:
    for f in fields:
        path = f"{prefix}{f.get('name')}"
        raw = (f.get("metadata") or {}).get(INVARIANTS_KEY)
        if raw is not None:
            yield path, _invariant_text(path, raw)
        t = f.get("type")
        if isinstance(t, dict) and t.get("type") == "struct":
            yield from _invariants(t.get("fields", []), f"{path}.")


def _invariant_text(path: str, raw: Any) -> str:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
        text = value["expression"]["expression"]
    except (ValueError, TypeError, KeyError) as exc:
        raise PredicateError(f"column {path!r} has an unreadable {INVARIANTS_KEY} value: {raw!r}") from exc
    if not isinstance(text, str) or not text.strip():
        raise PredicateError(f"column {path!r} has an empty {INVARIANTS_KEY} expression: {raw!r}")
    return text


def compile_rules(rules: Sequence[Rule], schema: pa.Schema) -> list[tuple[Rule, CompiledExpression]]:
    """Each rule compiled for the engine's Arrow evaluator: UnsupportedExpressionError if one cannot
    be, PredicateError if one is not a boolean expression over `schema`."""
    out = []
    for rule in rules:
        try:
            compiled = compile_expression(rule.expression, schema)
        except UnsupportedExpressionError as exc:
            raise UnsupportedExpressionError(
                f"{rule.label} cannot be checked by the engine: {exc}. Nothing was written"
            ) from exc
        if not pa.types.is_boolean(compiled.result_type):
            raise PredicateError(
                f"{rule.label} is not a boolean expression (it gives {compiled.result_type}); nothing was "
                "written"
            )
        out.append((rule, compiled))
    return out


def check_rows(compiled: Sequence[tuple[Rule, CompiledExpression]], data: pa.Table) -> None:
    """ConstraintViolationError for the first rule that a row of `data` breaks."""
    for rule, expr in compiled:
        mask = violations(expr, data)
        count = int(pc.sum(mask).as_py() or 0)
        if count:
            raise violation(rule, data, mask, count)


def violation(
    rule: Rule, data: pa.Table, mask: pa.Array | pa.ChunkedArray, count: int
) -> ConstraintViolationError:
    """The error for `count` rows of `data` (marked by `mask`) that break `rule`."""
    first = data.filter(mask).slice(0, 1).to_pylist()[0]
    return violation_error(rule, first, count)


def violation_error(rule: Rule, row: dict[str, Any], count: int | None) -> ConstraintViolationError:
    """The error for rows that break `rule`: `row` is one of them, `count` how many (None: unknown,
    the write stopped at the first)."""
    shown = shown_row(row)
    if count is None:
        found = f"a row: {shown}"
    else:
        found = f"{count:,} row{'s' if count != 1 else ''}; one of them: {shown}"
    return ConstraintViolationError(
        f"{rule.label} is violated by {found}. Nothing was committed",
        constraint=rule.name,
        expression=rule.expression,
        row=row,
        count=count,
    )


def shown_row(row: dict[str, Any]) -> str:
    """A row in a message: `id=4, day=DATE '2026-11-27', note=NULL` (values as Spark SQL literals)."""
    return ", ".join(f"{k}={sql_literal(v, _SHOWN_VALUE)}" for k, v in row.items())


# ------------------------------------------------------------------ ADD / DROP CONSTRAINT
def constraint_name(name: object) -> str:
    """`name` when it is a constraint name at all: a non-empty str (InvalidArgumentError)."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(
            f"a constraint name must be a non-empty string (e.g. 'positive_amount'), got {name!r}. Nothing "
            "was written"
        )
    return name


def constraint_key(name: object) -> str:
    """The property key of a new constraint `name`, as Delta stores it (lower-cased);
    InvalidArgumentError for a name Delta's ADD CONSTRAINT refuses (see the module docstring)."""
    text = constraint_name(name)
    if text == char_varchar.INVARIANT_NAME:  # (compared as given, as Delta does)
        raise InvalidArgumentError(
            f"constraint name {text!r} is reserved: Delta names its CHAR / VARCHAR length check so and "
            "refuses it for a CHECK constraint. Nothing was written. Help: pick another name"
        )
    return CONSTRAINT_PREFIX + text.lower()


def check_expression(expression: object, schema: pa.Schema, name: object = None) -> str:
    """`expression` stripped, after checking it parses as one Spark SQL expression over `schema`'s
    columns (PredicateError naming the problem)."""
    text, node = generated.row_expression(expression, "constraint expression")
    if name is not None:
        constraint_key(name)
    lower = {n.lower() for n in schema.names}
    for col in node.find_all(exp.Column):
        top = col.parts[0].name if col.parts else col.name
        if top.lower() not in lower:
            raise PredicateError(
                f"constraint expression {text!r} names column {top!r}, which the table lacks; "
                f"columns are {schema.names}"
            )
    return text


def _stored_key(metadata: Metadata, name: str) -> str | None:
    """The property key constraint `name` is stored under, matched case-insensitively (Delta on
    Spark stores names lower-cased; delta-rs keeps the case it was given)."""
    wanted = CONSTRAINT_PREFIX + constraint_name(name).lower()
    return next((k for k in metadata.configuration if k.lower() == wanted), None)


def with_constraint(metadata: Metadata, name: str, expression: str) -> Metadata:
    """`metadata` with CHECK constraint `name` = `expression` added (InvalidArgumentError if it exists)."""
    key = constraint_key(name)
    existing = _stored_key(metadata, name)
    if existing is not None:
        raise InvalidArgumentError(
            f"constraint {name!r} already exists ({metadata.configuration[existing]}). Nothing was written. "
            "Help: drop_constraint it first, or pick another name"
        )
    text = check_expression(expression, schema_from_json(metadata.schema_string))
    return dataclasses.replace(metadata, configuration={**metadata.configuration, key: text})


def without_constraint(metadata: Metadata, name: str, *, if_exists: bool) -> tuple[Metadata, str] | None:
    """(`metadata` without constraint `name`, its expression); None when it is absent and `if_exists`."""
    key = _stored_key(metadata, name)
    if key is None:
        if if_exists:
            return None
        raise ConstraintNotFoundError(name, sorted(constraints(metadata)))
    conf = {k: v for k, v in metadata.configuration.items() if k != key}
    return dataclasses.replace(metadata, configuration=conf), metadata.configuration[key]
