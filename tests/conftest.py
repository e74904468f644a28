from __future__ import annotations

import uuid
from collections.abc import Iterator

import fsspec
import pyarrow as pa
import pytest

SCHEMA = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("part", pa.string())])


@pytest.fixture(params=["file", "memory"])
def table_uri(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """Every engine test runs on the local filesystem and on the in-memory backend."""
    if request.param == "file":
        yield str(tmp_path / "table")
    else:
        uri = f"memory://tables/{uuid.uuid4().hex}"
        yield uri
        fs = fsspec.filesystem("memory")
        if fs.exists(uri):
            fs.rm(uri, recursive=True)


def rows(ids: list[int], part: str | None = "a") -> pa.Table:
    return pa.table(
        {"id": ids, "value": [float(i) / 2 for i in ids], "part": [part] * len(ids)},
        schema=SCHEMA,
    )
