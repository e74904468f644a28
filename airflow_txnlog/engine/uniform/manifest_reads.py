"""Manifest entries read back for a rewrite, with doubles decoded exactly.

A sync rewrites the manifests that list removed files and merges small manifests: it reads their
entries and writes them again. pyiceberg 0.12.0's compiled Avro decoder reads a double at float32
precision (0.1 comes back as 0.10000000149011612, 1e300 as inf; fixed upstream in
apache/iceberg-python PR #3808, not in a release on PyPI yet), so a double partition value would be
written back wrong and an Iceberg reader filtering on it would miss the file. For a partition spec
with a double field, manifests are therefore read with pyiceberg's pure-Python decoder (exact, and
slower); every other spec keeps the compiled one. Only the decoder differs from pyiceberg's own
`ManifestFile.fetch_manifest_entry`: the schema, types, enums and inheritance from the manifest
are the same (tests/compat/test_uniform.py checks a double partition through a merge and a rewrite).
"""

from __future__ import annotations

from typing import Any

from pyiceberg.avro.decoder import StreamingBinaryDecoder
from pyiceberg.avro.file import SYNC_SIZE, AvroFile, Block
from pyiceberg.avro.resolver import resolve_reader
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_ENTRY_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    _inherit_from_manifest,
)
from pyiceberg.types import DoubleType, IcebergType


def live_entries(
    io: FileIO, manifest: ManifestFile, partition_types: list[IcebergType]
) -> list[ManifestEntry]:
    """The entries of `manifest` that are not DELETED, as `fetch_manifest_entry` gives them (the
    exact decoder when a partition field, of `partition_types`, is a double)."""
    if not any(isinstance(t, DoubleType) for t in partition_types):
        return manifest.fetch_manifest_entry(io, discard_deleted=True)
    with _ExactAvroFile(
        io.new_input(manifest.manifest_path),
        MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION],
        read_types={-1: ManifestEntry, 2: DataFile},
        read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
    ) as reader:
        return [
            _inherit_from_manifest(entry, manifest)
            for entry in reader
            if entry.status != ManifestEntryStatus.DELETED
        ]


class _ExactAvroFile(AvroFile[Any]):
    """pyiceberg's AvroFile with its pure-Python decoder for the header and every block."""

    def __enter__(self) -> _ExactAvroFile:
        with self.input_file.open() as f:
            self.decoder = StreamingBinaryDecoder(f.read())
        self.header = self._read_header()
        self.schema = self.header.get_schema()
        if not self.read_schema:
            self.read_schema = self.schema
        self.reader = resolve_reader(self.schema, self.read_schema, self.read_types, self.read_enums)
        return self

    def _read_block(self) -> int:
        if self.block and self.decoder.read(SYNC_SIZE) != self.header.sync:
            raise ValueError("Avro sync marker mismatch")
        block_records = self.decoder.read_int()
        block_bytes = self.decoder.read_bytes()
        if codec := self.header.compression_codec():
            block_bytes = codec.decompress(block_bytes)
        self.block = Block(self.reader, block_records, StreamingBinaryDecoder(block_bytes))
        return block_records
