"""Tables created with column mapping (`delta.columnMapping.mode` = name / id) and written by the
engine, read back by us and by delta-rs.

What Delta's CREATE does, and so what we check: every field, nested ones too, gets an id (a parent
before its children) and a physical name `col-<uuid>`; `maxColumnId` is the highest id; the
protocol is (2, 5) on its own, or lists `columnMapping` when table features are needed anyway. Data
files hold the physical names with the ids as parquet field ids; `partitionValues`, the folders and
the stats use the physical names. Expected rows are the rows written (nothing derived from our
reader), and delta-rs must read the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.engine.features.column_mapping import FIELD_ID, PHYSICAL_NAME
from tests.deltars import deltars_rows

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ("l", pa.list_(pa.struct([("z", pa.int32())]))),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("p", pa.string()),
    ]
)
ROWS = [
    {"id": 1, "s": {"x": 1, "y": "a"}, "l": [{"z": 1}], "m": [("k", 1)], "p": "a"},
    {"id": 2, "s": None, "l": [], "m": None, "p": "b"},
    {"id": 3, "s": {"x": 3, "y": None}, "l": None, "m": [], "p": None},
]


def _meta(f: pa.Field, key: str) -> object:
    return json.loads((f.metadata or {})[key.encode()])


def _ids_in_order(fields: list[pa.Field]) -> list[int]:
    """Field ids depth first, a parent before its children (struct fields, also in lists)."""
    out: list[int] = []
    for f in fields:
        out.append(int(_meta(f, FIELD_ID)))  # type: ignore[call-overload]
        t = f.type
        t = t.value_type if pa.types.is_list(t) else t
        if pa.types.is_struct(t):
            out += _ids_in_order(list(t))
    return out


def _create(root: Path, mode: str, **props: str) -> Table:
    return Table.create(
        str(root), schema=SCHEMA, partition_by=["p"], properties={"delta.columnMapping.mode": mode, **props}
    )


@pytest.mark.parametrize("mode", ["name", "id"])
def test_create_assigns_ids_and_physical_names(tmp_path: Path, mode: str) -> None:
    snap = _create(tmp_path / "t", mode).snapshot()
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (2, 5)
    fields = list(snap.schema)
    assert _ids_in_order(fields) == list(range(1, 9))
    assert snap.metadata.configuration["delta.columnMapping.maxColumnId"] == "8"
    names = [str(_meta(f, PHYSICAL_NAME)) for f in fields]
    assert all(n.startswith("col-") for n in names) and len(set(names)) == len(names)
    assert snap.partition_columns == ["p"] and snap.schema.names == SCHEMA.names
    theirs = pytest.importorskip("deltalake").DeltaTable(str(tmp_path / "t"))
    assert theirs.protocol().min_reader_version == 2


@pytest.mark.parametrize("mode", ["name", "id"])
def test_write_then_read_with_ours_and_deltars(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "t"
    t = _create(root, mode)
    t.write(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    t.write(pa.Table.from_pylist([{**ROWS[0], "id": 4, "p": "b"}], schema=SCHEMA))
    want = sorted([*ROWS, {**ROWS[0], "id": 4, "p": "b"}], key=repr)
    assert sorted(t.snapshot().to_arrow().to_pylist(), key=repr) == want
    assert deltars_rows(root) == want
    assert deltars_rows(root, where="id > 3") == [{**ROWS[0], "id": 4, "p": "b"}]
    t.checkpoint()
    assert sorted(Table.open(str(root)).snapshot().to_arrow().to_pylist(), key=repr) == want
    assert deltars_rows(root) == want


@pytest.mark.parametrize("mode", ["name", "id"])
def test_files_use_physical_names_and_field_ids(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "t"
    t = _create(root, mode)
    t.write(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    snap = t.snapshot()
    phys = {f.name: str(_meta(f, PHYSICAL_NAME)) for f in snap.schema}
    add = next(f for f in snap.files() if f.partition_values == {phys["p"]: "a"})
    assert add.path.startswith(f"{phys['p']}=a/")
    file_schema = pq.read_schema(root / add.path)
    assert file_schema.names == [phys[c] for c in ("id", "s", "l", "m")]
    table_ids = _ids_in_order([snap.schema.field(c) for c in ("id", "s", "l", "m")])
    file_ids = [int(f.metadata[b"PARQUET:field_id"]) for f in file_schema]
    s_file = file_schema.field(phys["s"]).type
    file_ids[2:2] = [int(s_file.field(i).metadata[b"PARQUET:field_id"]) for i in range(2)]
    z_file = file_schema.field(phys["l"]).type.value_type.field(0)
    file_ids.insert(5, int(z_file.metadata[b"PARQUET:field_id"]))
    assert file_ids == table_ids
    stats = json.loads(add.stats or "")
    x_phys = str(_meta(snap.schema.field("s").type.field(0), PHYSICAL_NAME))
    assert set(stats["minValues"]) == {phys["id"], phys["s"]}
    assert stats["minValues"][phys["id"]] == 1 and stats["minValues"][phys["s"]][x_phys] == 1
    assert [f.path for f in snap.files(filter="id > 2")] == [
        f.path for f in snap.files() if f.partition_values[phys["p"]] is None
    ]


def test_stats_columns_are_named_logically(tmp_path: Path) -> None:
    """`delta.dataSkippingStatsColumns` names logical columns; the stats carry the physical ones."""
    t = _create(tmp_path / "t", "name", **{"delta.dataSkippingStatsColumns": "s.x"})
    t.write(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    snap = t.snapshot()
    s_field = snap.schema.field("s")
    x_phys = str(_meta(s_field.type.field(0), PHYSICAL_NAME))
    s_phys = str(_meta(s_field, PHYSICAL_NAME))
    stats = [json.loads(add.stats or "") for add in snap.files()]
    # (each file's nullCount and bounds name s.x only)
    assert sorted(st["nullCount"][s_phys][x_phys] for st in stats) == [0, 0, 1]  # only s.x, physically
    assert all(
        st["nullCount"].keys() == {s_phys} and st["nullCount"][s_phys].keys() == {x_phys} for st in stats
    )
    assert sorted(st["maxValues"][s_phys][x_phys] for st in stats if st["maxValues"]) == [1, 3]


def test_mapping_with_other_features_lists_it(tmp_path: Path) -> None:
    t = _create(tmp_path / "t", "id", **{"delta.enableDeletionVectors": "true"})
    p = t.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert "columnMapping" in (p.reader_features or ()) and "columnMapping" in (p.writer_features or ())
    t.write(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    assert deltars_rows(tmp_path / "t") == sorted(ROWS, key=repr)


DEEP = pa.schema(
    [
        ("id", pa.int64()),
        ("ll", pa.list_(pa.list_(pa.struct([("z", pa.int32())])))),
        ("ml", pa.map_(pa.string(), pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])))),
    ]
)


def _all_ids(t: pa.DataType) -> list[int]:
    """Every field id below `t` (structs at any depth, through lists and maps)."""
    out: list[int] = []
    if pa.types.is_struct(t):
        for f in t:
            out.append(int(_meta(f, FIELD_ID)))  # type: ignore[call-overload]
            out += _all_ids(f.type)
    elif pa.types.is_list(t):
        out += _all_ids(t.value_type)
    elif pa.types.is_map(t):
        out += _all_ids(t.key_type) + _all_ids(t.item_type)
    return out


@pytest.mark.parametrize("mode", ["name", "id"])
def test_structs_deep_in_lists_and_maps_are_mapped(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=DEEP, properties={"delta.columnMapping.mode": mode})
    ids = _all_ids(pa.struct(list(t.snapshot().schema)))
    assert (
        sorted(ids) == list(range(1, 7))
        and t.snapshot().metadata.configuration["delta.columnMapping.maxColumnId"] == "6"
    )
    rows = [
        {"id": 1, "ll": [[{"z": 1}], [], None], "ml": [("k", [{"a": 2, "b": "x"}])]},
        {"id": 2, "ll": None, "ml": [("j", None)]},
    ]
    t.write(pa.Table.from_pylist(rows, schema=DEEP))
    assert sorted(t.snapshot().to_arrow().to_pylist(), key=repr) == sorted(rows, key=repr)
    assert deltars_rows(root) == sorted(rows, key=repr)


def test_a_mapped_variant_table_is_read(tmp_path: Path) -> None:
    """Column mapping turned on for a table with variant columns (physical name = name, as Delta
    does when it enables mapping): a variant is a primitive, its two binary fields are not mapped."""
    golden = Path(__file__).parent / "golden" / "spark-variant-checkpoint"
    root = tmp_path / "t"
    shutil.copytree(golden, root)
    before = Table.open(str(root)).snapshot()
    fields = json.loads(before.metadata.schema_string)["fields"]
    counter = iter(range(1, 1000))

    def number(t: object) -> None:  # every struct field at any depth; a variant is a leaf
        if isinstance(t, dict) and t.get("type") == "struct":
            for f in t["fields"]:
                f["metadata"] = {FIELD_ID: next(counter), PHYSICAL_NAME: f["name"]}
                number(f["type"])
        elif isinstance(t, dict):
            for key in ("elementType", "keyType", "valueType"):
                number(t.get(key))

    number({"type": "struct", "fields": fields})
    wire = before.metadata.to_wire()["metaData"]
    wire["schemaString"] = json.dumps({"type": "struct", "fields": fields})
    wire["configuration"] = {**wire["configuration"], "delta.columnMapping.mode": "name"}
    proto = before.protocol.to_wire()["protocol"]
    proto["readerFeatures"] = sorted({*proto["readerFeatures"], "columnMapping"})
    proto["writerFeatures"] = sorted({*proto["writerFeatures"], "columnMapping"})
    commit = json.dumps({"protocol": proto}) + "\n" + json.dumps({"metaData": wire}) + "\n"
    (root / "_delta_log" / f"{3:020d}.json").write_text(commit)
    snap = Table.open(str(root)).snapshot()
    assert snap.version == 3 and snap.column_names is not None
    assert sorted(snap.to_arrow().to_pylist(), key=repr) == sorted(before.to_arrow().to_pylist(), key=repr)
