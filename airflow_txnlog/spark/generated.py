"""Generated columns on Spark paths: Spark SQL computes what the data leaves out.

    (a write: `schemas.conform` fills a generated column the DataFrame lacks with its expression)
    assigned(ctx, sets, ...)  UPDATE and each MERGE update / insert clause: a generated column the
                              clause does not set gets its expression with every column it names
                              replaced by that column's new value: the clause's own assignment, or
                              else (`keep`) the row's current value (UPDATE: the column; MERGE
                              update: the target's) or NULL (an insert). An UPDATE that changes
                              none of its columns leaves it alone.
A value the data or a clause does set explicitly is kept, and checked like any row rule
(`(col <=> (expression))`, `spark.rules`). The rewriting is the engine's (`rewrite_columns`, on
sqlglot's tree), never text substitution, so a column name inside a string literal is never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from airflow_txnlog.engine import UnsupportedFeatureError, expression_columns, rewrite_columns
from airflow_txnlog.spark.scan import TableContext


def refuse_identity(ctx: TableContext, what: str, columns: Collection[str] | None = None) -> None:
    """UnsupportedFeatureError when `what` would have to number identity columns (`columns`: only
    when it sets one of these; None: any identity column): Spark does not generate them yet."""
    hit = [c for c in ctx.identities if columns is None or c in columns]
    if hit:
        raise UnsupportedFeatureError(
            f"{what}: the table has identity column {hit[0]!r}, whose values only the engine's writer "
            "generates yet (Table.write, which also renumbers after a lost race); Spark writes that add or "
            "set identity values are refused, nothing was written. DELETE, UPDATE of other columns and "
            "OPTIMIZE work",
            feature="identityColumns",
        )


def assigned(
    ctx: TableContext, sets: Mapping[str, str], *, keep: Callable[[str], str] | None
) -> dict[str, str]:
    """`sets` (table column -> SQL) plus a value for each generated column it does not set (see the
    module docstring). `keep(column)`: SQL for a column's current value; None for an insert."""
    out = dict(sets)
    by_lower = {n.lower(): n for n in ctx.schema.names}
    for column, expression in ctx.generated.items():
        if column in sets:
            continue
        named = expression_columns(expression)
        if keep is not None and not any(by_lower.get(c) in sets for c in named):
            continue  # an update that changes none of its columns: the stored value still holds
        values = {}
        for c in named:
            table_column = by_lower.get(c, c)
            if table_column in sets:
                values[c] = sets[table_column]
            else:
                values[c] = keep(table_column) if keep is not None else "NULL"
        out[column] = rewrite_columns(expression, values)
    return out
