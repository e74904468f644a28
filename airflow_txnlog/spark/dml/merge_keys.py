"""MERGE's step 0: what the source says about the target rows it can match (see `merge`).

`equality_keys` finds the `t.x = s.y` conjuncts of a simple ON condition; `probe` runs one Spark job
over the source for its row count and the min / max of each key, and `probe_keys` computes the same
from source keys already collected on the driver (`merge_local`). Both give a target filter
`x >= min AND x <= max` that prunes files by partition values and stats.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_txnlog.spark.context import TableContext
from airflow_txnlog.spark.dml import merge_local
from airflow_txnlog.spark.schemas import spark_type

_IDENT = r"`[^`]+`|[A-Za-z_][A-Za-z0-9_]*"
_EQ = re.compile(rf"^\s*({_IDENT})\s*\.\s*({_IDENT})\s*=\s*({_IDENT})\s*\.\s*({_IDENT})\s*$")


def _sql_literal(value: Any) -> str | None:
    """A literal the engine's predicate parser reads back exactly (None if there is none)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return None  # zone semantics differ between sources; not worth the risk for a pruning hint
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str) and "'" not in value and "\\" not in value:
        return f"'{value}'"
    return None


def equality_keys(
    ctx: TableContext, on: str, source: DataFrame, source_alias: str, target_alias: str
) -> list[tuple[str, str]]:
    """(target column, source column) of each `t.x = s.y` conjunct of a simple ON condition."""
    if re.search(r"\bor\b|[()'\"]", on, flags=re.IGNORECASE):
        return []
    by_lower = {n.lower(): n for n in ctx.schema.names}
    src_types = {f.name.lower(): f.dataType for f in source.schema.fields}
    keys = []
    for part in re.split(r"\s+and\s+", on, flags=re.IGNORECASE):
        m = _EQ.match(part)
        if not m:
            continue
        a1, c1, a2, c2 = (x.strip("`") for x in m.groups())
        if (a1, a2) == (source_alias, target_alias):
            a1, c1, a2, c2 = a2, c2, a1, c1
        if (a1, a2) != (target_alias, source_alias) or c1.lower() not in by_lower:
            continue
        target = by_lower[c1.lower()]
        s_type = src_types.get(c2.lower())
        if s_type is not None and s_type.simpleString() == spark_type(ctx.schema, target).simpleString():
            keys.append((target, c2))
    return keys


def probe(source: DataFrame, source_alias: str, keys: list[tuple[str, str]]) -> tuple[int, str | None]:
    """(source rows, target filter admitting every target row a source row can match): one job."""
    src = source.alias(source_alias)
    aggs = [F.count(F.lit(1)).alias("n")]
    for i, (_, s) in enumerate(keys):
        col = F.col(f"`{source_alias}`.`{s}`")
        aggs += [F.min(col).alias(f"lo{i}"), F.max(col).alias(f"hi{i}")]
    row = src.agg(*aggs).collect()[0]
    terms = []
    for i, (t, _) in enumerate(keys):
        lo, hi = _sql_literal(row[f"lo{i}"]), _sql_literal(row[f"hi{i}"])
        if lo is not None and hi is not None:
            terms.append(f"`{t}` >= {lo} AND `{t}` <= {hi}")
    return int(row["n"]), (" AND ".join(terms) or None)


def probe_keys(keys: list[tuple[str, str]], src: pa.Table) -> tuple[int, str | None]:
    """`probe` from source keys already on the driver (`merge_local.source_keys`): no Spark job."""
    terms = []
    for i, (t, _) in enumerate(keys):
        lo, hi = (_sql_literal(v) for v in merge_local.bounds(src, i))
        if lo is not None and hi is not None:
            terms.append(f"`{t}` >= {lo} AND `{t}` <= {hi}")
    return int(src.num_rows), (" AND ".join(terms) or None)
