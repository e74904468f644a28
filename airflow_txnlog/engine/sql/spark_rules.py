"""Where Spark's own parser and analyzer read an expression otherwise than sqlglot's tree suggests,
for `expressions` to follow Spark:

- `left_to_right`: Spark's comparison operators (`= == != <> < <= > >= <=>`) are one precedence
  level, grouped left to right (`a = b < c` is `(a = b) < c`); sqlglot binds `< <= > >=` tighter
  than `= <> !=`, and reads `a <=> b < c` with parentheses of its own around `b < c`.
- `mixed_predicate`: IN / BETWEEN / LIKE / IS are predicates below comparisons in Spark's grammar
  and above them in sqlglot's; a comparison with such an unparenthesized operand is refused.
- `past_bigint`: the analyzer's strength reduction of an integer compared with a decimal literal
  (DecimalPrecision, integralAndDecimalLiteral): past BIGINT's range the comparison is a constant,
  even where the integer is NULL (`i > 100000000000000000000` is FALSE on every row).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from sqlglot import TokenType, exp

from airflow_txnlog.engine.sql.types import Term, constant, kind, sql_of

_ORDERING = (exp.LT, exp.LTE, exp.GT, exp.GTE)
_COMPARED = (*_ORDERING, exp.EQ, exp.NEQ, exp.NullSafeEQ)


def left_to_right(node: exp.Expression, tokens: list[Any]) -> exp.Expression:
    """Spark's comparison operators are one level, left to right (`a = b < c` is `(a = b) < c`):
    sqlglot's tree regrouped. sqlglot binds `< <= > >=` tighter than `= <> !=`, and reads
    `a <=> b < c` as `a <=> (b < c)`, adding parentheses of its own (told from written ones by the
    tokens: a written `(` before the operand whose `)` closes after it). `IS NOT DISTINCT FROM`,
    which sqlglot also reads as `<=>`, is a predicate in Spark, below comparisons: left as read."""

    def regroup(n: exp.Expression) -> exp.Expression:
        inner = n.expression
        if (
            isinstance(n, exp.NullSafeEQ)
            and isinstance(inner, exp.Paren)
            and isinstance(inner.this, _COMPARED)
        ):
            if _written(inner.this, tokens) or not _after(inner.this, tokens, TokenType.NULLSAFE_EQ):
                return n
            inner = inner.this
        elif not isinstance(n, exp.EQ | exp.NEQ) or not isinstance(inner, _ORDERING):
            return n
        grouped: exp.Expression = type(inner)(
            this=regroup(type(n)(this=n.this, expression=inner.this)), expression=inner.expression
        )
        return grouped

    regrouped: exp.Expression = node.transform(regroup)
    return regrouped


_PREDICATES = (exp.In, exp.Between, exp.Like, exp.ILike, exp.RegexpLike, exp.Is)


def mixed_predicate(node: exp.Expression, tokens: list[Any]) -> exp.Expression | None:
    """A comparison whose operand sqlglot grouped otherwise than Spark, if any: an IN / BETWEEN /
    LIKE / IS predicate without written parentheses. Spark's grammar puts those predicates below
    comparisons (`a < b IN (c)` is `(a < b) IN (c)`, `a IN (b) = c` does not parse); sqlglot binds
    them tighter. Such text is refused rather than read otherwise than Spark reads it. (Run after
    `left_to_right`.)"""
    for n in node.walk():
        if isinstance(n, _COMPARED) and any(_regrouped(c, tokens) for c in (n.this, n.expression)):
            return n
    return None


def _regrouped(child: exp.Expression, tokens: list[Any]) -> bool:
    """A predicate operand without parentheses (sqlglot keeps a written pair as `exp.Paren`; the
    pair it adds itself around `<=>`'s operand is not told apart here: `_written` cannot place an
    operand that starts with a typed literal, so such a pair is taken as written)."""
    inner = child.this if isinstance(child, exp.Not) else child
    return isinstance(inner, _PREDICATES)


def _span(node: exp.Expression) -> tuple[int, int] | None:
    """The first and last character of `node`'s own tokens in the text (None if sqlglot kept none)."""
    places = [(n.meta["start"], n.meta["end"]) for n in node.walk() if "start" in n.meta and "end" in n.meta]
    return (min(p[0] for p in places), max(p[1] for p in places)) if places else None


def _first_token(node: exp.Expression, tokens: list[Any]) -> int | None:
    span = _span(node)
    return next((i for i, t in enumerate(tokens) if span and t.start == span[0]), None)


def _written(node: exp.Expression, tokens: list[Any]) -> bool:
    """Whether `node` is enclosed in parentheses written in the text (or its place is unknown): one
    of the `(` right before its first token closes after its last (`((a) != m)`: the outer one)."""
    first, span = _first_token(node, tokens), _span(node)
    if first is None or span is None:
        return True
    k = first - 1
    while k >= 0 and tokens[k].token_type == TokenType.L_PAREN:
        if _closes_after(tokens, k, span[1]):
            return True
        k -= 1
    return False


def _closes_after(tokens: list[Any], opening: int, end: int) -> bool:
    """Whether the `(` at `tokens[opening]` closes after character `end`."""
    depth = 0
    for t in tokens[opening:]:
        depth += (t.token_type == TokenType.L_PAREN) - (t.token_type == TokenType.R_PAREN)
        if depth == 0:
            return bool(t.start > end)
    return False


def _after(node: exp.Expression, tokens: list[Any], kind: TokenType) -> bool:
    """Whether the token before `node`'s first one (and the `(` opening there) is of `kind`."""
    first = _first_token(node, tokens) or 0
    while first and tokens[first - 1].token_type == TokenType.L_PAREN:
        first -= 1
    return first > 0 and tokens[first - 1].token_type == kind


def _decimal_literal(node: exp.Expr) -> bool:
    """A literal Spark reads as one: `1.5`, or `1.5BD` (sqlglot: a cast of its text to DECIMAL)."""
    if isinstance(node, exp.Literal):
        return True
    if not isinstance(node, exp.Cast) or not isinstance(node.this, exp.Literal):
        return False
    return bool(node.to.this == exp.DataType.Type.DECIMAL)


def past_bigint(node: exp.Expr, op: str, a: Term, b: Term) -> Term | None:
    """Spark's analyzer reduces an integer compared (< <= > >=) with a decimal literal: past BIGINT's
    range the comparison is a constant, TRUE or FALSE even where the integer is NULL (DecimalPrecision's
    integralAndDecimalLiteral); within it the comparison means the same as computed here."""
    for x, lit, side, flip in ((a, b, node.expression, False), (b, a, node.this, True)):
        written = side.this if isinstance(side, exp.Neg) else side
        if kind(x.type) != "int" or kind(lit.type) != "decimal" or not _decimal_literal(written):
            continue
        value = lit.literal.as_py() if lit.literal is not None and lit.literal.is_valid else None
        if value is None or -(2**63) <= value < 2**63:
            return None
        oriented = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op] if flip else op  # x op value
        return constant(oriented in ((">", ">=") if value < 0 else ("<", "<=")), pa.bool_(), sql_of(node))
    return None
