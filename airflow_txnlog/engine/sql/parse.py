"""Reading Spark SQL text: the one place the engine parses it (sqlglot, Spark dialect).

`parse(text)` gives the tree of one expression as Spark reads it, which is not always sqlglot's
reading: a doubled quote inside a string is one quote (`'O''Brien'`; sqlglot reads two literals to
join), Java datetime patterns stay as written (sqlglot maps `YYYY` and `yyyy` alike), and comparison
operators are one level, left to right (`spark_rules.left_to_right`). Syntax errors are sqlglot's
(`SYNTAX_ERRORS`): each caller words them for its user (a predicate, a constraint, a generated
column). Every user of SQL in the engine parses through here: the compiler (engine.sql.expressions),
predicates, generated columns and their pruning.
"""

from __future__ import annotations

import itertools
from typing import Any

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError

from airflow_txnlog.engine.sql.spark_rules import left_to_right

SPARK = Spark()
SPARK.format_time = lambda p: exp.Literal.string(p[1:-1]) if isinstance(p, str) else p  # type: ignore
SYNTAX_ERRORS = (ParseError, TokenError)


def tokens(text: str) -> list[Any]:
    """The Spark tokens of `text` (SYNTAX_ERRORS for text no Spark SQL starts with)."""
    return list(SPARK.tokenize(text))


def parse(text: str) -> exp.Expression:
    """One expression's tree as Spark reads `text` (see the module docstring)."""
    return parse_with_tokens(text)[0]


def parse_with_tokens(text: str) -> tuple[exp.Expression, list[Any]]:
    """(the tree, the tokens) of `text`; SYNTAX_ERRORS when it does not parse."""
    found = tokens(text)
    strings = [t for t in found if t.token_type == TokenType.STRING]
    chars = list(text)
    for one, two in itertools.pairwise(strings):
        if two.start == one.end + 1 and text[one.end] == text[two.start]:
            chars[one.end] = "\\"  # 'O''Brien' -> 'O\'Brien': same length, positions hold
    node = sqlglot.parse_one("".join(chars), read=SPARK)
    if not isinstance(node, exp.Expression):
        raise ParseError(f"{text!r} is not an expression")
    return left_to_right(node, found), found
