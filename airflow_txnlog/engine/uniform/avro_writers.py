"""pyiceberg's manifest and manifest-list writers, with what they derive from the schema made once.

Every commit of a UniForm table writes a manifest and a manifest list. pyiceberg's writers rebuild,
for every file, what depends only on the table's schema and partition spec: the manifest entry's
Iceberg schema, its Avro writer tree, the Avro schema JSON of the file header and the header's
`schema` / `partition-spec` texts. That is ~0.7 ms of a 10-entry manifest (~1 ms in all), as much as
the entries and the file write together, so here it is built once per (spec, schema) and reused.

And pyiceberg's manifest writer makes every entry its own Avro block (each compressed alone, each
followed by the sync marker); here entries are gathered into blocks of up to BLOCK_RECORDS, as
Avro's and Iceberg's Java writers do: a manifest of 10,000 entries is ~9x smaller (deflate sees
the entries together), written ~1.5x and read ~1.4x faster.

What is reused is immutable once built (a writer tree holds no state between records; header texts
are strings). The header is byte for byte pyiceberg's, and so is a file of one block; every file
decodes to pyiceberg's records (tests/engine/uniform/test_avro_writers.py compares both). Only
construction and blocking are replaced: the records, codecs and `ManifestFile` summaries are
pyiceberg's code.

The subclasses below override `ManifestWriter.new_writer` and `ManifestListWriter.__enter__`
and build `AvroOutputFile` without its `__init__` (which is where the writer tree is built): pyiceberg
0.12's structure, pinned in requirements; the tests fail if an upgrade changes it.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, TypeVar

from pyiceberg.avro.codecs import AVRO_CODEC_KEY, CODEC_MAPPING_ICEBERG_TO_AVRO
from pyiceberg.avro.file import _SCHEMA_KEY, MAGIC, META_SCHEMA, SYNC_SIZE, AvroFileHeader, AvroOutputFile
from pyiceberg.avro.resolver import construct_writer, resolve_writer
from pyiceberg.avro.writer import Writer
from pyiceberg.io import OutputFile
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_LIST_FILE_SCHEMAS,
    ManifestEntry,
    ManifestFile,
    ManifestListWriterV2,
    ManifestWriterV2,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.utils.schema_conversion import AvroSchemaConversion

D = TypeVar("D", bound=Record)

_HEADER_WRITER = construct_writer(META_SCHEMA)
BLOCK_RECORDS = 1_000


@dataclass(frozen=True)
class _Plan:
    """What one Avro file schema needs, built once: the record writer and the header's schema JSON."""

    file_schema: Schema
    schema_name: str
    writer: Writer
    schema_json: str


def _plan(file_schema: Schema, record_schema: Schema, schema_name: str) -> _Plan:
    return _Plan(
        file_schema,
        schema_name,
        resolve_writer(record_schema=record_schema, file_schema=file_schema),
        json.dumps(AvroSchemaConversion().iceberg_to_avro(file_schema, schema_name=schema_name)),
    )


class _PlannedOutput(AvroOutputFile[D], Generic[D]):
    """An `AvroOutputFile` from a `_Plan`: pyiceberg's, less the per-file construction."""

    def __init__(self, output_file: OutputFile, plan: _Plan, metadata: dict[str, str]) -> None:
        # (AvroOutputFile.__init__ is not called: it would build the writer tree again)
        self.output_file = output_file
        self.file_schema = plan.file_schema
        self.schema_name = plan.schema_name
        self.sync_bytes = os.urandom(SYNC_SIZE)
        self.writer = plan.writer
        self.metadata = metadata
        self._schema_json = plan.schema_json
        self._pending: list[D] = []

    def write_block(self, objects: list[D]) -> None:
        """Gathered into blocks of BLOCK_RECORDS (written when full and on exit)."""
        self._pending.extend(objects)
        if len(self._pending) >= BLOCK_RECORDS:
            self._flush()

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for start in range(0, len(pending), BLOCK_RECORDS):
            super().write_block(pending[start : start + BLOCK_RECORDS])

    def __exit__(
        self, exctype: type[BaseException] | None, excinst: BaseException | None, exctb: TracebackType | None
    ) -> None:
        if exctype is None:
            self._flush()
        super().__exit__(exctype, excinst, exctb)

    def _write_header(self) -> None:
        codec_name = self.metadata[AVRO_CODEC_KEY]
        codec_name = CODEC_MAPPING_ICEBERG_TO_AVRO.get(codec_name, codec_name)
        meta = {**self.metadata, _SCHEMA_KEY: self._schema_json, AVRO_CODEC_KEY: codec_name}
        _HEADER_WRITER.write(self.encoder, AvroFileHeader(MAGIC, meta, self.sync_bytes))


@dataclass(frozen=True)
class _ManifestPlan:
    """A manifest's `_Plan` and its header texts, for one (spec, schema)."""

    spec: PartitionSpec
    schema: Schema
    avro: _Plan
    header: dict[str, str]


# Per (spec, schema) object pair, kept with the objects themselves (so their ids are not reused):
# a table's syncs pass the same objects (engine.uniform.iceberg_schema keeps them).
_MANIFEST_PLANS: dict[tuple[int, int], _ManifestPlan] = {}
_LIST_PLAN: list[_Plan] = []
_KEEP = 8
_LOCK = threading.Lock()  # (syncs of several tables may run on threads of one process)


def _manifest_plan(spec: PartitionSpec, schema: Schema) -> _ManifestPlan:
    key = (id(spec), id(schema))
    found = _MANIFEST_PLANS.get(key)
    if found is not None and found.spec is spec and found.schema is schema:
        return found
    probe = ManifestWriterV2(spec, schema, _NO_OUTPUT, 0, "null")
    header = probe._meta  # (its codec is replaced per file, in place: the keys keep their order)
    avro = _plan(probe._with_partition(2), probe._with_partition(DEFAULT_READ_VERSION), "manifest_entry")
    plan = _ManifestPlan(spec, schema, avro, header)
    with _LOCK:
        if len(_MANIFEST_PLANS) >= _KEEP:
            _MANIFEST_PLANS.pop(next(iter(_MANIFEST_PLANS)), None)
        _MANIFEST_PLANS[key] = plan
    return plan


class ManifestWriter(ManifestWriterV2):
    """pyiceberg's v2 manifest writer, its per-schema parts made once (module docstring)."""

    def new_writer(self) -> AvroOutputFile[ManifestEntry]:
        plan = _manifest_plan(self._spec, self._schema)
        meta = {**plan.header, AVRO_CODEC_KEY: self._compression}  # (pyiceberg's `_meta`, kept texts)
        return _PlannedOutput[ManifestEntry](self._output_file, plan.avro, meta)


class ManifestListWriter(ManifestListWriterV2):
    """pyiceberg's v2 manifest-list writer, its schema's parts made once (module docstring)."""

    def __enter__(self) -> ManifestListWriter:
        if not _LIST_PLAN:
            file_schema, record_schema = (
                MANIFEST_LIST_FILE_SCHEMAS[2],
                MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION],
            )
            _LIST_PLAN.append(_plan(file_schema, record_schema, "manifest_file"))
        self._writer = _PlannedOutput[ManifestFile](self._output_file, _LIST_PLAN[0], self._meta)
        self._writer.__enter__()
        return self


class _NoOutput(OutputFile):
    """The output of the throwaway writer a plan is derived from (never opened)."""

    def __len__(self) -> int:
        return 0

    def exists(self) -> bool:
        return False

    def to_input_file(self) -> Any:
        raise NotImplementedError

    def create(self, overwrite: bool = False) -> Any:
        raise NotImplementedError


_NO_OUTPUT = _NoOutput("")
