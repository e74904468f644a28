"""The planned Avro writers write what pyiceberg's own writers write: the same header and records (a
one-block file byte for byte, with the same sync marker); entries in blocks of BLOCK_RECORDS."""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.avro.file import AvroFile
from pyiceberg.io import InputFile, InputStream, OutputFile, OutputStream
from pyiceberg.manifest import (
    ManifestEntry,
    ManifestEntryStatus,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)

from airflow_txnlog.engine.features import column_mapping
from airflow_txnlog.engine.log.actions import AddFile
from airflow_txnlog.engine.uniform import avro_writers, iceberg_schema

LOGICAL = pa.schema(
    [
        pa.field(
            name,
            t,
            metadata={column_mapping.FIELD_ID: str(i + 1), column_mapping.PHYSICAL_NAME: f'"col-{i}"'},
        )
        for i, (name, t) in enumerate([("id", pa.int64()), ("day", pa.date32()), ("region", pa.string())])
    ]
)
SYNC = b"0123456789abcdef"


class _Memory(OutputFile):
    """An output file in memory (the bytes once closed)."""

    def __init__(self) -> None:
        super().__init__("/t/metadata/m.avro")
        self.buffer = io.BytesIO()

    def __len__(self) -> int:
        return len(self.buffer.getvalue())

    def exists(self) -> bool:
        return False

    def to_input_file(self) -> Any:
        raise NotImplementedError

    def create(self, overwrite: bool = False) -> OutputStream:
        buffer = self.buffer

        class _Stream(OutputStream):
            def write(self, b: bytes) -> int:
                return buffer.write(b)

            def tell(self) -> int:
                return buffer.tell()

            def close(self) -> None:
                pass

            def __enter__(self) -> OutputStream:
                return self

            def __exit__(self, *exc: object) -> None:
                pass

        return _Stream()


class _Input(InputFile):
    def __init__(self, data: bytes) -> None:
        super().__init__("/t/metadata/m.avro")
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def exists(self) -> bool:
        return True

    def open(self, seekable: bool = True) -> InputStream:
        return io.BytesIO(self.data)


def _entries(n: int, parts: tuple[str, ...] = ("day", "region")) -> list[ManifestEntry]:
    files = iceberg_schema.FileEntries("/t", LOGICAL, parts)
    adds = [
        AddFile(f"day=2026-11-0{i % 3 + 1}/region=r{i}/f{i}.parquet", {"col-1": f"2026-11-0{i % 3 + 1}",
                "col-2": f"r{i}"}, 100 + i, 1, stats='{"numRecords": 7}')
        for i in range(n)
    ]  # fmt: skip
    return [
        ManifestEntry.from_args(
            status=ManifestEntryStatus.ADDED,
            snapshot_id=5,
            sequence_number=3,
            file_sequence_number=3,
            data_file=files.data_file(a),
        )
        for a in adds
    ]


def _written(writer: Any, out: _Memory, fill: Any) -> tuple[bytes, Any]:
    """The bytes `writer` wrote (its random sync marker replaced by SYNC) and what it returned."""
    with writer as w:
        marker = w._writer.sync_bytes
        fill(w)
    result = writer.to_manifest_file() if hasattr(writer, "to_manifest_file") else None
    return out.buffer.getvalue().replace(marker, SYNC), result


def _fill_manifest(entries: list[ManifestEntry]) -> Any:
    def fill(w: Any) -> None:
        for i, e in enumerate(entries):
            (w.existing if i % 3 == 0 else w.delete if i % 3 == 1 else w.add)(e)

    return fill


def _without_length(m: Any) -> list[Any]:
    return [v for i, v in enumerate(m._data) if i != 1]  # (manifest_length: field 1)


def _decoded(data: bytes) -> tuple[dict[str, str], list[Any], int]:
    """A file's header metadata, its records (pyiceberg's reader, the file's own schema) and blocks."""
    with AvroFile[Any](_Input(data)) as read:
        records = list(read)
        header = dict(read.header.meta)
    return header, records, data.count(SYNC) - 1  # (the marker: once in the header, once a block)


@pytest.mark.parametrize("parts", [("day", "region"), ()])
@pytest.mark.parametrize("codec", ["deflate", "null"])
@pytest.mark.parametrize("n", [1, 12, 2_500])
def test_manifests_decode_to_pyicebergs_records(codec: Any, parts: tuple[str, ...], n: int) -> None:
    spec = iceberg_schema.partition_spec(LOGICAL, parts)
    schema = iceberg_schema.schema(LOGICAL, 0)
    entries = _entries(n, parts)
    for _ in range(2):  # (the second file is written from the kept plan)
        ours_out, theirs_out = _Memory(), _Memory()
        ours = _written(avro_writers.ManifestWriter(spec, schema, ours_out, 5, codec), ours_out,
                        _fill_manifest(entries))  # fmt: skip
        theirs = _written(
            write_manifest(2, spec, schema, theirs_out, 5, codec), theirs_out, _fill_manifest(entries)
        )
        header, records, blocks = _decoded(ours[0])
        assert (header, records) == _decoded(theirs[0])[:2]
        assert len(records) == n
        assert blocks == -(-n // avro_writers.BLOCK_RECORDS)  # (pyiceberg's: one block per entry)
        if n == 1:
            assert ours[0] == theirs[0]
        assert _without_length(ours[1]) == _without_length(theirs[1])  # (counts, partition summaries)
        assert ours[1].manifest_length == len(ours[0])


@pytest.mark.parametrize("codec", ["deflate", "null"])
def test_manifest_list_bytes_equal_pyicebergs(codec: Any) -> None:
    spec = iceberg_schema.partition_spec(LOGICAL, ("day", "region"))
    schema = iceberg_schema.schema(LOGICAL, 0)
    manifests = []
    for k in range(3):
        out = _Memory()
        manifests.append(
            _written(write_manifest(2, spec, schema, out, 5, codec), out, _fill_manifest(_entries(k + 2)))[1]
        )
    for _ in range(2):
        ours_out, theirs_out = _Memory(), _Memory()
        ours = _written(avro_writers.ManifestListWriter(ours_out, 5, 4, 9, codec), ours_out,
                        lambda w: w.add_manifests(manifests))  # fmt: skip
        theirs = _written(write_manifest_list(2, theirs_out, 5, 4, 9, codec), theirs_out,
                          lambda w: w.add_manifests(manifests))  # fmt: skip
        assert ours[0] == theirs[0]
    read = list(read_manifest_list(_Input(ours[0])))
    assert [(m.added_files_count, m.existing_files_count, m.sequence_number) for m in read] == [
        (m.added_files_count, m.existing_files_count, 9) for m in manifests
    ]
