"""Spark SQL scalar expressions (CHECK constraints, invariants, generated columns) over Arrow data.

A writer without Spark must compute these Delta rules as Spark would. `compile_expression` parses
the text with sqlglot's Spark dialect (never runs it), checks it is ONE scalar expression (no
statement, subquery, aggregate, window or non-deterministic call) and compiles it bottom-up into
closures over a RecordBatch (`functions.Term`), typing each node as Spark's analyzer does.

Grammar: columns (`x`, `` `a b` ``, struct fields `s.a.b`; case-insensitive), literals typed as Spark
(`1.5` DECIMAL, `1e3` DOUBLE, `L S Y D BD` suffixes, DATE / TIMESTAMP / TIMESTAMP_NTZ '...'), AND OR
NOT, `= == != <> < <= > >= <=>`, IS [NOT] NULL / TRUE / FALSE / DISTINCT FROM, [NOT] IN (list),
[NOT] BETWEEN, [NOT] LIKE / ILIKE / RLIKE, `+ - * / % div` (`arithmetic`), `||`, CASE, IF, COALESCE
/ NVL / IFNULL, NULLIF, NVL2, CAST (`casts`) and `functions.FUNCTIONS` / `functions.NAMED`.

Invariants. Three-valued logic (Kleene AND / OR; NULL in, NULL out but for `<=>`, IS, COALESCE,
GREATEST / LEAST); a CHECK holds only when TRUE (`violations`). ANSI (Spark 4): integer overflow, a
zero divisor of a non-NULL value and a value a CAST cannot convert raise InvalidArgumentError; a CASE
/ IF / COALESCE / NULLIF / AND / OR branch runs only on the rows reaching it, as in Spark. INT op INT
is INT, `/` DOUBLE; decimals get Spark's result type, computed exactly, rounded HALF_UP. NaN = NaN,
above every number. Timestamps are UTC: the session time zone is taken as UTC (TIMESTAMP =
`timestamp[us, UTC]`, TIMESTAMP_NTZ = `timestamp[us]`). What is not computed exactly is refused at
compile time (UnsupportedExpressionError): string vs number comparisons, unknown functions, casts
Spark computes otherwise... and, found by evaluating the compiled expression over a few rows of
ordinary values (`trial_rows`), anything that would fail on every row for another reason than ANSI:
never accepted when declared and then refused on every write. sqlglot quirks: `'O''Brien'` (one
quote for Spark, two literals for sqlglot) is rewritten first; Java datetime patterns are kept as
written; DATE_SUB(d, n), which sqlglot reads as DATE_ADD(d, n * -1), is told apart by its `-1`.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial, reduce
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import TokenType, exp

from airflow_txnlog.engine import errors
from airflow_txnlog.engine.sql import functions as sf
from airflow_txnlog.engine.sql import parse as sql_parse
from airflow_txnlog.engine.sql.arithmetic import ARITHMETIC, arithmetic
from airflow_txnlog.engine.sql.functions import Failed, Invalid, Refused, Term, Value, kind
from airflow_txnlog.engine.sql.number_functions import negated
from airflow_txnlog.engine.sql.spark_rules import mixed_predicate, past_bigint
from airflow_txnlog.engine.sql.trial_rows import trial_type
from airflow_txnlog.engine.sql.types import on_rows

Words = tuple[frozenset[str], frozenset[str]]  # the string literals and the names of a text, upper-cased


@dataclass(frozen=True)
class CompiledExpression:
    """A Spark SQL scalar expression compiled for Arrow data (see the module docstring)."""

    text: str  # the original SQL text
    node: exp.Expression  # the parsed tree (Spark dialect)
    columns: frozenset[str]  # top-level table columns referenced, spelled as in the schema
    result_type: pa.DataType  # Arrow type of the result
    _term: Term = field(repr=False, compare=False)
    # (what the typer made of each node of `node`, by id, and the text's words: pruning reads its
    # parts from these instead of compiling them again)
    _parts: Mapping[int, Term] = field(default_factory=dict, repr=False, compare=False)
    _words: Words = field(default=(frozenset(), frozenset()), repr=False, compare=False)

    def evaluate(self, data: pa.Table | pa.RecordBatch) -> pa.Array | pa.ChunkedArray:
        """One value per row (a ChunkedArray for a Table); InvalidArgumentError where ANSI fails."""
        if isinstance(data, pa.Table):
            return pa.chunked_array([self._batch(b) for b in data.to_batches()], type=self.result_type)
        return self._batch(data)

    def _batch(self, batch: pa.RecordBatch) -> pa.Array:
        try:
            values = self._term.fn(batch)
        except (Failed, pa.ArrowInvalid) as e:  # ANSI failures; Arrow's for values it refuses
            raise errors.InvalidArgumentError(f"evaluating {self.text!r}: {e}") from None
        return pa.repeat(values, batch.num_rows) if isinstance(values, pa.Scalar) else values


def compile_expression(text: str, schema: pa.Schema) -> CompiledExpression:
    """Compile `text` over the table's `schema`: PredicateError if not one valid expression over it,
    UnsupportedExpressionError if valid Spark SQL this evaluator does not compute."""
    node, words = _parse(text)
    compiler = _Compiler(schema, words)
    try:
        term = compiler.compile(node)
        read = pa.schema([f for f in schema if f.name in compiler.columns])  # (the columns it reads)
        result_type = trial_type(term, read)  # what would fail on every row is refused here
    except Refused as e:
        message = f"the engine cannot evaluate {e} in {text!r}; write through Spark (SparkTable), which"
        raise errors.UnsupportedExpressionError(f"{message} evaluates it with Spark SQL") from None
    except Invalid as e:
        raise errors.PredicateError(f"{e}, in {text!r}") from None
    columns = frozenset(compiler.columns)
    return CompiledExpression(text, node, columns, result_type, term, compiler.parts, words)


def operand_terms(compiled: CompiledExpression, schema: pa.Schema, nodes: list[exp.Expression]) -> list[Term]:
    """`nodes` (the operands of a comparison or IN list of `compiled`) compiled by the same typer and
    brought to the type Spark compares them in (`comparable`): what pruning (engine.sql.predicates)
    reads a comparison's type and constant from. Refused / Invalid propagate: no pruning then."""
    return comparable([part_term(compiled, schema, n) for n in nodes], compiled.text)


def part_term(compiled: CompiledExpression, schema: pa.Schema, node: exp.Expression) -> Term:
    """A part of `compiled` compiled by the same typer (its `literal` is set where the analyzer
    folds it to a constant, as Spark's does: `i > 1e20` on a BIGINT is FALSE whatever `i` holds):
    the term made when `compiled` was, or (a node not of its tree) compiled now."""
    found = compiled._parts.get(id(node))
    return found if found is not None else _Compiler(schema, compiled._words).compile(node)


def violations(compiled: CompiledExpression, data: pa.Table | pa.RecordBatch) -> pa.Array | pa.ChunkedArray:
    """Boolean mask of rows that break a CHECK expression: NOT coalesce(result, FALSE) -- a NULL
    result is a violation, as in Delta on Spark."""
    if kind(t := compiled.result_type) not in ("bool", "null"):
        raise errors.PredicateError(f"{compiled.text!r} is {sf.spark_name(t)}, not BOOLEAN")
    return pc.invert(pc.fill_null(pc.cast(compiled.evaluate(data), pa.bool_()), False))


_STATEMENTS = (exp.Query, exp.Subquery, exp.Block, exp.DDL, exp.DML, exp.Command, exp.Alias)
_RANDOM = tuple(getattr(exp, n) for n in ["Rand", "Randn", "Uuid", "CurrentUser", "SessionUser"])
_RANDOM += tuple(getattr(exp, f"Current{n}") for n in ["Date", "Timestamp", "Time", "Datetime"])


def _parse(text: str) -> tuple[exp.Expression, Words]:
    """The tree (engine.sql.parse), and the string literals and the names of the text (upper-cased)."""
    if not text.strip():
        raise errors.PredicateError(
            "an empty SQL expression: a constraint or generation expression needs one"
        )
    try:
        node, tokens = sql_parse.parse_with_tokens(text)
    except sql_parse.SYNTAX_ERRORS as e:
        raise errors.PredicateError(f"{text!r} does not parse as a Spark SQL expression: {e}") from None
    if (mixed := mixed_predicate(node, tokens)) is not None:
        raise errors.UnsupportedExpressionError(
            f"the engine cannot evaluate {sf.sql_of(mixed)} in {text!r}: a comparison with an IN / BETWEEN "
            "/ LIKE / IS operand, which Spark groups otherwise than sqlglot reads it. Help: write "
            "parentheses, e.g. (a < b) IN (c) or a < (b IN (c))"
        )
    for n in node.walk():
        if isinstance(n, _STATEMENTS) or not isinstance(n, exp.Expression):
            raise errors.PredicateError(
                f"{text!r} is not one scalar expression (a statement, alias or subquery)"
            )
        if isinstance(n, (exp.Window, exp.AggFunc, *_RANDOM)):
            what = "not deterministic" if isinstance(n, _RANDOM) else "an aggregate or window function"
            raise errors.PredicateError(f"{text!r} uses {sf.sql_of(n)}: {what}")
    strings = [t for t in tokens if t.token_type == TokenType.STRING]
    names = [t for t in tokens if t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)]
    return node, (frozenset(t.text.upper() for t in strings), frozenset(t.text.upper() for t in names))


class _Compiler:
    """Compiles sqlglot nodes to `Term`s, recording the columns read."""

    def __init__(self, schema: pa.Schema, words: Words) -> None:
        self.schema, (self.strings, self.names) = schema, words
        self.columns: set[str] = set()
        self.parts: dict[int, Term] = {}  # node id -> its term (the nodes live as long as the tree)

    def compile(self, node: exp.Expr) -> Term:
        term = self._compile(node)
        self.parts[id(node)] = term
        return term

    def is_column(self, name: str) -> bool:
        return any(f.name.lower() == name.lower() for f in self.schema)

    def written(self, word: str, *, as_name: bool = False) -> bool:  # in the text, as a string or name
        return word.upper() in self.names or (not as_name and word.upper() in self.strings)

    def _compile(self, node: exp.Expr) -> Term:
        if isinstance(node, exp.Column | exp.Dot):
            return self._column(node)
        build = _HANDLERS.get(type(node)) or sf.FUNCTIONS.get(type(node))
        if build is not None:
            return build(node, self)
        if isinstance(node, exp.Anonymous):
            if str(node.name).upper() in sf.NAMED:
                return sf.NAMED[str(node.name).upper()](node, self)
            raise Refused(f"the function {node.name}()")
        raise Refused(f"the function {node.sql_name()}" if isinstance(node, exp.Func) else sf.sql_of(node))

    def _column(self, node: exp.Expr) -> Term:
        """A column or a struct field (`s.a.b`), matched case-insensitively as Spark does."""
        parts, fields, path, t = _name_parts(node), list(self.schema), [], pa.null()
        for depth, name in enumerate(parts):
            found = [f for f in fields if f.name.lower() == name.lower()]
            if len(found) != 1:
                where = f"field of {'.'.join(parts[:depth])}" if depth else "column"
                problem = "is ambiguous:" if found else "is unknown; the columns are"
                raise Invalid(f"the {where} {name!r} {problem} {', '.join(f.name for f in found or fields)}")
            path.append(fields.index(found[0]))
            t = found[0].type
            fields = [t.field(i) for i in range(t.num_fields)] if pa.types.is_struct(t) else []
            if depth + 1 < len(parts) and not fields:
                raise Invalid(f"{name} is {t}, not a struct with a field {parts[depth + 1]!r}")
        if pa.types.is_timestamp(t) and kind(t) == "other":
            raise Refused(f"the column {'.'.join(parts)} of type {t} (microseconds, UTC or no zone only)")
        top = self.schema.field(path[0])
        self.columns.add(top.name)

        def read(batch: Any) -> Value:
            try:
                values = batch.column(top.name)
                values = values if values.type == top.type else pc.cast(values, top.type)
            except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise errors.SchemaMismatchError(
                    f"the data has no column {top.name!r} ({top.type}): {e}"
                ) from None
            return pc.struct_field(values, path[1:]) if len(path) > 1 else values

        return Term(read, t, node)


def _name_parts(node: exp.Expr) -> list[str]:
    if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
        return [str(p.name) for p in node.parts]
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
        return [*_name_parts(node.this), str(node.expression.name)]
    raise Refused(sf.sql_of(node))


def number_literal(text: str, sql: str) -> Term:
    """Spark's type for a number: INT, BIGINT, DECIMAL(n, 0); DOUBLE with an exponent; else DECIMAL."""
    if "e" in text.lower():
        if abs(float(text)) == float("inf"):
            raise Invalid(f"the number {text} is out of the DOUBLE range")
        return sf.constant(float(text), pa.float64(), sql)
    d = decimal.Decimal(text)
    scale, digits = max(0, -int(d.as_tuple().exponent)), len(d.as_tuple().digits)
    if max(digits, scale) > 38:
        raise Invalid(f"the number {text} has more than 38 digits")
    if re.fullmatch(r"-?\d+", text) and -(2**63) <= d < 2**63:
        return sf.constant(int(d), pa.int32() if -(2**31) <= d < 2**31 else pa.int64(), sql)
    return sf.constant(d, pa.decimal128(max(digits, scale), scale), sql)


def _literal(node: exp.Literal | exp.Boolean | exp.Null, c: _Compiler) -> Term:
    if isinstance(node, exp.Literal) and not node.is_string:
        return number_literal(str(node.this), sf.sql_of(node))
    t = {exp.Literal: sf.STRING, exp.Boolean: pa.bool_(), exp.Null: pa.null()}[type(node)]
    return sf.constant(None if t == pa.null() else node.this, t, node)


def _cast(node: exp.Cast, c: _Compiler) -> Term:  # sqlglot reads Spark's CAST as TryCast, TRY_CAST: safe
    if node.args.get("safe"):
        raise Refused(f"{sf.sql_of(node)} (TRY_CAST)")
    target, term = sf.arrow_type(node.to), c.compile(node.this)
    result = sf.cast(term, target, sql=node)
    if type(node) is exp.Cast and isinstance(node.this, exp.Literal) and result.literal is None:  # DATE 'x'
        raise Invalid(f"{sf.sql_of(node)} is not a valid {sf.spark_name(target)} literal")
    return result


_INTEGERS = {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT}
_INTEGERS |= {exp.DataType.Type.BIGINT}


def _decimal_literal(node: exp.Expression) -> bool:
    """`node` is a BD literal as sqlglot reads it: a cast of a digits-only string to DECIMAL."""
    return (
        isinstance(node, exp.Cast)
        and node.to.this == exp.DataType.Type.DECIMAL
        and isinstance(node.this, exp.Literal)
        and re.fullmatch(r"\d+(\.\d*)?|\.\d+", str(node.this.this)) is not None
    )


def _neg(node: exp.Neg, c: _Compiler) -> Term:
    inner, sql = node.this, sf.sql_of(node)
    if isinstance(inner, exp.Literal) and not inner.is_string:  # -2147483648 is an INT literal
        return number_literal(f"-{inner.this}", sql)
    literal = isinstance(inner, exp.Cast) and isinstance(inner.this, exp.Literal) and not inner.this.is_string
    if literal and inner.to.this in _INTEGERS:  # -128Y: the negative literal fits where 128Y does not
        return c.compile(type(inner)(this=exp.Literal.number(f"-{inner.this.this}"), to=inner.to))
    if _decimal_literal(inner):  # -1.5BD: Spark's grammar reads the sign as part of the literal
        return c.compile(type(inner)(this=exp.Literal.string(f"-{inner.this.this}"), to=inner.to))
    term = sf.coerce(c.compile(inner), "int float decimal", sql)
    kernel = partial(sf.checked, pc.negate_checked, sql) if kind(term.type) == "int" else negated
    return sf.derive(node, term.type, kernel, term, fail=kind(term.type) in ("int", "decimal"))


def _boolean(term: Term) -> Term:
    return sf.coerce(term, "bool", f"{term.sql} as a condition (not BOOLEAN)")


def _logic(node: exp.Expr, c: _Compiler, a: Term | None = None, b: Term | None = None) -> Term:
    """AND (OR for exp.Or) of the operands or of `a`, `b`, Kleene; `b` only where `a` does not decide."""
    a, b = (a, b) if a and b else (_boolean(c.compile(x)) for x in (node.this, node.expression))
    both = not isinstance(node, exp.Or)

    def fn(batch: Any) -> Value:
        left = a.fn(batch)
        undecided = pc.fill_null(left, True) if both else pc.invert(pc.fill_null(left, False))
        return (pc.and_kleene if both else pc.or_kleene)(left, on_rows(b, batch, undecided))

    return Term(fn, pa.bool_(), sf.sql_of(node), a.may_fail or b.may_fail)


def _is(node: exp.Is, c: _Compiler) -> Term:  # IS NULL, IS TRUE, IS FALSE: never NULL
    if isinstance(node.expression, exp.Null):
        return sf.derive(node, pa.bool_(), pc.is_null, c.compile(node.this))
    if not isinstance(node.expression, exp.Boolean):
        raise Refused(sf.sql_of(node))
    term, truth = _boolean(c.compile(node.this)), node.expression.this
    return sf.derive(node, pa.bool_(), lambda v: pc.fill_null(v if truth else pc.invert(v), False), term)


_KERNELS = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater}
_KERNELS |= {">=": pc.greater_equal}
_COMPARISONS: dict[type[exp.Expr], str] = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<="}
_COMPARISONS |= {exp.GT: ">", exp.GTE: ">="}


def compare(op: str, x: Value, y: Value, floating: bool) -> Value:
    """`x op y`; for doubles in Spark's order, where NaN = NaN and NaN is above every number."""
    if not floating:
        return _KERNELS[op](x, y)
    if op in ("=", "!="):
        equal = pc.or_(pc.equal(x, y), pc.and_(pc.is_nan(x), pc.is_nan(y)))
        return equal if op == "=" else pc.invert(equal)
    x, y, op = (y, x, op.replace(">", "<")) if ">" in op else (x, y, op)
    if op == "<":
        return pc.or_(pc.less(x, y), pc.and_(pc.invert(pc.is_nan(x)), pc.is_nan(y)))
    return pc.or_(pc.less_equal(x, y), pc.is_nan(y))


def comparable(terms: list[Term], sql: str) -> list[Term]:
    """`terms` cast to their common type (a string literal to a date or timestamp beside one)."""
    temporal = next((t.type for t in terms if kind(t.type) in sf.TEMPORAL), None)
    literal = [temporal and kind(t.type) == "string" and t.literal is not None for t in terms]
    terms = [sf.cast(t, temporal) if cast else t for t, cast in zip(terms, literal, strict=True)]
    t = sf.common_type(terms, f"comparing in {sql} (Spark's implicit casts are not reproduced)")
    if kind(t) not in ("null", "bool", "string", "binary", *sf.NUMERIC, *sf.TEMPORAL):
        raise Refused(f"comparing {sf.spark_name(t)} values in {sql}")
    return [sf.cast(term, pa.int32() if kind(t) == "null" else t) for term in terms]


def _comparison(node: exp.Expr, c: _Compiler, op: str = "", a: Any = None, b: Any = None) -> Term:
    """`a op b` (by default the node's operator and operands); `<=>` (`!<=>`) is never NULL."""
    direct = a is None and b is None and op == "" and type(node) in _COMPARISONS
    op = op or _COMPARISONS.get(type(node), "<=>")
    a, b = a or c.compile(node.this), b or c.compile(node.expression)
    if direct and op not in ("=", "!=") and (settled := past_bigint(node, op, a, b)) is not None:
        return settled
    x, y = comparable([a, b], sf.sql_of(node))
    floating = kind(x.type) == "float"

    def fn(v: Value, w: Value) -> Value:
        if "<=>" not in op:
            return compare(op, v, w, floating)
        both, neither = pc.and_(pc.is_valid(v), pc.is_valid(w)), pc.and_(pc.is_null(v), pc.is_null(w))
        same = pc.if_else(both, pc.fill_null(compare("=", v, w, floating), False), neither)
        return same if op == "<=>" else pc.invert(same)

    return sf.derive(node, pa.bool_(), fn, x, y)


def _in(node: exp.In, c: _Compiler) -> Term:
    """Kleene OR of equalities: TRUE if found, else NULL if the value or an item is NULL."""
    if not node.expressions:  # (subqueries are refused while parsing)
        raise Invalid(f"{sf.sql_of(node)} is not IN (a list of values)")
    x, *items = comparable([c.compile(node.this), *(c.compile(e) for e in node.expressions)], sf.sql_of(node))

    def fn(batch: Any) -> Value:
        tests = [compare("=", x.fn(batch), i.fn(batch), kind(x.type) == "float") for i in items]
        return reduce(pc.or_kleene, tests)

    return Term(fn, pa.bool_(), sf.sql_of(node), x.may_fail or any(i.may_fail for i in items))


def _between(node: exp.Between, c: _Compiler) -> Term:  # x >= low AND x <= high
    if node.args.get("symmetric"):
        raise Refused(f"{sf.sql_of(node)} (BETWEEN SYMMETRIC)")
    # (Spark replaces it by the two comparisons, which its analyzer then reduces as any comparison)
    low = _comparison(exp.GTE(this=node.this.copy(), expression=node.args["low"].copy()), c)
    return _logic(
        node, c, low, _comparison(exp.LTE(this=node.this.copy(), expression=node.args["high"].copy()), c)
    )


def _like(node: exp.Like | exp.ILike | exp.RegexpLike, c: _Compiler) -> Term:
    """LIKE (Spark's `%`, `_`, `\\` are Arrow's); ILIKE in lower case; RLIKE (RE2; Java-only refused)."""
    if isinstance(node.expression, exp.Any | exp.All) or node.args.get("flag") is not None:
        raise Refused(sf.sql_of(node))
    subject = sf.coerce(c.compile(node.this), "string", sf.sql_of(node))
    pattern = sf.literal_arg(c.compile(node.expression), "string", "a pattern")
    if pattern is None:
        return sf.constant(None, pa.bool_(), node)
    if isinstance(node, exp.RegexpLike):
        try:
            pc.match_substring_regex(pa.array([""]), pattern=pattern)
        except pa.ArrowInvalid:
            raise Refused(f"the regular expression {pattern!r} (RE2 syntax, not Java's)") from None
        return sf.derive(node, pa.bool_(), partial(pc.match_substring_regex, pattern=pattern), subject)
    fold, negate = isinstance(node, exp.ILike), bool(node.args.get("negate"))

    def fn(v: Value) -> Value:
        found = pc.match_like(pc.utf8_lower(v) if fold else v, pattern=pattern.lower() if fold else pattern)
        return pc.invert(found) if negate else found

    return sf.derive(node, pa.bool_(), fn, subject)


def _choice(node: exp.Expr, pairs: list[tuple[Term, Term]], default: Term | None) -> Term:
    """CASE WHEN c THEN v ... ELSE d END, each part only on the rows reaching it (NULL is FALSE)."""
    t = sf.common_type([v for _, v in pairs] + ([default] if default else []), sf.sql_of(node))
    branches = [(_boolean(cond), sf.cast(v, t)) for cond, v in pairs]
    otherwise = sf.cast(default, t) if default else sf.constant(None, t, "NULL")

    def fn(batch: Any) -> Value:
        result, undecided = sf.null_of(t), pa.scalar(True)
        for cond, value in branches:
            take = pc.and_(undecided, pc.fill_null(on_rows(cond, batch, undecided), False))
            result = pc.if_else(take, on_rows(value, batch, take), result)
            undecided = pc.and_(undecided, pc.invert(take))
        return pc.if_else(undecided, on_rows(otherwise, batch, undecided), result)

    may_fail = otherwise.may_fail or any(c.may_fail or v.may_fail for c, v in branches)
    return Term(fn, t, node, may_fail)


def _case(node: exp.Case | exp.If | exp.Nvl2 | exp.Nullif, c: _Compiler) -> Term:
    """CASE; IF(c, a, b); NVL2(x, a, b): IF(x IS NOT NULL, a, b); NULLIF(a, b): IF(a = b, NULL, a)."""
    if isinstance(node, exp.Nullif):
        a = c.compile(node.this)
        return _choice(node, [(_comparison(node, c, "=", a), sf.constant(None, a.type, "NULL"))], a)
    if not isinstance(node, exp.Case):
        test = c.compile(node.this)
        test = sf.derive(node, pa.bool_(), pc.is_valid, test) if isinstance(node, exp.Nvl2) else test
        otherwise = c.compile(node.args["false"]) if node.args.get("false") else None
        return _choice(node, [(test, c.compile(node.args["true"]))], otherwise)
    subject, pairs = (c.compile(node.this) if node.this is not None else None), []
    for branch in node.args.get("ifs") or []:
        cond = c.compile(branch.this)
        cond = _comparison(branch, c, "=", subject, cond) if subject else cond  # CASE x WHEN v
        pairs.append((cond, c.compile(branch.args["true"])))
    default = node.args.get("default")
    return _choice(node, pairs, c.compile(default) if default is not None else None)


def _coalesce(node: exp.Coalesce, c: _Compiler) -> Term:  # each argument only where still NULL
    terms = [c.compile(node.this), *(c.compile(e) for e in node.expressions)]
    t = sf.common_type(terms, sf.sql_of(node))
    first, *rest = (sf.cast(term, t) for term in terms)

    def fn(batch: Any) -> Value:
        result = first.fn(batch)
        for term in rest:
            result = pc.coalesce(result, on_rows(term, batch, pc.is_null(result)))
        return result

    return Term(fn, t, node, any(x.may_fail for x in terms))


_HANDLERS: dict[type[exp.Expr], Callable[[Any, Any], Term]] = {exp.Paren: lambda n, c: c.compile(n.this)}
_HANDLERS |= {exp.Literal: _literal, exp.Boolean: _literal, exp.Null: _literal, exp.Neg: _neg}
_HANDLERS |= {exp.Cast: _cast, exp.TryCast: _cast, exp.Is: _is, exp.In: _in, exp.Between: _between}
_HANDLERS |= {exp.Not: lambda n, c: sf.derive(n, pa.bool_(), pc.invert, _boolean(c.compile(n.this)))}
_HANDLERS |= {**dict.fromkeys((*_COMPARISONS, exp.NullSafeEQ), _comparison), exp.Coalesce: _coalesce}
_HANDLERS |= {exp.NullSafeNEQ: partial(_comparison, op="!<=>"), exp.Like: _like, exp.ILike: _like}
_HANDLERS |= {exp.RegexpLike: _like, **dict.fromkeys(ARITHMETIC, arithmetic), exp.Or: _logic}
_HANDLERS |= {exp.Case: _case, exp.If: _case, exp.Nvl2: _case, exp.Nullif: _case, exp.And: _logic}
_HANDLERS |= {exp.DPipe: lambda n, c: sf.concat(n, [c.compile(n.this), c.compile(n.expression)])}
