"""Trial rows: how `expressions.compile_expression` learns, when an expression is declared, whether
every row of every write would fail.

A compiled expression is evaluated over no rows (which gives its Arrow type) and then over a few rows
of ordinary values built from the schema (numbers 1, 0, -7; text `1`, `2024-01-01`, `a b`; dates and
timestamps of 2024, 1970 and 1999; ...) and a row of NULLs: all together, and each alone when one of
them fails by ANSI. An Arrow error there (a kernel Arrow lacks for these types, a conversion it
refuses whatever the value) or any other error than an ANSI failure is a construct this evaluator
cannot compute: `Refused`, so the user learns it at create / add_constraint time rather than on every
write. An ANSI failure (`Failed`) on a trial value is what Spark does with such a value too: accepted.
The trial batches are built once per schema.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
from typing import Any

import pyarrow as pa

from airflow_txnlog.engine.sql.types import Failed, Refused, Term, kind

_ROWS, _UTC = 3, dt.UTC
_SAMPLES: dict[str, list[Any]] = {
    "bool": [True, False, True],
    "int": [1, 0, -7],
    "float": [1.5, 0.0, -2.25],
    "string": ["1", "2024-01-01", "a b"],
    "binary": [b"1", b"\x00\xff", b""],
    "date": [dt.date(2024, 1, 1), dt.date(1970, 1, 1), dt.date(1999, 12, 31)],
    "ntz": [dt.datetime(2024, 1, 1, 12, 34, 56, 789000), dt.datetime(1970, 1, 1), dt.datetime(1999, 12, 31)],
}
_SAMPLES["ts"] = [t.replace(tzinfo=_UTC) for t in _SAMPLES["ntz"]]
_ERRORS = (pa.ArrowException, ArithmeticError, ValueError, TypeError, LookupError, AttributeError)


def trial_type(term: Term, schema: pa.Schema) -> pa.DataType:
    """The Arrow type of `term` over no rows of `schema` (the columns it reads; its own type if a
    constant fails); Refused if it fails other than by ANSI on the trial rows, together or (after an
    ANSI failure on one of them) each alone."""
    empty, *trials = _batches(schema)
    over_none = _try(term, empty)
    result_type = term.type if over_none is None else over_none.type
    if trials and _try(term, trials[0]) is None:  # an ANSI failure: the other rows must not fail otherwise
        for batch in trials[1:]:
            _try(term, batch)
    return result_type


def _try(term: Term, batch: pa.RecordBatch) -> Any:
    """`term` over `batch`; None after an ANSI failure; Refused after any other error."""
    try:
        return term.fn(batch)
    except Failed:  # a value Spark fails on too (`1 / 0`, CAST('a' AS INT))
        return None
    except _ERRORS as e:
        raise Refused(f"{term.sql} ({type(e).__name__}: {e})") from None


@functools.lru_cache(maxsize=64)
def _batches(schema: pa.Schema) -> list[pa.RecordBatch]:
    """No rows, the trial rows together, then each alone (the last one NULLs): built once per schema
    (no trial rows for a type Arrow cannot even give a NULL of)."""
    empty = pa.RecordBatch.from_pylist([], schema=schema)
    try:
        rows = [
            pa.RecordBatch.from_arrays([_column(f.type, row) for f in schema], schema=schema)
            for row in [*range(_ROWS), None]
        ]
    except (pa.ArrowException, ValueError, TypeError):
        return [empty]
    return [empty, pa.concat_batches(rows), *rows]


def _column(t: pa.DataType, row: int | None) -> pa.Array:
    """A one-value column of type `t`: trial value `row`, or NULL (also for a type with no samples)."""
    try:
        return pa.array([None if row is None else _value(t, row)], type=t)
    except (pa.ArrowException, ValueError, TypeError, KeyError):
        return pa.nulls(1, t)


def _value(t: pa.DataType, row: int) -> Any:
    k = kind(t)
    if k == "decimal":
        one = decimal.Decimal(1) if t.precision > t.scale else decimal.Decimal(1).scaleb(-t.scale)
        return [one, decimal.Decimal(0), -one][row]
    if k in _SAMPLES:
        return _SAMPLES[k][row]
    if pa.types.is_struct(t):
        return {t.field(i).name: _value(t.field(i).type, row) for i in range(t.num_fields)}
    if pa.types.is_map(t):
        return [(_value(t.key_type, row), _value(t.item_type, row))]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_value(t.value_type, row)]
    raise KeyError(str(t))
