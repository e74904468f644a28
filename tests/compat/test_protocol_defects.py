"""Regression tests for the protocol defects of issue 10 (each failed on the code at commit 354111b).

Every test names the defect it guards. Where the defect was about what another engine makes of our
log (or we of theirs), delta-rs (`deltalake`) is the judge.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import (
    AppendOnlyViolationError,
    ConcurrentAppendError,
    InvalidArgumentError,
    PredicateError,
    SchemaMismatchError,
    Table,
    TxnLogError,
    UnsupportedFeatureError,
)

pytestmark = pytest.mark.compat

UTC = dt.UTC


def _log_text(root: Path) -> str:
    return "\n".join(p.read_text() for p in sorted((root / "_delta_log").glob("*.json")))


def _commit(root: Path, version: int, actions: list[dict[str, Any]]) -> None:
    lines = "\n".join(json.dumps(a) for a in actions)
    (root / "_delta_log" / f"{version:020d}.json").write_text(lines + "\n")


# ------------------------------------------------------------------ 1. years before 1000
def _old_dates_table(root: Path) -> Table:
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("ntz", pa.timestamp("us")),
            ("p", pa.timestamp("us")),
        ]
    )
    t = Table.create(str(root), schema=schema, partition_by=["p"])
    rows = {
        "id": [1, 2],
        "ts": [dt.datetime(999, 1, 1, tzinfo=UTC), dt.datetime(1, 1, 1, 0, 0, 1, tzinfo=UTC)],
        "ntz": [dt.datetime(1, 1, 1), dt.datetime(999, 6, 1)],
        "p": [dt.datetime(999, 12, 31), dt.datetime(999, 12, 31)],
    }
    t.write(pa.table(rows, schema=schema))
    return t


def test_years_before_1000_are_written_with_four_digits(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _old_dates_table(root)
    text = _log_text(root)
    assert '"p":"0999-12-31 00:00:00.000000"' in text
    assert "0999-01-01T00:00:00.000Z" in text and "0001-01-01T00:00:01.000Z" in text
    assert "0001-01-01T00:00:00.000" in text  # timestamp_ntz stats: no zone suffix
    assert '"999-' not in text and '"1-01' not in text


def test_years_before_1000_read_back_by_us_and_pruned_right_by_delta_rs(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _old_dates_table(root)
    t.checkpoint()
    t.create_savepoint("before")
    snap = Table.open(str(root)).snapshot()
    assert sorted(snap.to_arrow().column("id").to_pylist()) == [1, 2]
    assert snap.to_arrow(filter="ts < TIMESTAMP '2000-01-01 00:00:00'").num_rows == 2
    assert snap.to_arrow(filter="p < TIMESTAMP '1000-01-01 00:00:00'").num_rows == 2
    dl = deltalake.DeltaTable(str(root))
    cutoff = dt.datetime(2000, 1, 1, tzinfo=UTC)
    assert dl.to_pyarrow_table(filters=[("ts", "<", cutoff)]).num_rows == 2
    assert sorted(dl.to_pyarrow_table().column("id").to_pylist()) == [1, 2]


# ------------------------------------------------------------------ 4, 5, 10. literals in the column's type
def _typed_table(root: Path) -> Table:
    schema = pa.schema(
        [("id", pa.int64()), ("f", pa.float32()), ("dec", pa.decimal128(20, 10)), ("i32", pa.int32())]
    )
    t = Table.create(str(root), schema=schema)
    data = {
        "id": [1, 2],
        "f": [0.1, 0.5],
        "dec": [decimal.Decimal("12345678.1234567891"), decimal.Decimal(0)],
        "i32": [1, 2],
    }
    t.write(pa.table(data, schema=schema))
    return t


@pytest.mark.parametrize(
    ("predicate", "ids"),
    [
        # Spark compares a FLOAT column with a DECIMAL literal as DOUBLE: the stored float32 0.1 is
        # 0.10000000149 as a double, above 0.1 (issue 39); a FLOAT literal compares in float32
        ("f = 0.1", []),
        ("f <= 0.1", []),
        ("f IN (0.1)", []),
        ("f >= 0.1", [1, 2]),
        ("f > 0.1", [1, 2]),
        ("f = CAST(0.1 AS FLOAT)", [1]),
        ("f <= CAST(0.1 AS FLOAT)", [1]),
        ("dec = 12345678.1234567891", [1]),
        ("dec > 12345678.123456789", [1]),
        ("dec < 12345678.1234567892", [1, 2]),
        ("dec = 0", [2]),
    ],
)
def test_float32_and_decimal_literals_compare_as_spark_compares(
    tmp_path: Path, predicate: str, ids: list[int]
) -> None:
    snap = _typed_table(tmp_path / "t").snapshot()
    assert sorted(snap.to_arrow(filter=predicate).column("id").to_pylist()) == ids
    assert len(snap.files(filter=predicate)) >= (1 if ids else 0)  # pruning keeps the one file


def test_concurrent_float32_append_conflicts_with_a_read_of_that_value(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _typed_table(root)
    txn = t.transaction("DELETE")
    for add in txn.read_files(filter="f = CAST(0.1 AS FLOAT)"):
        txn.remove(add)
    other = Table.open(str(root))
    schema = other.snapshot().schema
    other.write(pa.table({"id": [3], "f": [0.1], "dec": [None], "i32": [3]}, schema=schema))
    with pytest.raises(ConcurrentAppendError):
        txn.commit()


def test_decimal_stats_are_written_in_plain_notation(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _typed_table(root)
    text = _log_text(root)
    assert "E-10" not in text and "0.0000000000" in text
    dl = deltalake.DeltaTable(str(root))
    assert dl.to_pyarrow_table(filters=[("dec", "=", decimal.Decimal(0))]).column("id").to_pylist() == [2]


@pytest.mark.parametrize(
    "predicate",
    ["i32 < 3000000000", "i32 = -3000000000", "i32 IN (1, 3000000000)", "f < 1e300"],
)
def test_out_of_range_literals_are_decided_not_raw_arrow_errors(tmp_path: Path, predicate: str) -> None:
    snap = _typed_table(tmp_path / "t").snapshot()
    expected = {"i32 < 3000000000": [1, 2], "i32 = -3000000000": [], "i32 IN (1, 3000000000)": [1]}
    got = sorted(snap.to_arrow(filter=predicate).column("id").to_pylist())
    assert got == expected.get(predicate, [1, 2])


# ------------------------------------------------------------------ 7. binary partition values
def test_binary_partition_values_round_trip_with_delta_rs(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("b", pa.binary())])
    t = Table.create(str(root), schema=schema, partition_by=["b"])
    t.write(pa.table({"id": [1, 2], "b": [b"caf\xc3\xa9", b"\x01\x02"]}, schema=schema))
    assert '"b":"café"' in _log_text(root)
    dl = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    assert sorted(zip(dl.column("id").to_pylist(), dl.column("b").to_pylist(), strict=True)) == [
        (1, b"caf\xc3\xa9"),
        (2, b"\x01\x02"),
    ]
    ours = Table.open(str(root)).snapshot().to_arrow()
    assert sorted(ours.column("b").to_pylist()) == [b"\x01\x02", b"caf\xc3\xa9"]


def test_binary_partition_value_written_by_delta_rs_reads_back(tmp_path: Path) -> None:
    root = tmp_path / "t"
    data = pa.table({"id": [1], "b": pa.array([b"caf\xc3\xa9"], pa.binary())})
    deltalake.write_deltalake(str(root), data, partition_by=["b"])
    assert Table.open(str(root)).snapshot().to_arrow().column("b").to_pylist() == [b"caf\xc3\xa9"]


def test_binary_partition_value_that_is_not_utf8_is_refused_and_nothing_written(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("b", pa.binary())])
    t = Table.create(str(root), schema=schema, partition_by=["b"])
    before = sorted(p.name for p in root.rglob("*"))
    with pytest.raises(InvalidArgumentError, match="UTF-8"):
        t.write(pa.table({"id": [1], "b": [b"\xff\xfe"]}, schema=schema))
    assert sorted(p.name for p in root.rglob("*")) == before


# ------------------------------------------------------------------ 8. NaN-blind stats of other writers
def test_float_not_equal_never_skips_a_file_on_nan_blind_stats(tmp_path: Path) -> None:
    root = tmp_path / "t"
    data = pa.table({"id": [1, 2], "f": [1.5, float("nan")]})
    deltalake.write_deltalake(str(root), data)
    stats = json.loads(Table.open(str(root)).snapshot().files()[0].stats or "{}")
    assert stats["minValues"]["f"] == stats["maxValues"]["f"] == 1.5  # delta-rs ignores the NaN
    snap = Table.open(str(root)).snapshot()
    assert snap.to_arrow(filter="f != 1.5").column("id").to_pylist() == [2]
    assert snap.to_arrow(filter="NOT (f = 1.5)").column("id").to_pylist() == [2]
    assert snap.to_arrow(filter="f NOT IN (1.5)").column("id").to_pylist() == [2]


# ------------------------------------------------------------------ 9. appendOnly on the read snapshot
def test_append_only_is_checked_on_the_snapshot_the_transaction_read(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64())])
    t = Table.create(str(root), schema=schema, properties={"delta.appendOnly": "true"})
    t.write(pa.table({"id": [1]}, schema=schema))
    version = t.latest_version()
    txn = t.transaction("DELETE")
    snap = t.snapshot()
    meta = snap.state.metadata
    off = dict(meta.configuration)
    off["delta.appendOnly"] = "false"
    txn.update_metadata(replace(meta, configuration=off))
    for add in txn.read_files():
        txn.remove(add)
    with pytest.raises(AppendOnlyViolationError):
        txn.commit()
    assert Table.open(str(root)).latest_version() == version


# ------------------------------------------------------------------ 2. checkpoints keep every action
def _row_tracking_table(root: Path) -> None:
    """A table as Delta 3 writes one with row tracking and liquid clustering (written by hand)."""
    (root / "_delta_log").mkdir(parents=True)
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), root / "part-0.parquet")
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    stats = {"numRecords": 3, "minValues": {"id": 1}, "maxValues": {"id": 3}, "nullCount": {"id": 0}}
    features = ["domainMetadata", "rowTracking", "clustering"]
    _commit(
        root,
        0,
        [
            {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "CREATE TABLE"}},
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": features}},
            {
                "metaData": {
                    "id": "4c1c6b1c-0000-4000-8000-000000000001",
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(schema),
                    "partitionColumns": [],
                    "configuration": {"delta.enableRowTracking": "true"},
                    "createdTime": 1_700_000_000_000,
                }
            },
            {
                "domainMetadata": {
                    "domain": "delta.rowTracking",
                    "configuration": '{"rowIdHighWaterMark":2}',
                    "removed": False,
                }
            },
            {
                "domainMetadata": {
                    "domain": "delta.clustering",
                    "configuration": '{"clusteringColumns":[["id"]]}',
                    "removed": False,
                }
            },
            {
                "add": {
                    "path": "part-0.parquet",
                    "partitionValues": {},
                    "size": (root / "part-0.parquet").stat().st_size,
                    "modificationTime": 1_700_000_000_000,
                    "dataChange": True,
                    "stats": json.dumps(stats),
                    "baseRowId": 0,
                    "defaultRowCommitVersion": 0,
                    "clusteringProvider": "liquid",
                }
            },
        ],
    )


def test_checkpoint_keeps_domain_metadata_and_row_tracking_fields(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _row_tracking_table(root)
    Table.open(str(root)).checkpoint()
    (root / "_delta_log" / f"{0:020d}.json").unlink()  # as log cleanup would, later
    snap = Table.open(str(root)).snapshot()
    assert sorted(snap.state.domains) == ["delta.clustering", "delta.rowTracking"]
    assert snap.state.domains["delta.rowTracking"]["configuration"] == '{"rowIdHighWaterMark":2}'
    (add,) = snap.files()
    assert (add.base_row_id, add.default_row_commit_version, add.clustering_provider) == (0, 0, "liquid")
    assert snap.to_arrow().column("id").to_pylist() == [1, 2, 3]


def test_savepoint_manifest_keeps_domains_and_row_tracking_fields(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _row_tracking_table(root)
    Table.open(str(root)).create_savepoint("keep")
    (manifest,) = (root / "_savepoints").rglob("*.parquet")
    rows = pq.read_table(manifest).to_pylist()
    adds = [r["add"] for r in rows if r.get("add")]
    domains = sorted(r["domainMetadata"]["domain"] for r in rows if r.get("domainMetadata"))
    assert [(a["baseRowId"], a["defaultRowCommitVersion"], a["clusteringProvider"]) for a in adds] == [
        (0, 0, "liquid")
    ]
    assert domains == ["delta.clustering", "delta.rowTracking"]


# ------------------------------------------------------------------ 3. feature properties at create
# (CHECK constraints, generated columns and invariants are honored since issue 26:
# tests/engine/features/test_constraints.py, tests/engine/features/test_generated.py)
@pytest.mark.parametrize(
    ("properties", "feature"),
    [
        ({"delta.feature.liquid": "supported"}, "liquid"),
        ({"delta.feature.clustering": "supported"}, "clustering"),
    ],
)
def test_create_refuses_feature_properties_it_cannot_honor(
    tmp_path: Path, properties: dict[str, str], feature: str
) -> None:
    root = tmp_path / "t"
    with pytest.raises(UnsupportedFeatureError, match=feature):
        Table.create(str(root), schema=pa.schema([("id", pa.int64())]), properties=properties)
    assert not root.exists() or not any(root.rglob("*.json"))


@pytest.mark.parametrize(
    "metadata",
    [
        {
            "delta.identity.start": "1",
            "delta.identity.step": "1",
            "delta.identity.allowExplicitInsert": "false",
        },
    ],
)
def test_create_refuses_identity_columns(tmp_path: Path, metadata: dict[str, str]) -> None:
    root = tmp_path / "t"
    field_md = {k: json.dumps(v) if not v.startswith("{") else v for k, v in metadata.items()}
    schema = pa.schema([("id", pa.int64()), pa.field("g", pa.int64(), metadata=field_md)])
    with pytest.raises(UnsupportedFeatureError):
        Table.create(str(root), schema=schema)
    assert not root.exists() or not any(root.rglob("*.json"))


@pytest.mark.parametrize(
    "properties",
    [
        {"delta.enableChangeDataFeed": "false"},
        {"delta.enableDeletionVectors": "false"},
        {"delta.checkpointPolicy": "classic"},
        {"delta.columnMapping.mode": "none"},
        {"delta.appendOnly": "false"},
    ],
)
def test_create_accepts_those_properties_when_they_leave_the_feature_off(
    tmp_path: Path, properties: dict[str, str]
) -> None:
    t = Table.create(str(tmp_path / "t"), schema=pa.schema([("id", pa.int64())]), properties=properties)
    assert t.snapshot().state.protocol.min_writer_version == 2


# ------------------------------------------------------------------ 6. stats_parsed
def test_stats_only_in_stats_parsed_survive_our_checkpoint(tmp_path: Path) -> None:
    root = tmp_path / "t"
    conf = {"delta.checkpoint.writeStatsAsJson": "false", "delta.checkpoint.writeStatsAsStruct": "true"}
    for start in (0, 100, 200):
        batch = pa.table({"id": pa.array(range(start, start + 10), pa.int64())})
        deltalake.write_deltalake(str(root), batch, mode="append", configuration=conf)
    deltalake.DeltaTable(str(root)).create_checkpoint()
    t = Table.open(str(root))
    assert t.snapshot().state.metadata.configuration["delta.checkpoint.writeStatsAsJson"] == "false"
    assert len(t.snapshot().files(filter="id > 150")) == 1  # pruned on stats_parsed
    t.write(pa.table({"id": pa.array([300], pa.int64())}))
    t.checkpoint()
    (root / "_delta_log" / "_last_checkpoint").unlink()
    for p in (root / "_delta_log").glob("*.json"):
        if int(p.stem) < t.latest_version():
            p.unlink()
    snap = Table.open(str(root)).snapshot()
    assert len(snap.files()) == 4
    assert len(snap.files(filter="id > 150")) == 2  # 200..209 and 300
    ck = pq.read_table(root / "_delta_log" / f"{t.latest_version():020d}.checkpoint.parquet")
    adds = [r for r in ck.column("add").to_pylist() if r]
    assert all(a["stats"] is None for a in adds)  # writeStatsAsJson=false honored
    assert sorted(a["stats_parsed"]["minValues"]["id"] for a in adds) == [0, 100, 200, 300]
    dl = deltalake.DeltaTable(str(root))
    assert dl.to_pyarrow_table(filters=[("id", ">", 150)]).num_rows == 11


def test_default_checkpoint_writes_json_and_struct_stats_as_delta_does(tmp_path: Path) -> None:
    # Delta's DeltaConfigs: checkpoint.writeStatsAsJson and checkpoint.writeStatsAsStruct default "true".
    root = tmp_path / "t"
    t = Table.create(str(root), schema=pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": pa.array([1, 2], pa.int64())}))
    t.checkpoint()
    ck = pq.read_table(root / "_delta_log" / f"{1:020d}.checkpoint.parquet")
    (add,) = [r for r in ck.column("add").to_pylist() if r]
    assert add["stats"] is not None
    assert add["stats_parsed"]["minValues"]["id"] == 1 and add["stats_parsed"]["maxValues"]["id"] == 2
    assert "partitionValues_parsed" not in add  # an unpartitioned table has none


def test_checkpoint_without_struct_stats_when_turned_off(tmp_path: Path) -> None:
    root = tmp_path / "t"
    props = {"delta.checkpoint.writeStatsAsStruct": "false"}
    t = Table.create(str(root), schema=pa.schema([("id", pa.int64())]), properties=props)
    t.write(pa.table({"id": pa.array([1, 2], pa.int64())}))
    t.checkpoint()
    ck = pq.read_table(root / "_delta_log" / f"{1:020d}.checkpoint.parquet")
    add_type = ck.schema.field("add").type
    assert add_type.get_field_index("stats") >= 0 and add_type.get_field_index("stats_parsed") < 0


def test_checkpoint_struct_stats_when_asked(tmp_path: Path) -> None:
    root = tmp_path / "t"
    props = {"delta.checkpoint.writeStatsAsStruct": "true"}
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("d", pa.date32())])
    t = Table.create(str(root), schema=schema, properties=props)
    t.write(pa.table({"id": [5, 7], "s": ["a", "b"], "d": [dt.date(2024, 1, 1), None]}, schema=schema))
    t.checkpoint()
    ck = pq.read_table(root / "_delta_log" / f"{1:020d}.checkpoint.parquet")
    (add,) = [r for r in ck.column("add").to_pylist() if r]
    parsed = add["stats_parsed"]
    assert parsed["numRecords"] == 2 and parsed["minValues"]["id"] == 5 and parsed["maxValues"]["s"] == "b"
    assert parsed["minValues"]["d"] == dt.date(2024, 1, 1) and parsed["nullCount"]["d"] == 1
    assert add["stats"] is not None  # writeStatsAsJson stays on by default
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table(filters=[("id", ">", 6)]).num_rows == 1


# ------------------------------------------------------------------ clean-ups
def test_nanosecond_timestamps_and_not_null_nested_nulls_are_txnlog_errors(tmp_path: Path) -> None:
    root = tmp_path / "t"
    inner = pa.struct([pa.field("x", pa.int64(), nullable=False)])
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us")), ("s", inner)])
    t = Table.create(str(root), schema=schema)
    version = t.latest_version()
    ns = pa.table(
        {
            "id": [1],
            "ts": pa.array([1_700_000_000_123_456_789], pa.timestamp("ns")),
            "s": pa.array([{"x": 1}], inner),
        }
    )
    t.write(ns)  # whole microseconds are kept; the nanoseconds are below the table's precision
    bad_nested = pa.table(
        {
            "id": [2],
            "ts": pa.array([None], pa.timestamp("us")),
            "s": pa.array([{"x": None}], pa.struct([pa.field("x", pa.int64())])),
        }
    )
    with pytest.raises((SchemaMismatchError, InvalidArgumentError)) as exc:
        t.write(bad_nested)
    assert isinstance(exc.value, TxnLogError) and "s.x" in str(exc.value)
    assert Table.open(str(root)).latest_version() == version + 1


def test_multi_part_checkpoints_split_files_by_a_hash_of_the_path(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64())])
    t = Table.create(str(root), schema=schema, checkpoint_part_size=3)
    for i in range(8):
        t.write(pa.table({"id": [i]}, schema=schema))
    t.checkpoint()
    parts = sorted((root / "_delta_log").glob(f"{8:020d}.checkpoint.*.parquet"))
    assert len(parts) >= 2
    from airflow_txnlog.engine.log.spark_hash import part_of  # noqa: PLC0415 - the split rule itself

    for number, part in enumerate(parts, 1):
        for row in pq.read_table(part).column("add").to_pylist():
            if row:
                assert part_of(row["path"], len(parts)) == number
    assert sorted(Table.open(str(root)).snapshot().to_arrow().column("id").to_pylist()) == list(range(8))
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table().num_rows == 8


def test_checkpoint_remove_rows_carry_no_tags(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64())])
    t = Table.create(str(root), schema=schema)
    t.write(pa.table({"id": [1]}, schema=schema))
    t.write(pa.table({"id": [2]}, schema=schema), mode="overwrite")
    t.checkpoint()
    ck = pq.read_table(root / "_delta_log" / f"{2:020d}.checkpoint.parquet")
    remove_type = ck.schema.field("remove").type
    assert "tags" not in [remove_type.field(i).name for i in range(remove_type.num_fields)]
    assert any(r for r in ck.column("remove").to_pylist())


def test_data_skipping_stats_columns_are_honored(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("c", pa.string())])
    props = {"delta.dataSkippingStatsColumns": "c,a"}
    t = Table.create(str(root), schema=schema, properties=props)
    t.write(pa.table({"a": [1], "b": [2], "c": ["x"]}, schema=schema))
    stats = json.loads(t.snapshot().files()[0].stats or "{}")
    assert sorted(stats["nullCount"]) == ["a", "c"] and sorted(stats["minValues"]) == ["a", "c"]


def test_predicate_errors_stay_txnlog_errors(tmp_path: Path) -> None:
    snap = _typed_table(tmp_path / "t").snapshot()
    with pytest.raises(TxnLogError):  # (Spark fails too: 'abc' is no INT under ANSI)
        snap.to_arrow(filter="i32 < 'abc'")
    with pytest.raises(PredicateError):
        snap.to_arrow(filter="i32 < no_such_column")


def test_metadata_update_cannot_turn_on_an_unhonored_feature(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=pa.schema([("id", pa.int64())]))
    txn = t.transaction("SET TBLPROPERTIES")
    meta = t.snapshot().state.metadata
    txn.update_metadata(replace(meta, configuration={"delta.enableChangeDataFeed": "true"}))
    with pytest.raises(UnsupportedFeatureError, match="changeDataFeed"):
        txn.commit()
    assert Table.open(str(root)).latest_version() == 0


def test_restore_to_before_append_only_is_refused_like_spark_restore(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64())])
    t = Table.create(str(root), schema=schema)
    t.write(pa.table({"id": [1]}, schema=schema))
    txn = t.transaction("SET TBLPROPERTIES")
    meta = t.snapshot().state.metadata
    txn.update_metadata(replace(meta, configuration={"delta.appendOnly": "true"}))
    txn.commit()
    t.write(pa.table({"id": [2]}, schema=schema))
    latest = t.latest_version()
    with pytest.raises(AppendOnlyViolationError):
        t.restore(version=1)
    assert Table.open(str(root)).latest_version() == latest
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == [1, 2]
