"""delta-rs (`deltalake`) as a second reader in tests.

`DeltaTable.to_pyarrow_table()` hands the files to a pyarrow dataset that knows nothing of column
mapping (every column of a mapped table reads as NULL there), so rows are read through delta-rs's
own query engine (`QueryBuilder`, DataFusion on delta-kernel), which maps physical names and
applies deletion vectors as Delta readers must."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest


def deltars_rows(root: str | Path, where: str | None = None) -> list[dict[str, Any]]:
    """Every row delta-rs reads from the table at `root` (optionally filtered), sorted by `repr`."""
    deltalake = pytest.importorskip("deltalake")
    table = deltalake.DeltaTable(str(root))
    sql = "SELECT * FROM t" + (f" WHERE {where}" if where else "")
    result = pa.table(deltalake.QueryBuilder().register("t", table).execute(sql).read_all())
    return sorted(result.to_pylist(), key=repr)
