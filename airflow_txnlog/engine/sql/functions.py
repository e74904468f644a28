"""Scalar functions of the Spark SQL expression compiler (`expressions`): `FUNCTIONS`, builders keyed
by the sqlglot node class of the Spark dialect (and `NAMED` for the functions sqlglot leaves
anonymous, by upper-cased name), each taking (node, compiler) and giving a `Term`. The text functions
live here; numbers in `number_functions`, dates in `datetime_functions`, HASH in `hash_function`.

The room's earlier single module is now split by concept: types and widening (`types`), casts
(`casts`, with `time_text` and `float_text` for Spark's text forms), arithmetic (`arithmetic`). Their
names stay importable from here (`Term`, `wider_type`, `common_type`, `cast`, `kind`, ...).

Text functions: LENGTH (characters; bytes of a BINARY), LOWER / UPPER (Java's full case mapping),
TRIM / LTRIM / RTRIM (spaces, or the given characters), SUBSTRING / LEFT / RIGHT (code points,
Spark's positions), CONCAT / `||` (NULL if a part is), STARTSWITH / ENDSWITH / CONTAINS.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_txnlog.engine.sql import datetime_functions as dtf
from airflow_txnlog.engine.sql import number_functions as nf
from airflow_txnlog.engine.sql.casts import cast, coerce, fit_decimal, round_decimal
from airflow_txnlog.engine.sql.datetime_functions import date_pattern
from airflow_txnlog.engine.sql.hash_function import spark_hash
from airflow_txnlog.engine.sql.types import (
    NTZ,
    NUMERIC,
    STRING,
    TEMPORAL,
    TS,
    Builder,
    Failed,
    Invalid,
    Refused,
    Term,
    Value,
    adjusted_decimal,
    any_true,
    arrow_type,
    checked,
    common_type,
    constant,
    decimal_shape,
    derive,
    kind,
    literal_arg,
    null_of,
    on_rows,
    python_map,
    spark_name,
    sql_of,
    wider_type,
    zero_of,
)

__all__ = [  # what other modules import from here (the room's names before its split)
    "FUNCTIONS",
    "NAMED",
    "NTZ",
    "NUMERIC",
    "STRING",
    "TEMPORAL",
    "TS",
    "Builder",
    "Failed",
    "Invalid",
    "Refused",
    "Term",
    "Value",
    "adjusted_decimal",
    "any_true",
    "arrow_type",
    "cast",
    "checked",
    "coerce",
    "common_type",
    "concat",
    "constant",
    "date_pattern",
    "decimal_shape",
    "derive",
    "fit_decimal",
    "kind",
    "literal_arg",
    "null_of",
    "on_rows",
    "python_map",
    "round_decimal",
    "spark_name",
    "sql_of",
    "wider_type",
    "zero_of",
]


def _one(node: exp.Expr, c: Any, *, kernel: Callable[..., Value], kinds: str, **more: Any) -> Term:
    """f(x) of kinds `kinds`, cast `to`, giving `out`; `pattern`: f(x, constant string)."""
    term, out = coerce(c.compile(node.this), kinds, sql_of(node), more.get("to")), more.get("out")
    if more.get("pattern"):
        pattern = literal_arg(c.compile(node.expression), "string", "a pattern")
        if pattern is None:
            return constant(None, out, node)
        kernel = partial(kernel, pattern=pattern)
    return derive(node, out or term.type, lambda v: pc.cast(kernel(v), out or term.type), term)


def _case_map(v: Value, *, upper: bool) -> Value:
    """UPPER / LOWER: Arrow's for ASCII; else Python's full mapping, Java's (UPPER('ß') is 'SS')."""
    if any_true(pc.invert(pc.string_is_ascii(v))):
        return python_map(v, str.upper if upper else str.lower, v.type)
    return (pc.ascii_upper if upper else pc.ascii_lower)(v)


def _trim(node: exp.Trim, c: Any) -> Term:  # spaces only, unless characters are given
    term, given = coerce(c.compile(node.this), "string", "TRIM()"), node.args.get("expression")
    chars = " " if given is None else literal_arg(c.compile(given), "string", "TRIM characters")
    trim = {"LEADING": pc.utf8_ltrim, "TRAILING": pc.utf8_rtrim}.get(str(node.args.get("position")))
    if chars is None:
        return constant(None, term.type, node)
    return derive(node, term.type, lambda v: (trim or pc.utf8_trim)(v, characters=chars), term)


def concat(node: exp.Expr, parts: list[Term]) -> Term:
    """CONCAT / `||`: NULL if a part is NULL; integers, booleans, dates and decimals are cast."""
    texts = [coerce(p, "string int bool date decimal", "CONCAT()", STRING) for p in parts]
    t = pa.large_string() if pa.large_string() in [p.type for p in parts] else STRING
    texts = [cast(p, t) for p in texts] or [constant("", t, node)]
    join = partial(pc.binary_join_element_wise, null_handling="emit_null")
    return derive(node, t, lambda *vs: join(*vs, pa.scalar("", t)), *texts)


def _substring(node: exp.Expr, c: Any, *, side: str = "") -> Term:
    """Spark's SUBSTRING(s, pos[, len]) on code points: 1-based, pos 0 is 1, a negative pos counts
    from the end (len from there), a len <= 0 gives ''. LEFT(s, n) is (s, 1, n), RIGHT (s, -n, n)."""
    term = coerce(c.compile(node.this), "string", sql_of(node))
    args = [node.expression] * 2 if side else [node.args["start"], node.args.get("length")]
    pos, size = (2**31 - 1 if a is None else literal_arg(c.compile(a), "int", "a position") for a in args)
    pos = (1 if side == "left" or pos is None else -pos) if side else pos
    if pos is None or size is None:
        return constant(None, term.type, node)
    start = pos - 1 if pos > 0 else min(pos, 0)
    start, stop = (0, 0) if size <= 0 else (start, start + size if pos >= 0 or pos + size < 0 else None)
    return derive(node, term.type, lambda v: pc.utf8_slice_codeunits(v, start, stop), term)


def _length(v: Value) -> Value:  # characters of a string, bytes of a binary
    return (pc.binary_length if kind(v.type) == "binary" else pc.utf8_length)(v)


_TEXT_TEST = partial(_one, kinds="string", out=pa.bool_(), pattern=True)
FUNCTIONS: dict[type[exp.Expr], Builder] = {
    exp.Abs: nf.absolute,
    exp.Round: nf.round_half_up,
    exp.Trim: _trim,
}
FUNCTIONS |= {exp.Floor: partial(nf.floor_ceil, kernel=pc.floor), exp.TimeToStr: dtf.date_format}
FUNCTIONS |= {exp.Ceil: partial(nf.floor_ceil, kernel=pc.ceil), exp.Substring: _substring}
FUNCTIONS |= {
    exp.Greatest: partial(nf.extremum, largest=True),
    exp.Least: partial(nf.extremum, largest=False),
}
FUNCTIONS |= {exp.IsNan: nf.is_nan, exp.Nanvl: nf.nan_or}
FUNCTIONS |= {exp.Left: partial(_substring, side="left"), exp.Right: partial(_substring, side="right")}
FUNCTIONS |= {exp.Length: partial(_one, kernel=_length, kinds="string binary", out=pa.int32())}
FUNCTIONS |= {exp.Lower: partial(_one, kernel=partial(_case_map, upper=False), kinds="string")}
FUNCTIONS |= {exp.Upper: partial(_one, kernel=partial(_case_map, upper=True), kinds="string")}
FUNCTIONS |= {exp.Concat: lambda node, c: concat(node, [c.compile(e) for e in node.expressions])}
FUNCTIONS |= {exp.StartsWith: partial(_TEXT_TEST, kernel=pc.starts_with)}
FUNCTIONS |= {exp.EndsWith: partial(_TEXT_TEST, kernel=pc.ends_with), exp.DateTrunc: dtf.truncate}
FUNCTIONS |= {exp.Contains: partial(_TEXT_TEST, kernel=pc.match_substring), exp.TimestampTrunc: dtf.truncate}
FUNCTIONS |= {
    exp.TsOrDsToDate: partial(dtf.to_date, t=pa.date32()),
    exp.TimeStrToTime: partial(dtf.to_date, t=TS),
}
FUNCTIONS |= {exp.TsOrDsAdd: dtf.date_add, exp.DateDiff: dtf.date_diff}
FUNCTIONS |= dtf.DATE_PARTS
NAMED: dict[str, Builder] = {"HASH": spark_hash}
