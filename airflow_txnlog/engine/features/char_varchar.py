"""CHAR(n) and VARCHAR(n) columns: string columns whose length every write keeps, as Spark does.

Spark stores a CHAR / VARCHAR column as a STRING whose field metadata `__CHAR_VARCHAR_TYPE_STRING`
holds the declared type: `varchar(3)`, `char(5)`, or a nested one on the top-level field
(`array<varchar(3)>`, `map<string,char(2)>`, `struct<a:varchar(3),b:int>`; a struct's fields carry
their own too). `spec_of(field)` parses it into a `Spec` (Length, Array, Map, Struct; None: nothing
to keep), the top-level field's string first, else its struct fields' own.

The write-side rule is Spark's (CharVarcharCodegenUtils, for an INSERT into such a table), in
characters (Unicode code points, as Spark's `numChars`, Python's `len` and Arrow's `utf8_length`):
    VARCHAR(n): a value of at most n characters is kept; a longer one whose excess characters (those
        after the n-th) are all spaces is trimmed to n; any other longer one fails the write (Spark's
        EXCEED_LIMIT_LENGTH);
    CHAR(n): the same, then a shorter value is right-padded with spaces to n;
    NULL stays NULL, at every depth.
`enforce(data, schema)` applies it to conformed rows before anything is written: it returns the
rows with values trimmed and padded, or raises ConstraintViolationError naming the column, its type,
how many values are too long and one of them (constraint `__CHAR_VARCHAR_STRING_LENGTH_CHECK__`, the
name Delta gives this check, which ADD CONSTRAINT therefore refuses). Values under a NULL struct or
list are kept as they are by their parents, so they may be padded unseen. Reading is unchanged (Spark
pads CHAR values when it reads them; the engine returns what is stored). A type string the engine
cannot read refuses the write (UnsupportedFeatureError): the rule is never skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.errors import ConstraintViolationError, UnsupportedFeatureError
from airflow_txnlog.engine.sql.literal_text import sql_literal

TYPE_KEY = "__CHAR_VARCHAR_TYPE_STRING"
INVARIANT_NAME = "__CHAR_VARCHAR_STRING_LENGTH_CHECK__"  # (Delta's CharVarcharConstraint)
_KEY = TYPE_KEY.encode()
_LENGTH = re.compile(r"(char|varchar)\s*\(\s*(\d+)\s*\)", re.IGNORECASE)
# any other type: a name, maybe with a precision and scale, maybe collated (Spark 4's strings)
_OTHER = re.compile(r"\s*[A-Za-z_]\w*(\s*\(\s*\d+\s*(,\s*\d+\s*)?\))?(\s+collate\s+[\w.]+)?", re.IGNORECASE)


@dataclass(frozen=True)
class Length:
    """CHAR(n) (`pad`) or VARCHAR(n)."""

    n: int
    pad: bool

    @property
    def text(self) -> str:
        return f"{'CHAR' if self.pad else 'VARCHAR'}({self.n})"


@dataclass(frozen=True)
class Array:
    element: Spec


@dataclass(frozen=True)
class Map:
    key: Spec
    value: Spec


@dataclass(frozen=True)
class Struct:
    fields: tuple[Spec, ...]  # (by position, as the Arrow struct's fields)


Kept = Length | Array | Map | Struct
Spec = Kept | None


class _Unreadable(Exception):
    pass


class _Parser:
    """A Spark catalog type string (`DataType.catalogString`) as a Spec."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def parse(self) -> Spec:
        spec = self.type()
        if self.text[self.pos :].strip():
            raise _Unreadable
        return spec

    def _eat(self, token: str) -> bool:
        rest = self.text[self.pos :]
        stripped = rest.lstrip()
        if stripped[: len(token)].lower() != token:
            return False
        self.pos += len(rest) - len(stripped) + len(token)
        return True

    def _expect(self, token: str) -> None:
        if not self._eat(token):
            raise _Unreadable

    def type(self) -> Spec:
        if self._eat("array<"):
            element = self.type()
            self._expect(">")
            return None if element is None else Array(element)
        if self._eat("map<"):
            key = self.type()
            self._expect(",")
            value = self.type()
            self._expect(">")
            return None if key is None and value is None else Map(key, value)
        if self._eat("struct<"):
            return self._struct()
        return self._primitive()

    def _struct(self) -> Spec:
        fields: list[Spec] = []
        while not self._eat(">"):
            if fields:
                self._expect(",")
            self._name()
            self._expect(":")
            fields.append(self.type())
        return Struct(tuple(fields)) if any(f is not None for f in fields) else None

    def _name(self) -> None:
        rest = self.text[self.pos :].lstrip()
        self.pos = len(self.text) - len(rest)
        if rest.startswith("`"):
            quoted = re.match(r"`(?:[^`]|``)*`", rest)
            if quoted is None:
                raise _Unreadable
            self.pos += quoted.end()
        else:
            self.pos += len(rest.split(":", 1)[0])

    def _primitive(self) -> Spec:
        rest = self.text[self.pos :]
        length = _LENGTH.match(rest.lstrip())
        if length is not None:
            self.pos += len(rest) - len(rest.lstrip()) + length.end()
            return Length(int(length.group(2)), length.group(1).lower() == "char")
        other = _OTHER.match(rest)
        if other is None:
            raise _Unreadable
        self.pos += other.end()
        return None


def spec_of(field: pa.Field) -> Spec:
    """What `field` (of a table schema: JSON metadata values) must keep; None: nothing."""
    raw = (field.metadata or {}).get(_KEY)
    if raw is not None:
        try:
            text = orjson.loads(raw)
            if not isinstance(text, str):
                raise _Unreadable
            return _Parser(text).parse()
        except (_Unreadable, orjson.JSONDecodeError) as exc:
            raise UnsupportedFeatureError(
                f"column {field.name!r} has {TYPE_KEY} {raw.decode(errors='replace')!r}, which the engine "
                "cannot read, so it cannot keep its CHAR / VARCHAR length. Nothing was written. Help: "
                "write the table with Spark",
                feature=TYPE_KEY,
            ) from exc
    if pa.types.is_struct(field.type):
        children = tuple(spec_of(field.type.field(i)) for i in range(field.type.num_fields))
        return Struct(children) if any(c is not None for c in children) else None
    return None


def specs(schema: pa.Schema) -> dict[str, Kept]:
    """The top-level columns of `schema` with a CHAR / VARCHAR length to keep (UnsupportedFeatureError
    for a type string the engine cannot read or that does not fit the column's type)."""
    out = {f.name: spec for f in schema if (spec := spec_of(f)) is not None}
    for column, spec in out.items():
        if not _fits(schema.field(column).type, spec):
            raise UnsupportedFeatureError(
                f"column {column!r} has type {schema.field(column).type}, which its {TYPE_KEY} does not "
                "fit: the engine cannot keep its CHAR / VARCHAR length. Nothing was written. Help: write "
                "the table with Spark",
                feature=TYPE_KEY,
            )
    return out


def _fits(t: pa.DataType, spec: Spec) -> bool:
    if spec is None:
        return True
    if isinstance(spec, Length):
        return bool(pa.types.is_string(t) or pa.types.is_large_string(t))
    if isinstance(spec, Struct):
        return (
            bool(pa.types.is_struct(t))
            and len(spec.fields) == t.num_fields
            and all(_fits(t.field(i).type, s) for i, s in enumerate(spec.fields))
        )
    if isinstance(spec, Map):
        return bool(pa.types.is_map(t)) and _fits(t.key_type, spec.key) and _fits(t.item_type, spec.value)
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t)) and _fits(t.value_type, spec.element)


def enforce(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """`data` (conformed to `schema`) with CHAR / VARCHAR values trimmed and padded; a value too long
    is a ConstraintViolationError (see the module docstring)."""
    for column, spec in specs(schema).items():
        i = data.schema.get_field_index(column)
        chunks = [_apply(c, spec, column) for c in data.column(i).chunks]
        data = data.set_column(i, data.schema.field(i), pa.chunked_array(chunks, data.column(i).type))
    return data


def _apply(arr: pa.Array, spec: Spec, path: str) -> pa.Array:
    """`arr` (of a type `spec` fits: `specs` checked it) with its strings checked, at every depth."""
    if spec is None or len(arr) == 0:
        return arr
    if isinstance(spec, Length):
        return _strings(arr, spec, path)
    if isinstance(spec, Struct):
        t = arr.type
        children = [_apply(arr.field(i), s, f"{path}.{t.field(i).name}") for i, s in enumerate(spec.fields)]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    return _nested(arr, spec, path)


def _nested(arr: pa.Array, spec: Array | Map, path: str) -> pa.Array:
    """A list or map array with its children checked, rebuilt from offsets re-based to 0 and the
    children sliced to match (a slice's offsets point into its parent's whole children)."""
    offsets = arr.offsets
    start, stop = offsets[0].as_py(), offsets[-1].as_py()
    rebased = pc.subtract(offsets, pa.scalar(start, offsets.type))
    mask = arr.is_null() if arr.null_count else None
    if isinstance(spec, Map):
        keys = _apply(arr.keys.slice(start, stop - start), spec.key, f"{path}.key")
        items = _apply(arr.items.slice(start, stop - start), spec.value, f"{path}.value")
        return pa.MapArray.from_arrays(rebased, keys, items, type=arr.type, mask=mask)
    values = _apply(arr.values.slice(start, stop - start), spec.element, f"{path}.element")
    cls = pa.LargeListArray if pa.types.is_large_list(arr.type) else pa.ListArray
    return cls.from_arrays(rebased, values, type=arr.type, mask=mask)


def _strings(arr: pa.Array, spec: Length, path: str) -> pa.Array:
    """Spark's write-side check of one string array (see the module docstring)."""
    over = pc.fill_null(pc.greater(pc.utf8_length(arr), spec.n), False)
    if pc.any(over).as_py():
        excess = pc.utf8_slice_codeunits(arr, spec.n)
        bad = pc.and_kleene(over, pc.invert(pc.match_substring_regex(excess, "^ *$")))
        count = int(pc.sum(bad).as_py() or 0)
        if count:
            raise _too_long(path, spec, arr.filter(bad)[0].as_py(), count)
        arr = pc.if_else(over, pc.utf8_slice_codeunits(arr, 0, spec.n), arr)
    if spec.pad:
        arr = pc.utf8_rpad(arr, width=spec.n, padding=" ")
    return arr


def _too_long(path: str, spec: Length, value: str, count: int) -> ConstraintViolationError:
    shown = sql_literal(value)
    return ConstraintViolationError(
        f"column {path} is {spec.text}: {count:,} value{'s are' if count != 1 else ' is'} longer than "
        f"{spec.n} character{'s' if spec.n != 1 else ''} (beyond trailing spaces, which are trimmed); "
        f"one of them: {path}={shown} (Spark: EXCEED_LIMIT_LENGTH). Nothing was committed. Help: "
        f"shorten the values, or widen the column's type",
        constraint=INVARIANT_NAME,
        expression=f"length({path}) <= {spec.n}",
        row={path: value},
        count=count,
    )


# ------------------------------------------------------------------ the same rule in Spark SQL
def spark_rewrites(schema: pa.Schema) -> dict[str, str]:
    """Column -> a Spark SQL expression giving its values as `enforce` keeps them, for Spark paths
    that check row rules before the engine's writer sees the rows (a CHECK on a CHAR column sees
    the padded value, as in Delta on Spark). A value too long stays as it is: `enforce` refuses it
    when the rows are written."""
    kept = specs(schema)
    return {c: _sql(_quoted(c), schema.field(c).type, spec, 0) for c, spec in kept.items()}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql(x: str, t: pa.DataType, spec: Spec, depth: int) -> str:
    """`x` (SQL of a value of type `t`) kept as `spec` says, at every depth (`_fits` held)."""
    if spec is None:
        return x
    if isinstance(spec, Length):
        n = spec.n
        spaces = f"char_length({x}) > {n} AND rtrim(substring({x}, {n + 1})) = ''"
        trimmed = f"(CASE WHEN {spaces} THEN substring({x}, 1, {n}) ELSE {x} END)"
        if not spec.pad:
            return trimmed
        return f"(CASE WHEN char_length({trimmed}) < {n} THEN rpad({trimmed}, {n}, ' ') ELSE {trimmed} END)"
    v, k = f"v{depth}", f"k{depth}"  # (lambda variables per depth: nested lambdas never shadow each other)
    if isinstance(spec, Struct):
        fields = []
        for i, s in enumerate(spec.fields):
            f = t.field(i)
            inner = _sql(f"{x}.{_quoted(f.name)}", f.type, s, depth + 1)
            fields.append(f"{sql_literal(f.name, len(f.name) * 4 + 2)}, {inner}")
        return f"(CASE WHEN {x} IS NULL THEN NULL ELSE named_struct({', '.join(fields)}) END)"
    if isinstance(spec, Array):
        return f"transform({x}, {v} -> {_sql(v, t.value_type, spec.element, depth + 1)})"
    out = x
    if spec.key is not None:
        out = f"transform_keys({out}, ({k}, {v}) -> {_sql(k, t.key_type, spec.key, depth + 1)})"
    if spec.value is not None:
        out = f"transform_values({out}, ({k}, {v}) -> {_sql(v, t.item_type, spec.value, depth + 1)})"
    return out
