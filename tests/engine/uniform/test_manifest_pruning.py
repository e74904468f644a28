"""Pruning manifests by their partition summaries never skips one that lists the file."""

from __future__ import annotations

import decimal
import itertools

import pyarrow as pa
from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus, ManifestFile

from airflow_txnlog.engine.features import column_mapping
from airflow_txnlog.engine.log.actions import AddFile
from airflow_txnlog.engine.uniform import iceberg_schema
from airflow_txnlog.engine.uniform.avro_writers import ManifestWriter
from airflow_txnlog.engine.uniform.manifest_pruning import may_list
from tests.engine.uniform.test_avro_writers import _Memory

COLUMNS = [
    ("day", pa.date32()),
    ("n", pa.int32()),
    ("amount", pa.decimal128(10, 2)),
    ("at", pa.timestamp("us")),
]
LOGICAL = pa.schema(
    [
        pa.field(
            name, t, metadata={column_mapping.FIELD_ID: str(i + 1), column_mapping.PHYSICAL_NAME: f'"c{i}"'}
        )
        for i, (name, t) in enumerate(COLUMNS)
    ]
)
PARTS = tuple(name for name, _ in COLUMNS)
ENTRIES = iceberg_schema.FileEntries("/t", LOGICAL, PARTS)
SPEC = iceberg_schema.partition_spec(LOGICAL, PARTS)
SCHEMA = iceberg_schema.schema(LOGICAL, 0)
TYPES = [f.field_type for f in SPEC.partition_type(SCHEMA).fields]


def _values(day: str | None, n: str | None, amount: str | None, at: str | None) -> dict[str, str | None]:
    return {"c0": day, "c1": n, "c2": amount, "c3": at}


def _manifest(files: list[dict[str, str | None]]) -> ManifestFile:
    out = _Memory()
    with ManifestWriter(SPEC, SCHEMA, out, 1, "null") as w:  # type: ignore[arg-type]
        for i, values in enumerate(files):
            add = AddFile(f"f{i}.parquet", values, 10, 1, stats='{"numRecords": 1}')
            w.add(
                ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED, snapshot_id=1, data_file=ENTRIES.data_file(add)
                )
            )
    return w.to_manifest_file()


DAYS = ["2026-01-01", "2026-01-05", None]
NS = ["-3", "7", None]
AMOUNTS = ["1.50", "99.99", None]
ATS = ["2026-01-01 00:00:00", "2026-03-01 12:30:00.000001", None]


def test_a_manifest_may_list_every_partition_it_holds_and_none_outside_its_bounds() -> None:
    held = [
        _values(*combo) for combo in itertools.islice(itertools.product(DAYS, NS, AMOUNTS, ATS), 0, None, 5)
    ]
    manifest = _manifest(held)
    for values in held:
        assert may_list(manifest, TYPES, [ENTRIES.partition(values)])
    for outside in [
        _values("2025-12-31", "7", "1.50", "2026-01-01 00:00:00"),
        _values("2026-01-01", "8", "1.50", "2026-01-01 00:00:00"),
        _values("2026-01-01", "7", "100.00", "2026-01-01 00:00:00"),
        _values("2026-01-01", "7", "1.50", "2026-03-01 12:30:00.000002"),
    ]:
        assert not may_list(manifest, TYPES, [ENTRIES.partition(outside)])
    assert may_list(manifest, TYPES, [None])  # (a remove without partition values: unknown)


def test_a_null_partition_value_prunes_only_manifests_without_nulls() -> None:
    no_nulls = _manifest([_values("2026-01-01", "1", "1.00", "2026-01-01 00:00:00")])
    with_null = _manifest([_values(None, "1", "1.00", "2026-01-01 00:00:00")])
    null_day = ENTRIES.partition(_values(None, "1", "1.00", "2026-01-01 00:00:00"))
    assert not may_list(no_nulls, TYPES, [null_day])
    assert may_list(with_null, TYPES, [null_day])
    assert isinstance(null_day[2], decimal.Decimal) and null_day[0] is None
    assert not may_list(
        with_null, TYPES, [ENTRIES.partition(_values("2026-01-02", "1", "1.00", "2026-01-01 00:00:00"))]
    )


def test_an_unpartitioned_table_reads_every_manifest() -> None:
    spec = iceberg_schema.partition_spec(LOGICAL, ())
    out = _Memory()
    with ManifestWriter(spec, SCHEMA, out, 1, "null") as w:  # type: ignore[arg-type]
        add = AddFile("f.parquet", {}, 10, 1, stats='{"numRecords": 1}')
        entries = iceberg_schema.FileEntries("/t", LOGICAL, ())
        w.add(
            ManifestEntry.from_args(
                status=ManifestEntryStatus.ADDED, snapshot_id=1, data_file=entries.data_file(add)
            )
        )
    assert may_list(w.to_manifest_file(), [], [()])


def test_float_and_double_partition_values_never_prune() -> None:
    # (a float32 bound holds stored bits; "0.1" from another writer parses to a double outside it)
    manifest = _manifest([_values("2026-01-01", "1", "1.00", "2026-01-01 00:00:00")])
    assert may_list(manifest, TYPES, [(0.1, 1, decimal.Decimal("1.00"), 1767225600000000)])
