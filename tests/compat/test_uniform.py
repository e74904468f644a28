"""UniForm: icebergCompatV2 tables whose Iceberg metadata pyiceberg and DuckDB read.

Every check compares three readers of the same table at the same Delta version: delta-rs (the Delta
log), pyiceberg's StaticTable and DuckDB's iceberg_scan (both on the Iceberg metadata only).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import glob
import json
import random
import shutil
import site
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake
from pyiceberg.table import StaticTable
from pyiceberg.types import DoubleType

from airflow_txnlog.engine import InvalidArgumentError, RestoreError, Table, UnsupportedFeatureError
from airflow_txnlog.engine.features import column_mapping
from airflow_txnlog.engine.log.actions import RemoveFile
from airflow_txnlog.engine.schema import schema_from_json
from airflow_txnlog.engine.storage import LocalStorage
from airflow_txnlog.engine.uniform import iceberg_sync, manifest_reads
from tests.cli_support import run, run_json

pytestmark = pytest.mark.compat

UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("region", pa.string()),
        ("day", pa.date32()),
        ("qty", pa.int16()),
        ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.list_(pa.int32()))),
        ("info", pa.struct([("a", pa.int32()), ("xs", pa.list_(pa.int64()))])),
        ("at", pa.timestamp("us", tz="UTC")),
    ]
)


def _rows(ids: range, region: str) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": list(ids),
            "region": [region] * n,
            "day": [dt.date(2026, 11, 1 + i % 3) for i in ids],
            "qty": [i % 7 for i in ids],
            "tags": [[f"t{i}"] if i % 2 else [] for i in ids],
            "attrs": [[("k", [i])] for i in ids],
            "info": [{"a": i, "xs": [i, i + 1]} for i in ids],
            "at": pa.array([i * 1_000_000 for i in ids], pa.timestamp("us", tz="UTC")),
        },
        schema=SCHEMA,
    )


def _normal(rows: list[dict[str, Any]]) -> list[str]:
    """Rows as comparable text (maps as sorted pairs, whatever form a reader gives them)."""
    out = []
    for r in rows:
        attrs = r["attrs"]
        pairs = sorted(attrs.items()) if isinstance(attrs, dict) else sorted(attrs or [])
        info = r["info"]
        out.append(
            repr(
                (
                    r["id"],
                    r["region"],
                    r["day"],
                    r["qty"],
                    list(r["tags"] or []),
                    pairs,
                    info,
                    r["at"].timestamp(),
                )
            )
        )
    return sorted(out)


def _delta_rows(path: Path, version: int) -> list[str]:
    t = pa.table(DeltaTable(str(path), version=version).scan().read_all())
    return _normal(t.select(SCHEMA.names).cast(SCHEMA).to_pylist())


def _iceberg_meta(path: Path) -> tuple[str, int]:
    hint = int((path / "metadata" / "version-hint.text").read_text())
    location = path / "metadata" / f"v{hint}.metadata.json"
    return str(location), int(json.loads(location.read_text())["properties"]["delta-version"])


def _pyiceberg_rows(path: Path) -> list[str]:
    location, _ = _iceberg_meta(path)
    t = StaticTable.from_metadata(location).scan().to_arrow()
    return _normal(t.select(SCHEMA.names).cast(SCHEMA).to_pylist())


def _duckdb() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    for name in ("avro", "iceberg"):  # the extension wheels (no download)
        found = [
            p
            for s in site.getsitepackages()
            for p in glob.glob(f"{s}/duckdb_extension_{name}/**/*.duckdb_extension", recursive=True)
        ]
        con.execute(f"LOAD '{found[0]}'")
    return con


def _duckdb_rows(path: Path) -> list[str]:
    location, _ = _iceberg_meta(path)
    t = _duckdb().execute(f"SELECT * FROM iceberg_scan('{location}')").fetch_arrow_table()
    return _normal(t.select(SCHEMA.names).cast(SCHEMA).to_pylist())


def _agree(path: Path) -> int:
    """All three readers give the same rows at the Delta version the Iceberg metadata reflects."""
    _, version = _iceberg_meta(path)
    want = _delta_rows(path, version)
    assert _pyiceberg_rows(path) == want
    assert _duckdb_rows(path) == want
    return len(want)


@contextlib.contextmanager
def _sync_failing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Commits made inside have their own Iceberg sync fail (the store is down): the metadata lags."""

    def failing(*_: object) -> None:
        raise OSError("the store is down")

    with monkeypatch.context() as m:
        m.setattr(iceberg_sync, "sync", failing)
        yield


def _uniform_table(path: Path) -> Table:
    return Table.create(str(path), schema=SCHEMA, partition_by=["region"], properties=UNIFORM)


def test_create_turns_on_icebergcompat_with_column_mapping_and_nested_ids(tmp_path: Path) -> None:
    t = _uniform_table(tmp_path / "t")
    snap = t.snapshot()
    assert {"columnMapping", "icebergCompatV2"} <= set(snap.protocol.writer_features or ())
    assert "columnMapping" in (snap.protocol.reader_features or ())
    conf = snap.metadata.configuration
    assert conf["delta.columnMapping.mode"] == "name"
    fields = {f["name"]: f["metadata"] for f in json.loads(snap.metadata.schema_string)["fields"]}
    attrs = fields["attrs"]
    physical = attrs["delta.columnMapping.physicalName"]
    nested = attrs["delta.columnMapping.nested.ids"]
    assert set(nested) == {f"{physical}.key", f"{physical}.value", f"{physical}.value.element"}
    ids = [m["delta.columnMapping.id"] for m in fields.values()] + [
        v for m in fields.values() for v in m["delta.columnMapping.nested.ids"].values()
    ]
    assert len(set(ids)) == len(ids)  # one id space
    assert int(conf["delta.columnMapping.maxColumnId"]) >= max(ids)
    t.write(_rows(range(4), "eu"))
    add = next(a for a in t.snapshot().files())
    assert add.tags == {"ICEBERG_COMPAT_VERSION": "2"}
    parquet = pq.ParquetFile(str(tmp_path / "t" / add.path)).schema_arrow
    region = fields["region"]["delta.columnMapping.physicalName"]
    assert region in parquet.names  # the partition column is in the file too
    element = parquet.field(physical).type.item_field.type.value_field
    assert element.metadata[b"PARQUET:field_id"] == str(nested[f"{physical}.value.element"]).encode()


def test_appends_overwrite_optimize_and_restore_read_alike_in_delta_rs_pyiceberg_and_duckdb(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t"
    t = _uniform_table(path)
    for i, region in enumerate(["eu", "us", "eu", "ap"]):
        t.write(_rows(range(i * 10, i * 10 + 10), region))
    assert _agree(path) == 40
    # (v1 is version 0's, written at create: an empty table Iceberg readers read as empty)
    versions = {int(p.name[1:].split(".")[0]): json.loads(p.read_text())["properties"]["delta-version"]
                for p in (path / "metadata").glob("v*.metadata.json")}  # fmt: skip
    assert versions == {1: "0", 2: "1", 3: "2", 4: "3", 5: "4"}
    t.write(_rows(range(100, 105), "us"), mode="overwrite")
    assert _agree(path) == 5
    t.write(_rows(range(200, 230), "eu"))
    t.write(_rows(range(300, 330), "eu"))
    before = t.latest_version()
    t.optimize()
    assert t.latest_version() == before + 1
    assert _agree(path) == 65
    t.restore(version=2)
    assert _agree(path) == 20
    assert t.uniform_sync().mode == "none"  # already at the latest version


def test_a_commit_adding_files_writes_only_their_entries(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _uniform_table(path)
    for i in range(3):
        t.write(_rows(range(i * 5, i * 5 + 5), f"r{i}"))
    location, _ = _iceberg_meta(path)
    before = StaticTable.from_metadata(location).current_snapshot()
    t.write(_rows(range(50, 52), "new"))
    location, _ = _iceberg_meta(path)
    after = StaticTable.from_metadata(location)
    snap = after.current_snapshot()
    assert snap is not None and before is not None and snap.parent_snapshot_id == before.snapshot_id
    manifests = snap.manifests(after.io)
    fresh = [m for m in manifests if m.added_snapshot_id == snap.snapshot_id]
    assert [(m.added_files_count, m.existing_files_count) for m in fresh] == [(1, 0)]
    assert snap.summary is not None and snap.summary.operation.value == "append"
    assert _agree(path) == 17


def test_vacuum_keeps_the_iceberg_metadata_and_the_files_its_live_snapshot_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    t = _uniform_table(path)
    t.write(_rows(range(10), "eu"))
    t.set_properties({"delta.deletedFileRetentionDuration": "interval 0 hours"})

    with _sync_failing(monkeypatch):
        t.write(_rows(range(20, 30), "eu"), mode="overwrite")
    assert _iceberg_meta(path)[1] == t.latest_version() - 1
    # a dry run commits nothing (a real vacuum's own commits would sync): neither the Iceberg
    # metadata nor the file the overwrite removed, which the lagging Iceberg snapshot still reads
    assert t.vacuum(retention_hours=0, enforce_retention=False).files == []
    assert _pyiceberg_rows(path) == _delta_rows(path, t.latest_version() - 1)
    assert t.uniform_sync().mode == "incremental"
    result = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert len(result.files) == 1 and not result.files[0].startswith("metadata/")
    assert _agree(path) == 10


@pytest.mark.parametrize(
    ("properties", "error", "words"),
    [
        (
            {"delta.universalFormat.enabledFormats": "iceberg"},
            InvalidArgumentError,
            "needs delta.enableIcebergCompatV2",
        ),
        ({**UNIFORM, "delta.columnMapping.mode": "none"}, InvalidArgumentError, "needs column mapping"),
        (
            {**UNIFORM, "delta.enableDeletionVectors": "true"},
            InvalidArgumentError,
            "delta.enableDeletionVectors",
        ),
        (
            {**UNIFORM, "delta.universalFormat.enabledFormats": "iceberg,hudi"},
            UnsupportedFeatureError,
            "'hudi'",
        ),
    ],
)
def test_a_uniform_table_that_cannot_be_honored_is_refused_before_anything_is_written(
    tmp_path: Path, properties: dict[str, str], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=properties)
    assert not (tmp_path / "t" / "_delta_log").exists() or not list(
        (tmp_path / "t" / "_delta_log").glob("*.json")
    )


def test_a_type_iceberg_cannot_read_is_refused(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("t", pa.time64("us"))])
    with pytest.raises((UnsupportedFeatureError, InvalidArgumentError)):
        Table.create(str(tmp_path / "t"), schema=schema, properties=UNIFORM)
    assert not list((tmp_path / "t").glob("_delta_log/*.json"))


def _databricks_log(path: Path, table_id: str = "5f3e6a1c-0d2b-4c8e-9a7f-3b1d2e4f5a6b") -> None:
    """Version 0 as Databricks writes a UniForm table (PROTOCOL.md's shape, built by hand): protocol
    (2, 7) with columnMapping and icebergCompatV2, physical names, ids and nested ids."""

    def meta(fid: int, phys: str, nested: dict[str, int] | None = None) -> dict[str, Any]:
        m: dict[str, Any] = {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": phys}
        m["delta.columnMapping.nested.ids"] = nested or {}
        return m

    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": meta(1, "col-1a")},
            {"name": "region", "type": "string", "nullable": True, "metadata": meta(2, "col-2b")},
            {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
             "nullable": True, "metadata": meta(3, "col-3c", {"col-3c.element": 4})},
        ],
    }  # fmt: skip
    conf = {
        **UNIFORM,
        "delta.columnMapping.mode": "name",
        "delta.columnMapping.maxColumnId": "4",
        "delta.universalFormat.iceberg.atomicConversion.supported": "false",
    }
    protocol = {
        "minReaderVersion": 2,
        "minWriterVersion": 7,
        "writerFeatures": ["columnMapping", "icebergCompatV2"],
    }
    metadata = {
        "id": table_id,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema),
        "partitionColumns": ["region"],
        "configuration": conf,
        "createdTime": 1764460800000,
    }
    actions = [
        {"commitInfo": {"timestamp": 1764460800000, "operation": "CREATE TABLE", "operationParameters": {}}},
        {"protocol": protocol},
        {"metaData": metadata},
    ]  # fmt: skip
    (path / "_delta_log").mkdir(parents=True)
    (path / "_delta_log" / "00000000000000000000.json").write_bytes(
        b"\n".join(orjson.dumps(a) for a in actions)
    )


def test_a_databricks_style_uniform_table_is_written_and_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / "dbx"
    _databricks_log(path)
    t = Table.open(str(path))
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("tags", pa.list_(pa.string()))])
    t.write(
        pa.table({"id": [1, 2, 3], "region": ["eu", "us", "eu"], "tags": [["a"], [], None]}, schema=schema)
    )
    t.write(pa.table({"id": [4], "region": ["ap"], "tags": [["b", "c"]]}, schema=schema))
    add = next(a for a in t.snapshot().files() if a.partition_values["col-2b"] == "ap")
    file_schema = pq.ParquetFile(str(path / add.path)).schema_arrow
    assert file_schema.field("col-3c").type.value_field.metadata[b"PARQUET:field_id"] == b"4"
    location, version = _iceberg_meta(path)
    assert version == 2
    want = sorted(
        map(
            repr,
            pa.table(DeltaTable(str(path)).scan().read_all()).select(["id", "region", "tags"]).to_pylist(),
        )
    )
    got = StaticTable.from_metadata(location).scan().to_arrow().select(["id", "region", "tags"]).to_pylist()
    assert sorted(map(repr, got)) == want
    duck = _duckdb().execute(f"SELECT id, region, tags FROM iceberg_scan('{location}')").fetch_arrow_table()
    assert sorted(map(repr, duck.to_pylist())) == want


def test_a_table_whose_delta_id_is_not_a_uuid_syncs_from_the_metadata_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "named"
    _databricks_log(path, table_id="sales-orders")  # (any string is a valid Delta id)
    t = Table.open(str(path))
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("tags", pa.list_(pa.string()))])
    t.write(pa.table({"id": [1], "region": ["eu"], "tags": [["a"]]}, schema=schema))
    read: list[str] = []
    original = LocalStorage.read
    monkeypatch.setattr(LocalStorage, "read", lambda self, key: read.append(key) or original(self, key))
    t.write(pa.table({"id": [2], "region": ["us"], "tags": [[]]}, schema=schema))
    assert not [k for k in read if k.startswith("metadata/")]  # (the process kept what it wrote)
    location, version = _iceberg_meta(path)
    assert version == 2
    got = StaticTable.from_metadata(location).scan().to_arrow().column("id").to_pylist()
    assert sorted(got) == [1, 2]


def _physical(t: Table, column: str) -> str:
    return column_mapping.physical_name(schema_from_json(t.snapshot().metadata.schema_string).field(column))


def _manifests_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Iceberg manifests (not manifest lists) read from storage from now on."""
    read: list[str] = []
    original = LocalStorage.read

    def recorded(self: LocalStorage, key: str) -> bytes:
        if key.startswith("metadata/") and key.endswith(".avro") and "/snap-" not in key:
            read.append(key)
        return original(self, key)

    monkeypatch.setattr(LocalStorage, "read", recorded)
    return read


def test_a_delete_reads_only_the_manifests_whose_partitions_may_list_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    t = _uniform_table(path)
    for k, region in enumerate(["eu", "us", "ap"]):  # (one manifest each: one region each)
        t.write(_rows(range(k * 10, k * 10 + 10), region))
    iceberg_sync._LAST.clear()  # (a fresh process: the manifest list is read, the manifests are not)
    read = _manifests_read(monkeypatch)
    victim = next(a for a in t.snapshot().files() if a.partition_values[_physical(t, "region")] == "us")
    txn = t.transaction("DELETE")
    txn.remove(victim)  # (its remove carries the partition values, as every writer's does)
    txn.commit()
    assert len(read) == 1  # the "us" manifest, rewritten with the file DELETED
    assert _agree(path) == 20
    # A remove without partition values (optional in Delta): every manifest that may list it is read.
    read.clear()
    iceberg_sync._LAST.clear()
    other = next(a for a in t.snapshot().files() if a.partition_values[_physical(t, "region")] == "eu")
    txn = t.transaction("DELETE")
    txn.remove(RemoveFile(other.path, int(dt.datetime.now().timestamp() * 1000), data_change=True))
    txn.commit()
    assert len(read) == 3
    assert _agree(path) == 10


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pruned_deletes_leave_iceberg_live_files_equal_to_deltas(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "t"
    t = _uniform_table(path)
    regions = ["eu", "us", "ap", "sa"]
    for step in range(24):
        files = t.snapshot().files()
        if files and rng.random() < 0.4:
            txn = t.transaction("DELETE")
            for victim in rng.sample(files, min(len(files), rng.randint(1, 3))):
                txn.remove(victim)
            txn.commit()
        else:
            t.write(_rows(range(step * 100, step * 100 + rng.randint(1, 5)), rng.choice(regions)))
        assert _iceberg_meta(path)[1] == t.snapshot().version
        assert _iceberg_live(path) == _delta_live(t, path)
    _agree(path)


def _iceberg_live(path: Path) -> set[str]:
    """The data files the newest Iceberg snapshot reads (pyiceberg's scan planning)."""
    location, _ = _iceberg_meta(path)
    return {task.file.file_path for task in StaticTable.from_metadata(location).scan().plan_files()}


def _delta_live(t: Table, path: Path) -> set[str]:
    return {str(path / a.path) for a in t.snapshot().files()}


def test_double_partition_values_survive_merges_and_rewrites_and_deletes_find_them(tmp_path: Path) -> None:
    # (pyiceberg 0.12's compiled decoder reads doubles at float32 precision: a manifest read back and
    # written again, merged or rewritten, would store 0.1 as 0.10000000149 and 1e300 as inf)
    path = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("g", pa.float64())])
    t = Table.create(str(path), schema=schema, partition_by=["g"], properties=UNIFORM)
    for i in range(12):  # (ten one-file manifests merge into one)
        t.write(pa.table({"id": [i], "g": [0.1 if i % 2 else 1e300]}, schema=schema))
    oldest = min(t.snapshot().files(), key=lambda a: a.modification_time)
    txn = t.transaction("DELETE")
    txn.remove(oldest)  # (rewrites the merged manifest)
    txn.commit()
    assert _iceberg_live(path) == _delta_live(t, path)
    location, _ = _iceberg_meta(path)
    table = StaticTable.from_metadata(location)
    stored = sorted(
        e.data_file.partition[0]
        for m in table.current_snapshot().manifests(table.io)  # type: ignore[union-attr]
        for e in manifest_reads.live_entries(table.io, m, [DoubleType()])
    )
    assert stored == [0.1] * 6 + [1e300] * 5  # (pyiceberg's own reader would say 0.10000000149, inf)
    con = _duckdb()  # (DuckDB reads the manifests exactly, and prunes files by these values)
    assert con.execute(f"SELECT count(*) FROM iceberg_scan('{location}') WHERE g = 0.1").fetchone() == (6,)
    assert con.execute(f"SELECT count(*) FROM iceberg_scan('{location}') WHERE g = 1e300").fetchone() == (5,)


def test_a_float_partition_written_as_another_writer_writes_it_is_deleted_for_iceberg_too(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("f", pa.float32())])
    t = Table.create(str(path), schema=schema, partition_by=["f"], properties=UNIFORM)
    t.write(pa.table({"id": [1], "f": pa.array([0.1], pa.float32())}, schema=schema))
    ours = t.snapshot().files()[0]
    column = next(iter(ours.partition_values))
    spark_like = dataclasses.replace(  # (Spark writes Float.toString: "0.1", we write the double's text)
        ours,
        path=ours.path.replace(".parquet", "-spark.parquet"),
        partition_values={column: "0.1"},
        encoded_path=None,
    )
    shutil.copy(path / ours.path, path / spark_like.path)
    txn = t.transaction("WRITE")
    txn.add(spark_like)
    txn.rows_checked()
    txn.commit()
    iceberg_sync._LAST.clear()
    txn = t.transaction("DELETE")
    txn.remove(next(a for a in t.snapshot().files() if a.partition_values[column] == "0.1"))
    txn.commit()
    assert _iceberg_live(path) == _delta_live(t, path)


def test_turning_uniform_on_for_a_table_with_files_rewrites_them_first(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = Table.create(
        str(path), schema=SCHEMA, partition_by=["region"], properties={"delta.enableDeletionVectors": "true"}
    )
    t.write(_rows(range(0, 10), "eu"))
    t.write(_rows(range(10, 20), "us"))
    before = t.latest_version()
    version = t.set_properties(UNIFORM)
    snap = t.snapshot()
    conf = snap.metadata.configuration
    assert conf["delta.columnMapping.mode"] == "name" and conf["delta.enableDeletionVectors"] == "false"
    assert {"columnMapping", "icebergCompatV2"} <= set(snap.protocol.writer_features or ())
    ops = [h["operation"] for h in t.history()[: version - before]]
    assert ops == ["SET TBLPROPERTIES", "OPTIMIZE", "SET TBLPROPERTIES"]  # compat on, rewrite, UniForm on
    assert all(f.tags == {"ICEBERG_COMPAT_VERSION": "2"} for f in snap.files())
    region = json.loads(snap.metadata.schema_string)["fields"][1]["metadata"][
        "delta.columnMapping.physicalName"
    ]
    assert all(region in pq.read_schema(str(path / f.path)).names for f in snap.files())
    assert _agree(path) == 20
    t.write(_rows(range(20, 25), "ap"))
    assert _agree(path) == 25


def test_small_manifests_are_merged_in_tiers_and_the_readers_still_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(iceberg_sync, "MERGE_FANOUT", 3)
    path = tmp_path / "t"
    t = _uniform_table(path)
    counts = []
    for i in range(12):
        t.write(_rows(range(i * 3, i * 3 + 3), "eu" if i % 2 else "us"))
        location, _ = _iceberg_meta(path)
        table = StaticTable.from_metadata(location)
        snap = table.current_snapshot()
        assert snap is not None
        counts.append(len(snap.manifests(table.io)))
    # 1-file manifests merge 3 at a time into 3-file ones, three of those into a 9-file one
    assert max(counts) <= 2 * (3 - 1) + 1 and counts[-1] < 12
    assert _agree(path) == 36


def test_log_cleanup_deletes_the_iceberg_files_no_kept_snapshot_needs(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _uniform_table(path)
    for i in range(iceberg_sync.MAX_SNAPSHOTS + 5):
        t.write(_rows(range(i, i + 1), "eu"))
    before = {p.name for p in (path / "metadata").iterdir()}
    listed = t.cleanup_log(retention_hours=0, dry_run=True).iceberg_files
    assert listed and set(listed) <= before
    assert f"v{len(list((path / 'metadata').glob('v*.metadata.json')))}.metadata.json" not in listed
    done = t.cleanup_log(retention_hours=0, dry_run=False)
    assert sorted(done.iceberg_files) == sorted(listed)
    assert {p.name for p in (path / "metadata").iterdir()} == before - set(listed)
    location, _ = _iceberg_meta(path)
    table = StaticTable.from_metadata(location)
    assert len(table.metadata.snapshots) == iceberg_sync.MAX_SNAPSHOTS
    for snap in table.metadata.snapshots:  # every kept snapshot still reads whole
        assert sum(1 for _ in table.scan(snapshot_id=snap.snapshot_id).plan_files()) > 0
    for entry in table.metadata.metadata_log:  # and every metadata file of the log
        older = StaticTable.from_metadata(entry.metadata_file)
        assert sum(1 for _ in older.scan().plan_files()) > 0
    assert _agree(path) == iceberg_sync.MAX_SNAPSHOTS + 5


def test_dropping_icebergcompatv2_turns_uniform_off_and_lets_delta_rs_write(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = Table.create(
        str(path), schema=pa.schema([("id", pa.int64()), ("region", pa.string())]), properties=UNIFORM
    )
    t.write(pa.table({"id": [1, 2], "region": ["eu", "us"]}))
    with pytest.raises(Exception, match=r"(?i)icebergCompatV2"):  # delta-rs 1.6 does not write it
        write_deltalake(str(path), pa.table({"id": [3], "region": ["ap"]}), mode="append")
    result = t.drop_feature("icebergCompatV2")
    snap = t.snapshot()
    assert "icebergCompatV2" not in (snap.protocol.writer_features or ())
    assert "columnMapping" in (snap.protocol.writer_features or ())  # (column mapping stays)
    conf = snap.metadata.configuration
    assert "delta.enableIcebergCompatV2" not in conf and "delta.universalFormat.enabledFormats" not in conf
    assert result.protected_before is None  # a writer feature: no history to protect
    write_deltalake(str(path), pa.table({"id": [3], "region": ["ap"]}), mode="append")
    assert sorted(pa.table(DeltaTable(str(path)).scan().read_all()).column("id").to_pylist()) == [1, 2, 3]
    t.write(pa.table({"id": [4], "region": ["eu"]}))  # and the engine writes it as a plain mapped table
    assert sorted(pa.table(DeltaTable(str(path)).scan().read_all()).column("id").to_pylist()) == [1, 2, 3, 4]


def test_the_cli_syncs_a_lagging_uniform_table_and_refuses_a_plain_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    t = _uniform_table(path)
    with _sync_failing(monkeypatch):
        t.write(_rows(range(5), "eu"))
    assert _iceberg_meta(path)[1] == 0
    done = run_json("uniform-sync", str(path))
    assert done["mode"] == "incremental" and done["delta_version"] == 1 and done["files_added"] == 1
    assert _agree(path) == 5
    again = run("uniform-sync", str(path))
    assert again.exit_code == 0 and "already reflects version 1" in again.stdout
    Table.create(str(tmp_path / "plain"), schema=SCHEMA)
    refused = run("uniform-sync", str(tmp_path / "plain"))
    assert refused.exit_code == 1 and "not UniForm" in refused.stderr and "Traceback" not in refused.stderr


def test_a_new_table_reads_empty_and_files_added_again_are_not_doubled(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _uniform_table(path)
    assert _agree(path) == 0  # version 0's metadata, written at create
    t.write(_rows(range(3), "eu"))
    t.set_properties({"delta.enableRowTracking": "true"})  # re-adds every live file (row ids)
    assert _agree(path) == 3


def test_metadata_deleted_or_left_by_another_table_is_started_over(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _uniform_table(path)
    t.write(_rows(range(3), "eu"))
    shutil.rmtree(path / "metadata")  # deleted by hand: the next commit converts everything
    t.write(_rows(range(3, 5), "us"))
    assert _agree(path) == 5
    shutil.rmtree(path / "_delta_log")  # another table at the same place, older metadata left behind
    t2 = _uniform_table(path)
    t2.write(_rows(range(100, 102), "eu"))
    assert _agree(path) == 2
    assert json.loads(Path(_iceberg_meta(path)[0]).read_text())["table-uuid"] == t2.snapshot().metadata.id


def test_a_restore_that_would_turn_uniform_off_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = Table.create(str(path), schema=SCHEMA, partition_by=["region"])
    t.write(_rows(range(3), "eu"))
    t.set_properties(UNIFORM)
    t.write(_rows(range(3, 5), "eu"))
    before = t.latest_version()
    with pytest.raises(RestoreError, match="no UniForm"):
        t.restore(version=1)
    assert t.latest_version() == before and _agree(path) == 5


def test_the_planner_schedules_a_sync_when_the_iceberg_metadata_lags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    t = _uniform_table(path)
    t.write(_rows(range(3), "eu"))
    plan = t.plan_maintenance()
    assert [a.kind for a in plan.actions if a.kind == "uniform_sync"] == []
    assert [s.reason for s in plan.skipped if s.kind == "uniform_sync"] == [
        "the Iceberg metadata reflects the latest version"
    ]
    with _sync_failing(monkeypatch):
        t.write(_rows(range(3, 6), "us"))
    (action,) = [a for a in t.plan_maintenance().actions if a.kind == "uniform_sync"]
    assert action.observed == 1 and action.estimate == {"delta_version": 2, "reflected_version": 1}
    assert t.run_maintenance(action) == {"kind": "uniform_sync", "dry_run": True}  # (dry run: nothing)
    assert _iceberg_meta(path)[1] == 1
    done = t.run_maintenance(action, dry_run=False)
    assert done["mode"] == "incremental" and done["delta_version"] == 2
    assert _agree(path) == 6
    assert not [a for a in t.plan_maintenance().actions if a.kind == "uniform_sync"]
    plain = Table.create(str(tmp_path / "plain"), schema=SCHEMA)
    assert not [
        d
        for d in [*plain.plan_maintenance().actions, *plain.plan_maintenance().skipped]
        if d.kind == "uniform_sync"
    ]
