"""Generated columns on Spark paths: Spark SQL computes what the data leaves out.

    (a write: `schemas.conform` fills a generated column the DataFrame lacks with its expression)
    assigned(ctx, sets, ...)  UPDATE and each MERGE update / insert clause: a generated column the
                              clause does not set gets its expression with every column it names
                              replaced by that column's new value: the clause's own assignment, or
                              else (`keep`) the row's current value (UPDATE: the column; MERGE
                              update: the target's) or NULL (an insert). An UPDATE that changes
                              none of its columns leaves it alone.
A value the data or a clause does set explicitly is kept, and checked like any row rule
(`(col <=> (expression))`, `spark.features.rules`). The rewriting is the engine's (`rewrite_columns`, on
sqlglot's tree), never text substitution, so a column name inside a string literal is never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from airflow_txnlog.engine import UnsupportedFeatureError
from airflow_txnlog.engine.spi import expression_columns, rewrite_columns
from airflow_txnlog.spark.context import TableContext


def refuse_identity_update(ctx: TableContext, what: str, sets: Collection[str]) -> None:
    """UnsupportedFeatureError when `sets` (the columns an update assigns) names an identity column:
    its values are the writer's, never updated (Delta's DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED)."""
    hit = [i.column for i in ctx.identities if i.column in sets]
    if hit:
        raise UnsupportedFeatureError(
            f"{what}: identity column {hit[0]!r} cannot be updated (as in Delta: its values are the "
            "writer's); nothing was written. Leave it out of the assignments (a `*` clause assigns "
            "every column the source has: drop the column from the source)",
            feature="identityColumns",
        )


def refuse_generated_from_identity(ctx: TableContext, what: str) -> None:
    """UnsupportedFeatureError when a generated column reads an identity column: Spark computes a
    MERGE insert's generated values before the identity values exist (Table.write fills both)."""
    ids = {i.column.lower() for i in ctx.identities}
    for column, expression in ctx.generated.items():
        read = ids & set(expression_columns(expression))
        if read:
            raise UnsupportedFeatureError(
                f"{what}: generated column {column!r} reads identity column {sorted(read)[0]!r}, which "
                "Spark numbers after computing it; nothing was written. Help: append the rows with "
                "SparkTable.write or Table.write, which fill both",
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
