"""How an argument check shows a value in its error message: one rule for every layer.

`shown(value)` is the value's repr cut to 80 characters (a 10 MB list must not become a 10 MB error
message or log line); `listed(values)` names accepted values as `'a', 'b' or 'c'`. The engine
(engine.validate and the checks in its modules), the Spark layer (spark._arguments) and the Airflow
layer (arguments) use them.
This module imports nothing, so the Airflow layer's checks still load nothing heavy while a DAG file
is parsed.
"""

from __future__ import annotations

from collections.abc import Iterable

LIMIT = 80


def shown(value: object) -> str:
    """`repr(value)`, cut to LIMIT characters with '...'."""
    text = repr(value)
    return text if len(text) <= LIMIT else text[: LIMIT - 3] + "..."


def listed(values: Iterable[object]) -> str:
    """The values' reprs as `'a', 'b' or 'c'` (one value: just it)."""
    *rest, last = (repr(v) for v in values)
    return f"{', '.join(rest)} or {last}" if rest else last
