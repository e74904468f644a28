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

from airflow_txnlog.engine.sql.types import Term, constant, kind

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
        if isinstance(n, exp.NullSafeEQ) and isinstance(inner, exp.Paren):
            if not isinstance(inner.this, _COMPARED) or not _added_paren(n, tokens):
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
    them tighter (and reads `a <=> b IN (c)` as `a <=> (b IN (c))`, parentheses of its own). Such
    text is refused rather than read otherwise than Spark reads it. (Run after `left_to_right`.)"""
    for n in node.walk():
        if not isinstance(n, _COMPARED):
            continue
        if any(_predicate(c) for c in (n.this, n.expression)):
            return n
        added = isinstance(n, exp.NullSafeEQ) and isinstance(n.expression, exp.Paren)
        if added and _predicate(n.expression.this) and _added_paren(n, tokens):
            return n
    return None


def _predicate(child: exp.Expression) -> bool:
    """An IN / BETWEEN / LIKE / IS predicate (or its negation) as an operand (sqlglot keeps a
    written pair of parentheses as `exp.Paren`, so a predicate here has none)."""
    inner = child.this if isinstance(child, exp.Not) else child
    return isinstance(inner, _PREDICATES)


def _added_paren(n: exp.Expression, tokens: list[Any]) -> bool:
    """Whether the parentheses around `<=>`'s right operand are sqlglot's own: the token after the
    `<=>` (the first one after the left operand) is not a `(` closing after the operand. `IS NOT
    DISTINCT FROM`, which sqlglot also reads as `<=>`, is a Spark predicate whose right side is a
    whole comparison: its parentheses are Spark's reading too (False)."""
    left, right = _span(n.this), _span(n.expression)
    if left is None or right is None:
        return False
    op = next((i for i, t in enumerate(tokens) if t.start > left[1] and t.token_type in _OPERATORS), None)
    if op is None or tokens[op].token_type != TokenType.NULLSAFE_EQ:
        return False
    following = op + 1
    written = following < len(tokens) and tokens[following].token_type == TokenType.L_PAREN
    return not (written and _closes_after(tokens, following, right[1]))


_OPERATORS = (TokenType.NULLSAFE_EQ, TokenType.IS)


def _span(node: exp.Expression) -> tuple[int, int] | None:
    """The first and last character of `node`'s own tokens in the text (None if sqlglot kept none)."""
    places = [(n.meta["start"], n.meta["end"]) for n in node.walk() if "start" in n.meta and "end" in n.meta]
    return (min(p[0] for p in places), max(p[1] for p in places)) if places else None


def _closes_after(tokens: list[Any], opening: int, end: int) -> bool:
    """Whether the `(` at `tokens[opening]` closes after character `end`."""
    depth = 0
    for t in tokens[opening:]:
        depth += (t.token_type == TokenType.L_PAREN) - (t.token_type == TokenType.R_PAREN)
        if depth == 0:
            return bool(t.start > end)
    return False


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
        return constant(oriented in ((">", ">=") if value < 0 else ("<", "<=")), pa.bool_(), node)
    return None
