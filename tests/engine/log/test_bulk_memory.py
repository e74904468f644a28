"""Checkpoint parts are decoded into the bulk pool (`engine.log.bulk_memory`): the same data as
pyarrow's own `ParquetFile` gives, from a native file or a Python file object, in jemalloc's pool
where this pyarrow has it (a pyarrow release that changes the private reader class fails here
instead of quietly falling back to the default pool)."""

from __future__ import annotations

import io
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow._parquet import ParquetReader

from airflow_txnlog.engine.log import bulk_memory
from airflow_txnlog.engine.log.bulk_memory import bulk_pool, open_parquet

HAS_JEMALLOC = "jemalloc" in pa.supported_memory_backends()
# (before pyarrow 21 ParquetFile and its reader class opened extension types differently: there the
# swap is refused and parts read on the default pool, by design)
SWAPS = HAS_JEMALLOC and int(pa.__version__.split(".")[0]) >= 21


def _table() -> pa.Table:
    n = 50_000
    add = pa.StructArray.from_arrays(
        [pa.array([f"part=p{i % 7}/file-{i:08d}.parquet" for i in range(n)]), pa.array(range(n), pa.int64())],
        names=["path", "size"],
    )
    return pa.table({"add": add, "n": pa.array(range(n), pa.int32())})


def _parquet(tmp_path: Path) -> Path:
    path = tmp_path / "part.parquet"
    pq.write_table(_table(), path, row_group_size=20_000)
    return path


@pytest.mark.skipif(not HAS_JEMALLOC, reason="this pyarrow build has no jemalloc")
def test_the_bulk_pool_is_jemalloc_and_the_default_is_left_alone() -> None:
    before = pa.default_memory_pool().backend_name
    assert bulk_pool().backend_name == "jemalloc"
    assert pa.default_memory_pool().backend_name == before


@pytest.mark.skipif(not SWAPS, reason="this pyarrow reads parts on its default pool")
@pytest.mark.parametrize("kind", ["native", "python"])
def test_a_part_is_read_into_the_bulk_pool_with_the_same_data(tmp_path: Path, kind: str) -> None:
    path = _parquet(tmp_path)
    expected = pq.ParquetFile(path).read(columns=["add.path", "add.size", "n"])
    fs = fsspec.filesystem("file")
    source = pa.OSFile(str(path)) if kind == "native" else fs.open(str(path), "rb")
    with source:
        f = open_parquet(source, buffer_size=1 << 16, pre_buffer=False)
        assert f.reader is not None and f.schema_arrow == pq.ParquetFile(path).schema_arrow
        before = bulk_pool().bytes_allocated()
        got = f.read(columns=["add.path", "add.size", "n"])
        grew = bulk_pool().bytes_allocated() - before
        batches = list(f.iter_batches(batch_size=7_000, columns=["add.path"]))
    assert got.equals(expected)
    assert grew >= got.nbytes  # its buffers came from the bulk pool
    assert pa.chunked_array([b.column("add").field("path") for b in batches]).to_pylist() == (
        expected.column("add").combine_chunks().field("path").to_pylist()
    )


def test_without_the_private_reader_class_the_default_pool_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should a pyarrow release drop or change the reader class, parts still read (default pool)."""
    path = _parquet(tmp_path)
    monkeypatch.setattr(bulk_memory, "_Reader", None)
    f = open_parquet(pa.OSFile(str(path)), buffer_size=0, pre_buffer=True)
    assert f.read().equals(pq.read_table(path))


def test_a_reader_that_sees_another_schema_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader class that opens the file with another schema (pyarrow < 21's extension types) is
    refused: the part reads as pyarrow's own ParquetFile reads it."""

    class OtherSchema(ParquetReader):  # type: ignore[misc]
        @property
        def schema_arrow(self) -> pa.Schema:
            return pa.schema([("other", pa.int8())])

    path = _parquet(tmp_path)
    monkeypatch.setattr(bulk_memory, "_Reader", OtherSchema)
    f = open_parquet(pa.OSFile(str(path)), buffer_size=0, pre_buffer=False)
    assert not isinstance(f.reader, OtherSchema)
    assert f.read().equals(pq.read_table(path))


def test_a_reader_class_with_another_signature_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Changed:
        def __init__(self, **kwargs: object) -> None:
            raise TypeError("memory_pool is not an argument any more")

    path = _parquet(tmp_path)
    monkeypatch.setattr(bulk_memory, "_Reader", Changed)
    buf = io.BytesIO(path.read_bytes())
    assert open_parquet(buf, buffer_size=0, pre_buffer=False).read().equals(pq.read_table(path))
