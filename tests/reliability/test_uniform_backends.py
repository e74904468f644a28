"""UniForm on every storage backend (local, S3 via moto, Azure via Azurite, GCS via fake-gcs-server):
the Iceberg metadata a commit writes names exactly the Delta table's live files, by their full
locations on that store, and vacuum and log cleanup keep what it needs."""

from __future__ import annotations

from pyiceberg.table.metadata import TableMetadataV2

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.uniform import iceberg_sync
from airflow_txnlog.engine.uniform.iceberg_io import StorageIO
from airflow_txnlog.engine.uniform.layout import DELTA_VERSION
from tests.conftest import SCHEMA, rows
from tests.reliability.conftest import Backend

UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}


def _iceberg_files(t: Table) -> tuple[int, dict[str, int]]:
    """(the Delta version the newest metadata reflects, its live data files: location -> records),
    read with pyiceberg's manifest reader through the table's own storage."""
    found = iceberg_sync.current(t.storage)
    assert found is not None
    meta = found[1]
    assert isinstance(meta, TableMetadataV2) and meta.location == t.storage.root.rstrip("/")
    snap = meta.current_snapshot()
    assert snap is not None
    io = StorageIO(t.storage, t.storage.root)
    files = {
        e.data_file.file_path: e.data_file.record_count
        for m in snap.manifests(io)
        for e in m.fetch_manifest_entry(io, discard_deleted=True)
    }
    return int(meta.properties[DELTA_VERSION]), files


def _delta_files(t: Table) -> dict[str, int]:
    root = t.storage.root.rstrip("/")
    return {f"{root}/{a.path}": int(a.num_records or 0) for a in t.snapshot().files()}


def test_uniform_metadata_follows_the_table_on_every_backend(backend: Backend) -> None:
    t = Table.create(
        backend.new_uri("uniform"), schema=SCHEMA, partition_by=["part"], properties=UNIFORM,
        storage_options=backend.options,
    )  # fmt: skip
    for i in range(3):
        t.write(rows([i, i + 10], "a" if i % 2 else "b"))
    t.write(rows([100]), mode="overwrite")
    t.write(rows([101, 102], "c"))
    version, files = _iceberg_files(t)
    assert version == t.latest_version() and files == _delta_files(t) and sum(files.values()) == 3
    for location in files:  # every location is a real object of the table
        assert t.storage.exists(location[len(t.storage.root.rstrip("/")) + 1 :])
    t.set_properties({"delta.deletedFileRetentionDuration": "interval 0 hours"})
    vac = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert vac.deleted == 3 and not any(f.startswith("metadata/") for f in vac.files)
    t.cleanup_log(retention_hours=0, dry_run=False)
    fresh = Table.open(t.uri, storage_options=backend.options)
    fresh.write(rows([103], "c"))
    version, files = _iceberg_files(fresh)
    assert version == fresh.latest_version() and files == _delta_files(fresh)
    assert fresh.uniform_sync().mode == "none"
