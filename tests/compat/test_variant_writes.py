"""Variant columns written by the engine (issue 26, item 6; PROTOCOL.md "Variant Data Type"):
unshredded, as Spark writes them; read back by delta-rs and by polars-deltalake (delta-kernel-rs).

The valid values are Spark's own encodings: the rows of the Spark-written reference table
`spark-variant-checkpoint` (Delta's generator: parse_json('{"key": id}'), nested in arrays, structs
and maps)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import polars_deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import InvalidArgumentError, SchemaMismatchError, Table, schema_to_json
from airflow_txnlog.engine.schema import VARIANT

GOLDEN = Path(__file__).parent / "golden" / "spark-variant-checkpoint"
SCHEMA = pa.schema([("id", pa.int64()), ("v", VARIANT)])


def _golden_v(n: int) -> pa.Table:
    """`n` rows (id, v) of the reference table, v in the engine's Arrow form."""
    return Table.open(str(GOLDEN)).snapshot().to_arrow().select(["id", "v"]).slice(0, n)


def _spark_order(t: pa.Table) -> pa.Table:
    """The same rows with `v` as Spark's Arrow conversion gives it: struct<value, metadata>."""
    spark_v = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])
    return t.cast(pa.schema([("id", pa.int64()), ("v", spark_v)]))


def _keys(rows: list[dict[str, Any]]) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for r in rows:
        v = r["v"]
        out.append(
            (r["id"], None if v is None else bytes(v["value"]), None if v is None else bytes(v["metadata"]))
        )
    return sorted(out, key=lambda k: (k[0], k[1] or b""))


def _polars_rows(path: Path) -> list[dict[str, Any]]:
    return polars_deltalake.read_delta(str(path)).select(["id", "v"]).to_dicts()


def test_create_write_and_read_back_everywhere(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = Table.create(str(path), schema=SCHEMA)
    snap = t.snapshot()
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (3, 7)
    assert "variantType" in snap.protocol.reader_features and "variantType" in snap.protocol.writer_features
    rows = _golden_v(20)
    t.write(rows)
    null_row = pa.table({"id": [99], "v": pa.nulls(1, VARIANT)}, schema=SCHEMA)
    t.write(_spark_order(pa.concat_tables([_golden_v(3), null_row])))  # as Spark's Arrow gives it
    expected = _keys([*rows.to_pylist(), *_golden_v(3).to_pylist(), {"id": 99, "v": None}])
    assert _keys(t.snapshot().to_arrow().to_pylist()) == expected
    assert _keys(DeltaTable(str(path)).to_pyarrow_table().to_pylist()) == expected
    assert _keys(_polars_rows(path)) == expected


def test_files_hold_the_unshredded_group_and_stats_count_nulls_only(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = Table.create(str(path), schema=SCHEMA)
    data = _golden_v(4)
    t.write(pa.concat_tables([data, pa.table({"id": [7], "v": pa.nulls(1, VARIANT)}, schema=SCHEMA)]))
    add = t.snapshot().files()[0]
    physical = pq.read_schema(path / add.path)
    v = physical.field("v").type
    assert [v.field(i).name for i in range(2)] == ["value", "metadata"]  # Spark's order
    assert all(not v.field(i).nullable and v.field(i).type == pa.binary() for i in range(2))
    stats = json.loads(add.stats)
    assert stats["nullCount"] == {"id": 0, "v": 1}
    assert "v" not in stats["minValues"] and "v" not in stats["maxValues"]


def test_bad_variant_bytes_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = Table.create(str(path), schema=SCHEMA)
    good = _golden_v(3).to_pylist()
    bad = [*good[:2], {"id": 5, "v": {"metadata": b"\x02\x00\x00", "value": good[0]["v"]["value"]}}]
    with pytest.raises(InvalidArgumentError, match=r"column 'v': row 2 .*Variant"):
        t.write(pa.Table.from_pylist(bad, schema=SCHEMA))
    assert t.snapshot().version == 0 and not list(path.rglob("*.parquet"))
    not_binary = pa.table({"id": [1], "v": pa.array([{"value": 1, "metadata": 2}])})
    with pytest.raises(SchemaMismatchError, match="'v'"):
        t.write(not_binary)


def test_variant_is_no_partition_column_and_no_generated_result(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="partition column 'v'"):
        Table.create(str(tmp_path / "p"), schema=SCHEMA, partition_by=["v"])
    with pytest.raises(InvalidArgumentError, match="generated column 'v' would be a variant"):
        Table.create(str(tmp_path / "g"), schema=SCHEMA, generated_columns={"v": "parse_json('{}')"})
    assert not (tmp_path / "p").exists() and not (tmp_path / "g").exists()


def test_the_spark_written_table_is_appended_checkpointed_and_read_back(tmp_path: Path) -> None:
    """The reference table (protocol with variantType-preview, nested variants) is no longer read
    only: appended with its own rows, checkpointed, then read by delta-rs and polars-deltalake."""
    root = tmp_path / "t"
    shutil.copytree(GOLDEN, root)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    t = Table.open(str(root))
    before = t.snapshot().to_arrow()
    version = t.write(before.slice(0, 5))
    t.checkpoint()
    after = Table.open(str(root)).snapshot()
    assert after.version == version and after.to_arrow().num_rows == before.num_rows + 5
    assert (root / "_delta_log" / f"{version:020d}.checkpoint.parquet").exists()
    ours = sorted(after.to_arrow().column("id").to_pylist())
    assert sorted(DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist()) == ours
    assert sorted(r["id"] for r in _polars_rows(root)) == ours
    nested = DeltaTable(str(root)).to_pyarrow_table().filter(pa.compute.field("id") == 0)
    assert nested.num_rows == 3 and nested.column("array_of_variants").null_count == 0


def test_a_metadata_change_adding_a_variant_upgrades_the_protocol(tmp_path: Path) -> None:
    """As Delta: a schema change that adds a variant column turns variantType on in the same commit."""
    path = tmp_path / "t"
    t = Table.create(str(path), schema=pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    assert t.snapshot().protocol.min_reader_version == 1
    txn = t.transaction("ADD COLUMNS")
    meta = txn.snapshot.metadata
    txn.update_metadata(dataclasses.replace(meta, schema_string=schema_to_json(SCHEMA)))
    txn.commit()
    protocol = t.snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert "variantType" in protocol.reader_features and "variantType" in protocol.writer_features
    t.write(_golden_v(2))
    assert _keys(DeltaTable(str(path)).to_pyarrow_table().to_pylist()) == _keys(
        [{"id": 1, "v": None}, *_golden_v(2).to_pylist()]
    )


# --------------------------------------------------------------------------- review mends
def test_the_preview_feature_is_kept_and_not_doubled(tmp_path: Path) -> None:
    """A metadata change on a table that names `variantType-preview` (Delta 3's name) leaves the
    protocol alone: readers that know only that name keep reading."""
    root = tmp_path / "t"
    shutil.copytree(GOLDEN, root)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    t = Table.open(str(root))
    before = t.snapshot().protocol
    t.set_properties({"delta.logRetentionDuration": "interval 60 days"})
    assert t.snapshot().protocol == before


def test_a_deferred_create_gets_the_features_of_the_schema_it_commits(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("id", pa.int64())]), defer=True)
    txn = t.transaction("CREATE TABLE")
    meta = txn.snapshot.metadata
    txn.update_metadata(dataclasses.replace(meta, schema_string=schema_to_json(SCHEMA)))
    txn.commit()
    protocol = DeltaTable(str(tmp_path / "t")).protocol()
    assert protocol.min_reader_version == 3 and "variantType" in protocol.reader_features


def test_a_column_named_timestamp_ntz_is_not_a_timestamp_ntz(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("timestamp_ntz", pa.int64())]))
    t.write(pa.table({"timestamp_ntz": [1]}))
    protocol = t.snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)


def test_slices_with_null_lists_and_maps_are_written(tmp_path: Path) -> None:
    """Data that is a slice of a larger Arrow table (offsets into the parent's children), with NULL
    lists and maps and a bad variant outside the slice: written, and only the slice is checked."""
    golden = Table.open(str(GOLDEN)).snapshot().to_arrow()
    root = tmp_path / "t"
    t = Table.create(str(root), schema=golden.schema)
    rows = golden.slice(0, 4).to_pylist()
    rows[0]["map_of_variants"] = [("bad", {"metadata": b"\x02", "value": b"\x00"})]  # not a Variant
    rows[1]["array_of_variants"] = None
    rows[1]["map_of_variants"] = None
    data = pa.Table.from_pylist(rows, schema=golden.schema)
    with pytest.raises(InvalidArgumentError, match="map_of_variants"):
        t.write(data)
    t.write(data.slice(1))
    got = sorted(DeltaTable(str(root)).to_pyarrow_table().to_pylist(), key=str)
    assert got == sorted(data.slice(1).to_pylist(), key=str)
    xs = pa.schema([("xs", pa.list_(pa.field("element", pa.int64(), False)))])
    plain = Table.create(str(tmp_path / "xs"), schema=xs)
    plain.write(pa.table({"xs": [[1], None, [2, 3]]}, schema=xs).slice(1))
    assert DeltaTable(str(tmp_path / "xs")).to_pyarrow_table().column("xs").to_pylist() == [None, [2, 3]]
