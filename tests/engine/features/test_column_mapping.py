"""Column mapping on read (engine.features.column_mapping): Spark-written reference tables in modes name and
id, checkpoints of such tables, the id-mode rule (match by parquet field id, not name), and our appends to
them (physical names and field ids, read back by delta-rs).

Expected rows: Delta's DeltaTableReadsSuite answers (tests/compat/test_golden.py); the physical
names are read from the tables' own schemaString, never assumed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.features.column_mapping import Names, physical_name
from tests.deltars import deltars_rows

GOLDEN = Path(__file__).parents[2] / "compat" / "golden"
STATS = "data-skipping-basic-stats-all-types-columnmapping-{}"


def _copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(GOLDEN / name, root, ignore=shutil.ignore_patterns("*.crc"))
    return root


@pytest.mark.parametrize("mode", ["name", "id"])
def test_checkpoint_of_a_mapped_table_uses_physical_names(tmp_path: Path, mode: str) -> None:
    root = _copy(tmp_path, STATS.format(mode))
    t = Table.open(str(root))
    before = t.snapshot().to_arrow().to_pylist()
    t.checkpoint()
    (cp,) = root.glob("_delta_log/*.checkpoint.parquet")
    add = pq.read_table(cp).column("add").combine_chunks()
    parsed = add.type.field("stats_parsed").type
    phys = physical_name(t.snapshot().schema.field("as_int"))
    assert phys != "as_int" and phys in {f.name for f in parsed.field("minValues").type}
    fresh = Table.open(str(root)).snapshot()
    assert fresh.checkpoint_version == 0
    assert fresh.to_arrow().to_pylist() == before
    assert len(fresh.files(filter="as_int = 0")) == 1 and fresh.files(filter="as_int > 0") == []


def test_id_mode_matches_file_columns_by_field_id(tmp_path: Path) -> None:
    """Rename a file's columns (keeping their parquet field ids): id mode still finds them."""
    root = _copy(tmp_path, STATS.format("id"))
    snap = Table.open(str(root)).snapshot()
    (f,) = snap.files()
    path = root / f.path
    table = pq.read_table(path)
    ids = [fld.metadata[b"PARQUET:field_id"] for fld in table.schema]
    assert all(ids)  # Spark wrote field ids
    renamed = pa.schema(
        [pa.field(f"renamed_{i}", fld.type, fld.nullable, fld.metadata) for i, fld in enumerate(table.schema)]
    )
    pq.write_table(pa.Table.from_arrays(table.columns, schema=renamed), path)
    got = Table.open(str(root)).snapshot().to_arrow()
    assert got.column("as_int").to_pylist() == [0] and got.column("as_string").to_pylist() == ["0"]


def test_names_resolve_nested_physical_names() -> None:
    snap = Table.open(str(GOLDEN / "table-with-columnmapping-mode-name")).snapshot()
    names = Names.of(snap.metadata)
    assert names is not None and not names.by_id
    schema_json = json.loads(snap.metadata.schema_string)
    nested = next(f for f in schema_json["fields"] if f["name"] == "nested_struct")
    want = nested["type"]["fields"][0]["metadata"]["delta.columnMapping.physicalName"]
    assert names.field("nested_struct").type.field(0).name == want
    assert snap.to_arrow(columns=["nested_struct"]).column(0).to_pylist()[0] == {"aa": "0", "ac": {"aca": 0}}


@pytest.mark.parametrize("mode", ["name", "id"])
def test_append_to_a_spark_written_mapped_table(tmp_path: Path, mode: str) -> None:
    """Our files in a table Delta on Spark created: its physical names and field ids, read back by
    us (in `id` mode by field id) and by delta-rs."""
    root = _copy(tmp_path, STATS.format(mode))
    t = Table.open(str(root))
    before = t.snapshot().to_arrow()
    theirs = {f.path for f in t.snapshot().files()}
    t.write(before, mode="append")
    snap = t.snapshot()
    assert snap.to_arrow().to_pylist() == before.to_pylist() * 2
    names = Names.of(snap.metadata)
    assert names is not None
    (new,) = [f for f in snap.files() if f.path not in theirs]
    file_schema = pq.read_schema(root / new.path)
    assert file_schema.names == names.physical.names
    ids = [int(f.metadata[b"PARQUET:field_id"]) for f in file_schema]
    assert ids == [json.loads(f.metadata[b"delta.columnMapping.id"]) for f in snap.schema]
    assert set(json.loads(new.stats or "{}")["minValues"]) <= set(names.physical.names)
    assert deltars_rows(root) == sorted(before.to_pylist() * 2, key=repr)
