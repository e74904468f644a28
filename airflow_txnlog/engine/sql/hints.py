"""What a predicate error says when a literal is written in a way SQL reads otherwise.

A date without quotes is the usual slip: `d >= 2026-11-27` is valid SQL, `d >= 2026 - 11 - 27`
(that is, `d >= 1988`), and a date and time without quotes (`d >= 2026-11-27 00:00:00`) is no SQL
at all. When a predicate fails to compile, engine.sql.predicates asks `unquoted_date_error` whether
such a slip explains it; the message then says how SQL read the text and what to write instead
(`DATE '2026-11-27'`, `TIMESTAMP '2026-11-27 00:00:00'`).
"""

from __future__ import annotations

import re

from sqlglot import exp

_ARITHMETIC = exp.Add | exp.Sub | exp.Mul | exp.Div | exp.Mod | exp.IntDiv
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # (sqlglot underlines the bad token with terminal codes)
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")
_DATE_TIME = re.compile(r"(?<![\w.])\d{4}-\d{1,2}-\d{1,2}[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?")


def unquoted_date(node: exp.Expression) -> str | None:
    """The date `node` stands for when it is one written without quotes (`2026-11-27`, which SQL
    reads as 2026 minus 11 minus 27), as YYYY-MM-DD; None for anything else."""
    if not (isinstance(node, exp.Sub) and isinstance(node.this, exp.Sub)):
        return None
    parts = [node.this.this, node.this.expression, node.expression]
    if not all(isinstance(p, exp.Literal) and not p.is_string and p.this.isdigit() for p in parts):
        return None
    if len(parts[0].this) != 4:
        return None
    year, month, day = (int(p.this) for p in parts)
    return f"{year:04d}-{month:02d}-{day:02d}"


def not_a_literal(node: exp.Expression) -> str:
    """Why `node` cannot stand where a predicate needs a literal; for an unquoted date, what to
    write instead."""
    date = unquoted_date(node)
    if date is not None:
        written = node.sql().replace(" - ", "-")
        return (
            f"{written} without quotes parsed as arithmetic ({node.sql()}), not as a date. Help: write "
            f"DATE '{date}' (or the quoted string '{date}')"
        )
    what = f"unsupported expression {node.sql()!r}"
    if isinstance(node, _ARITHMETIC):
        return f"{what}: arithmetic is not supported here (only columns and literals may be compared)"
    return f"{what} (only columns and literals may be compared)"


def syntax_error(exc: Exception, text: str) -> str:
    """sqlglot's complaint about `text` without terminal codes; for a date and time written without
    quotes, what to write instead."""
    message = _ANSI.sub("", str(exc))
    found = _DATE_TIME.search(_QUOTED.sub("''", text))
    if found is None:
        return message
    return f"{message}. Help: a date and time needs quotes: TIMESTAMP '{found.group(0)}'"


def unquoted_date_error(text: str, tree: exp.Expression | None, error: Exception | None) -> str | None:
    """What to say after the predicate's text when an unquoted date (or date and time) explains its
    failure, else None: `tree` is its parse (engine.sql.parse), or `error` the syntax error."""
    if error is not None:
        message = syntax_error(error, text)
        return f" is not valid SQL: {message}" if "Help:" in message else None
    for node in tree.walk() if tree is not None else ():
        if isinstance(node, exp.Expression) and unquoted_date(node) is not None:
            return f": {not_a_literal(node)}"
    return None
