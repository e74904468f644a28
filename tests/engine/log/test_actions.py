from __future__ import annotations

import datetime as dt
import decimal

import orjson
import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, properties
from airflow_txnlog.engine.log.actions import (
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    decode_path,
    encode_path,
    serialize_actions,
)
from airflow_txnlog.engine.schema import (
    hive_escape,
    parse_partition_value,
    schema_from_json,
    schema_to_json,
    serialize_partition_value,
)


def test_add_round_trip_keeps_wire_form() -> None:
    wire = {
        "path": "p=a%2525b/part-0.parquet",
        "partitionValues": {"p": "a%b", "q": None},
        "size": 10,
        "modificationTime": 5,
        "dataChange": True,
        "stats": '{"numRecords":1}',
        "tags": {"k": "v"},
    }
    add = AddFile.from_wire(wire)
    assert add.path == "p=a%25b/part-0.parquet"  # decoded once
    assert add.to_wire() == {"add": wire}
    assert add.num_records == 1
    rm = add.remove(deletion_timestamp=7)
    assert rm.to_wire()["remove"]["path"] == wire["path"]
    assert rm.to_wire()["remove"]["extendedFileMetadata"] is True


def test_remove_protocol_metadata_txn_round_trip() -> None:
    rm = {"path": "x.parquet", "deletionTimestamp": 3, "dataChange": False}
    assert RemoveFile.from_wire(rm).to_wire() == {"remove": rm}
    proto = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["timestampNtz"],
        "writerFeatures": [],
    }
    assert Protocol.from_wire(proto).to_wire() == {"protocol": proto}
    md = {
        "id": "i",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": '{"type":"struct","fields":[]}',
        "partitionColumns": [],
        "configuration": {"a": "b"},
        "createdTime": 1,
    }
    assert Metadata.from_wire(md).to_wire() == {"metaData": md}
    assert Txn.from_wire({"appId": "a", "version": 2}).to_wire() == {"txn": {"appId": "a", "version": 2}}


def test_commit_info_first_and_string_valued_parameters() -> None:
    info = CommitInfo(
        timestamp=1,
        operation="WRITE",
        operation_parameters={"partitionBy": ["p"], "mode": "Append"},
        operation_metrics={"numFiles": 2},
    )
    lines = serialize_actions([Txn("a", 1), info]).splitlines()
    first = orjson.loads(lines[0])["commitInfo"]
    assert first["operationParameters"] == {"partitionBy": '["p"]', "mode": "Append"}
    assert first["operationMetrics"] == {"numFiles": "2"}
    assert "txn" in orjson.loads(lines[1])


@pytest.mark.parametrize("raw", ["a b/c.parquet", "p=%25/x", "日本/é.parquet", "a=b/c:d", "x#y?z"])
def test_path_encoding_round_trips(raw: str) -> None:
    enc = encode_path(raw)
    assert " " not in enc and ":" not in enc
    assert decode_path(enc) == raw


def test_hive_escape_matches_spark() -> None:
    assert hive_escape("a b") == "a b"
    assert hive_escape("a%b") == "a%25b"
    assert hive_escape("a/b=c:d") == "a%2Fb%3Dc%3Ad"
    assert hive_escape(None) == "__HIVE_DEFAULT_PARTITION__"
    assert hive_escape("\x01") == "%01"


@pytest.mark.parametrize(
    ("value", "arrow_type", "text"),
    [
        ("x y", pa.string(), "x y"),
        (3, pa.int64(), "3"),
        (-3, pa.int8(), "-3"),
        (1.5, pa.float64(), "1.5"),
        (True, pa.bool_(), "true"),
        (dt.date(2024, 2, 29), pa.date32(), "2024-02-29"),
        (
            dt.datetime(2024, 1, 1, 12, 30, 1, 5, tzinfo=dt.UTC),
            pa.timestamp("us", "UTC"),
            "2024-01-01 12:30:01.000005",
        ),
        (dt.datetime(2024, 1, 1, 12), pa.timestamp("us"), "2024-01-01 12:00:00.000000"),
        (decimal.Decimal("12.30"), pa.decimal128(5, 2), "12.30"),
        (b"\x01\x02", pa.binary(), "\x01\x02"),
        (None, pa.int32(), None),
    ],
)
def test_partition_values_for_every_primitive(
    value: object, arrow_type: pa.DataType, text: str | None
) -> None:
    assert serialize_partition_value(value, arrow_type) == text
    assert parse_partition_value(text, arrow_type) == value


def test_partition_values_accept_iso_and_empty() -> None:
    ts = parse_partition_value("1970-01-01T00:00:00.123456Z", pa.timestamp("us", "UTC"))
    assert ts == dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=dt.UTC)
    assert parse_partition_value("", pa.int64()) is None


def test_schema_json_round_trip_all_types() -> None:
    schema = pa.schema(
        [
            pa.field("s", pa.string(), nullable=False),
            ("l", pa.int64()),
            ("i", pa.int32()),
            ("sh", pa.int16()),
            ("b", pa.int8()),
            ("f", pa.float32()),
            ("d", pa.float64()),
            ("bo", pa.bool_()),
            ("bi", pa.binary()),
            ("da", pa.date32()),
            ("ts", pa.timestamp("us", "UTC")),
            ("ntz", pa.timestamp("us")),
            ("dec", pa.decimal128(10, 3)),
            ("arr", pa.list_(pa.int32())),
            ("m", pa.map_(pa.string(), pa.int64())),
            ("st", pa.struct([("x", pa.int32())])),
        ]
    )
    text = schema_to_json(schema)
    types = {f["name"]: f["type"] for f in orjson.loads(text)["fields"]}
    assert types["l"] == "long" and types["ntz"] == "timestamp_ntz" and types["dec"] == "decimal(10,3)"
    assert types["arr"]["type"] == "array" and types["m"]["type"] == "map"
    assert schema_from_json(text).equals(schema)


def test_table_property_helpers() -> None:
    assert properties.checkpoint_interval({}) == 10
    assert properties.target_file_size({}) == 100 * 1024 * 1024
    assert properties.target_file_size({"delta.targetFileSize": "1024"}) == 1024
    assert properties.target_file_size({"delta.targetFileSize": "1024"}, 7) == 7
    for bad in ("0", "-5", "ten"):
        with pytest.raises(InvalidArgumentError, match=r"delta\.targetFileSize"):
            properties.target_file_size({"delta.targetFileSize": bad})


def test_a_remove_carries_only_the_record_count_as_delta_on_spark_writes() -> None:
    from airflow_txnlog.engine.log.actions import AddFile  # noqa: PLC0415

    stats = '{"numRecords":50,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}'
    add = AddFile(
        path="p.parquet", partition_values={}, size=10, modification_time=1, data_change=True, stats=stats
    )
    assert add.remove(deletion_timestamp=5).stats == '{"numRecords":50}'
    no_stats = AddFile(path="p.parquet", partition_values={}, size=10, modification_time=1, data_change=True)
    assert no_stats.remove(deletion_timestamp=5).stats is None
    broken = AddFile(
        path="p.parquet", partition_values={}, size=10, modification_time=1, data_change=True, stats="{oops"
    )
    assert broken.remove(deletion_timestamp=5).stats is None  # a remove is still made
