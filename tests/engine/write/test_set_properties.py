"""`Table.set_properties` (engine.features.table_features): properties merge into the configuration and the
protocol grows to the table features they turn on, as Delta's ALTER TABLE SET TBLPROPERTIES does;
a downgrade or a feature the engine cannot honor is refused with nothing written."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import (
    AppendOnlyViolationError,
    InvalidArgumentError,
    Table,
    UnsupportedFeatureError,
)

SCHEMA = pa.schema([("id", pa.int64())])


def _table(tmp_path: Path) -> Table:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(pa.table({"id": [1, 2]}, schema=SCHEMA))
    return t


def _commits(t: Table) -> int:
    return len(list((Path(t.uri) / "_delta_log").glob("*.json")))


def test_a_plain_property_keeps_the_protocol(tmp_path: Path) -> None:
    t = _table(tmp_path)
    v = t.set_properties({"delta.logRetentionDuration": "interval 60 days", "owner.team": "lake"})
    snap = t.snapshot()
    assert v == 2 and snap.version == 2
    assert snap.metadata.configuration["owner.team"] == "lake"
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (1, 2)
    info = json.loads((Path(t.uri) / "_delta_log" / f"{2:020d}.json").read_text().splitlines()[0])
    assert info["commitInfo"]["operation"] == "SET TBLPROPERTIES"
    deltalake = pytest.importorskip("deltalake")
    assert deltalake.DeltaTable(t.uri).metadata().configuration["owner.team"] == "lake"


def test_append_only_is_implied_by_writer_version_2(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.set_properties({"delta.appendOnly": "true"})
    snap = t.snapshot()
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (1, 2)
    txn = t.transaction("DELETE")
    txn.remove(snap.files()[0])
    with pytest.raises(AppendOnlyViolationError):
        txn.commit()


@pytest.mark.parametrize(
    ("prop", "feature"),
    [
        ({"delta.enableDeletionVectors": "true"}, "deletionVectors"),
        ({"delta.enableTypeWidening": "true"}, "typeWidening"),
        ({"delta.checkpointPolicy": "v2"}, "v2Checkpoint"),
        ({"delta.feature.deletionVectors": "supported"}, "deletionVectors"),
    ],
)
def test_a_feature_property_upgrades_to_table_features(
    tmp_path: Path, prop: dict[str, str], feature: str
) -> None:
    t = _table(tmp_path)
    t.set_properties(prop)
    snap = t.snapshot()
    p = snap.protocol
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert p.reader_features == (feature,)
    # the legacy writer version 2 implied appendOnly and invariants: they stay supported
    assert p.writer_features == tuple(sorted({"appendOnly", "invariants", feature}))
    assert not any(k.startswith("delta.feature.") for k in snap.metadata.configuration)
    t.write(pa.table({"id": [3]}, schema=SCHEMA))  # still writable: the engine honors the feature
    t.checkpoint()
    fresh = Table.open(t.uri).snapshot()
    assert fresh.protocol == p and sorted(fresh.to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_the_protocol_is_never_downgraded(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.set_properties({"delta.enableDeletionVectors": "true"})
    before = _commits(t)
    with pytest.raises(InvalidArgumentError, match="downgrade"):
        t.set_properties({"delta.minWriterVersion": "2"})
    t.set_properties({"delta.enableDeletionVectors": "false"})  # the property off, the feature kept
    assert t.snapshot().protocol.reader_features == ("deletionVectors",)
    assert _commits(t) == before + 1


@pytest.mark.parametrize(
    ("prop", "feature"),
    [
        ({"delta.feature.liquid": "supported"}, "liquid"),
        ({"delta.columnMapping.mode": "id"}, "columnMapping"),
        ({"delta.feature.variantShredding": "supported"}, "variantShredding"),
        ({"delta.minReaderVersion": "4"}, "delta.minReaderVersion"),
    ],
)
def test_features_it_cannot_honor_are_refused(tmp_path: Path, prop: dict[str, str], feature: str) -> None:
    t = _table(tmp_path)
    before = _commits(t)
    with pytest.raises(UnsupportedFeatureError) as info:
        t.set_properties(prop)
    assert info.value.feature == feature
    assert _commits(t) == before


def test_bad_values_are_refused(tmp_path: Path) -> None:
    t = _table(tmp_path)
    with pytest.raises(InvalidArgumentError, match="empty"):
        t.set_properties({})
    with pytest.raises(InvalidArgumentError, match="interval"):
        t.set_properties({"delta.deletedFileRetentionDuration": "forever"})
    with pytest.raises(InvalidArgumentError):
        t.set_properties({"delta.appendOnly": 1})  # type: ignore[dict-item]
    assert _commits(t) == 2


def test_a_metadata_change_cannot_skip_the_protocol(tmp_path: Path) -> None:
    t = _table(tmp_path)
    txn = t.transaction("SET TBLPROPERTIES")
    meta = txn.snapshot.metadata
    txn.update_metadata(dataclasses.replace(meta, configuration={"delta.enableDeletionVectors": "true"}))
    with pytest.raises(UnsupportedFeatureError, match=r"Help: use Table\.set_properties"):
        txn.commit()


def test_create_with_a_feature_property(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    p = t.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version, p.reader_features) == (3, 7, ("deletionVectors",))


def test_change_data_feed_is_a_writer_feature(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.set_properties({"delta.enableChangeDataFeed": "true"})
    p = t.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version) == (1, 7)
    assert p.writer_features == ("appendOnly", "changeDataFeed", "invariants")
    t.write(pa.table({"id": [3]}, schema=SCHEMA))  # an append: its feed is inferred from the add
    assert [r["id"] for r in t.changes(3).to_pylist()] == [3]


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"delta.minReaderVersion": "3"}, (3, 7, (), ("appendOnly", "invariants"))),
        ({"delta.minReaderVersion": "2"}, (2, 5, None, None)),
        (
            {"delta.feature.vacuumProtocolCheck": "supported"},
            (3, 7, ("vacuumProtocolCheck",), ("appendOnly", "invariants", "vacuumProtocolCheck")),
        ),
    ],
)
def test_version_properties_keep_the_protocol_rules(
    tmp_path: Path, prop: dict[str, str], expected: tuple[object, ...]
) -> None:
    # reader features live at reader 3 / writer 7 and are writer features too; reader 2 needs writer 5
    t = _table(tmp_path)
    t.set_properties(prop)
    p = t.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version, p.reader_features, p.writer_features) == expected
