"""Column mapping turned on for a table we wrote, then RENAME COLUMN / DROP COLUMNS (metadata only,
engine.write.alter_table): the files keep their names, readers see the new ones, older versions read
as they were, pruning keeps working through the physical names, and new data is written under the
physical names (delta-rs reads the result)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table, UnsupportedFeatureError
from airflow_txnlog.engine.features.column_mapping import physical_name
from tests.cli_support import run, run_json
from tests.deltars import deltars_rows

SCHEMA = pa.schema(
    [("id", pa.int64()), ("p", pa.string()), ("s", pa.struct([("x", pa.int64())])), ("v", pa.float64())]
)


def _rows(t: Table, version: int | None = None) -> list[dict[str, object]]:
    table = t.snapshot(version=version).to_arrow()
    return sorted(table.to_pylist(), key=lambda r: str(next(iter(r.values()))))


@pytest.fixture
def mapped(tmp_path: Path) -> Table:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["p"])
    data = {
        "id": [1, 2, 3],
        "p": ["a", "b", "a"],
        "s": [{"x": 10}, {"x": 20}, {"x": 30}],
        "v": [0.5, 1.5, 2.5],
    }
    t.write(pa.table(data, schema=SCHEMA))
    assert t.set_properties({"delta.columnMapping.mode": "name"}) == 2
    return t


def test_enabling_mapping_names_every_field_by_its_current_name(mapped: Table) -> None:
    snap = mapped.snapshot()
    assert snap.protocol.reader_features == ("columnMapping",)
    assert "columnMapping" in (snap.protocol.writer_features or ())
    assert snap.metadata.configuration["delta.columnMapping.maxColumnId"] == "5"  # id, p, s, s.x, v
    assert [physical_name(f) for f in snap.schema] == ["id", "p", "s", "v"]
    assert physical_name(snap.schema.field("s").type.field(0)) == "x"
    assert _rows(mapped) == _rows(mapped, 1)  # nothing moved


def test_rename_and_drop_change_only_the_schema(mapped: Table) -> None:
    files = {f.path for f in mapped.snapshot().files()}
    mapped.rename_column("id", "key")
    mapped.rename_column("p", "part")  # a partition column: partitionColumns follows
    mapped.rename_column("s.x", "y")
    mapped.drop_columns(["v"])
    snap = mapped.snapshot()
    assert snap.schema.names == ["key", "part", "s"] and snap.partition_columns == ["part"]
    assert {f.path for f in snap.files()} == files  # no file rewritten
    assert _rows(mapped) == [
        {"key": 1, "part": "a", "s": {"y": 10}},
        {"key": 2, "part": "b", "s": {"y": 20}},
        {"key": 3, "part": "a", "s": {"y": 30}},
    ]
    assert [f.partition_values for f in snap.files(filter="part = 'b'")] == [{"p": "b"}]  # physical keys
    assert snap.files(filter="key > 5") == []  # stats by physical name
    assert _rows(mapped, 1)[0] == {"id": 1, "p": "a", "s": {"x": 10}, "v": 0.5}  # time travel


def test_a_dropped_name_can_be_reused(mapped: Table) -> None:
    mapped.drop_columns(["v"])
    mapped.rename_column("id", "v")  # the files' column "v" is the dropped one: not read
    assert sorted(mapped.snapshot().to_arrow(columns=["v"]).column("v").to_pylist()) == [1, 2, 3]
    mapped.checkpoint()
    assert sorted(Table.open(mapped.uri).snapshot().to_arrow(columns=["v"]).column("v").to_pylist()) == [
        1,
        2,
        3,
    ]


def test_writes_after_rename_and_drop_round_trip_with_deltars(mapped: Table) -> None:
    """New files of a table whose mapping was turned on late: physical names are the old names
    (a dropped column's name stays taken), new columns get fresh ones; delta-rs reads it all."""
    mapped.rename_column("id", "key")
    mapped.rename_column("s.x", "y")
    mapped.drop_columns(["v"])
    mapped.rename_column("key", "v")  # the logical name of a dropped column, reused
    old = {f.path for f in mapped.snapshot().files()}
    mapped.write(pa.table({"v": [4], "p": ["b"], "s": [{"y": 40}]}, schema=mapped.snapshot().schema))
    (new,) = [f for f in mapped.snapshot().files() if f.path not in old]
    assert new.partition_values == {"p": "b"} and new.path.startswith("p=b/")
    file_schema = pq.read_schema(f"{mapped.uri}/{new.path}")
    assert file_schema.names == ["id", "s"] and file_schema.field("s").type.field(0).name == "x"
    assert json.loads(new.stats or "")["maxValues"] == {"id": 4, "s": {"x": 40}}
    want = [
        {"v": 1, "p": "a", "s": {"y": 10}},
        {"v": 2, "p": "b", "s": {"y": 20}},
        {"v": 3, "p": "a", "s": {"y": 30}},
        {"v": 4, "p": "b", "s": {"y": 40}},
    ]
    assert _rows(mapped) == want
    assert deltars_rows(mapped.uri) == sorted(want, key=repr)
    assert deltars_rows(mapped.uri, where="v > 3") == [want[3]]


def test_restore_to_before_a_rename(mapped: Table) -> None:
    mapped.rename_column("id", "key")
    mapped.restore(version=2)
    assert mapped.snapshot().schema.names == ["id", "p", "s", "v"]


def test_bad_changes_are_refused(mapped: Table, tmp_path: Path) -> None:
    before = mapped.latest_version()
    for call, match in [
        (lambda: mapped.rename_column("nope", "x"), "no column 'nope'"),
        (lambda: mapped.rename_column("id", "v"), "already exists"),
        (lambda: mapped.rename_column("id.x", "y"), "not a struct"),
        (lambda: mapped.rename_column("id", "a.b"), "plain"),
        (lambda: mapped.drop_columns(["p"]), "partition columns"),
        (lambda: mapped.drop_columns(["id", "p", "s", "v"]), "partition columns"),
        (lambda: mapped.drop_columns(["id", "s", "v", "nope"]), "no columns"),
        (lambda: mapped.drop_columns([]), "at least one"),
    ]:
        with pytest.raises(InvalidArgumentError, match=match):
            call()
    with pytest.raises(UnsupportedFeatureError, match="'name' -> 'id'"):
        mapped.set_properties({"delta.columnMapping.mode": "id"})
    assert mapped.latest_version() == before
    plain = Table.create(str(tmp_path / "plain"), schema=SCHEMA)
    with pytest.raises(UnsupportedFeatureError, match="Help: set_properties"):
        plain.rename_column("id", "key")


def test_cli(mapped: Table) -> None:
    assert run_json("rename-column", mapped.uri, "id", "key") == {"version": 3}
    assert run_json("drop-columns", mapped.uri, "v") == {"version": 4}
    assert run_json("set-properties", mapped.uri, "owner=lake") == {"version": 5}
    assert Table.open(mapped.uri).snapshot().metadata.configuration["owner"] == "lake"
    bad = run("set-properties", mapped.uri, "no-equals-sign")
    assert bad.exit_code != 0 and "KEY=VALUE" in bad.output
    refused = run("rename-column", mapped.uri, "key", "p")
    assert refused.exit_code != 0 and "already exists" in refused.output
