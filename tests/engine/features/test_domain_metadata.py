"""Domain metadata (issue 28, item 1): written through a transaction, kept by replay and checkpoints,
conflict-checked per domain, `delta.*` domains refused, other readers still read the table."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import (
    ConcurrentDomainMetadataError,
    ConcurrentTransactionError,
    InvalidArgumentError,
    Table,
)
from airflow_txnlog.engine.features.table_features import with_writer_feature

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _table(path: Path) -> Table:
    t = Table.create(str(path), schema=SCHEMA)
    t.write(pa.table({"id": [1, 2], "name": ["a", "b"]}))
    return t


def _commit(t: Table, version: int) -> list[dict[str, object]]:
    return [
        orjson.loads(line)
        for line in (Path(t.uri) / "_delta_log" / f"{version:020d}.json").read_bytes().splitlines()
    ]


def test_a_domain_is_written_as_the_protocol_says_and_read_back(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    config = json.dumps({"owner": "team-a", "tier": 2})
    with t.transaction("SET DOMAIN METADATA") as txn:
        txn.set_domain_metadata("com.example.ownership", config)
        txn.commit()
    version = t.latest_version()
    actions = _commit(t, version)
    assert {
        "domainMetadata": {"domain": "com.example.ownership", "configuration": config, "removed": False}
    } in actions
    protocol = next(
        a["protocol"] for a in actions if "protocol" in a
    )  # the feature, added in the same commit
    assert protocol["minWriterVersion"] == 7 and "domainMetadata" in protocol["writerFeatures"]
    assert Table.open(t.uri).snapshot().domain_metadata() == {"com.example.ownership": config}
    # other readers still read the rows (delta-rs, and polars-deltalake on delta-kernel-rs)
    assert DeltaTable(t.uri).to_pyarrow_table().sort_by("id").column("id").to_pylist() == [1, 2]
    assert sorted(pl.read_delta(t.uri)["id"].to_list()) == [1, 2]


def test_domains_survive_other_writes_and_checkpoints_and_removal_deletes_them(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    with t.transaction("SET DOMAIN METADATA") as txn:
        txn.set_domain_metadata("a.one", "1")
        txn.set_domain_metadata("b.two", "first")
        txn.set_domain_metadata("b.two", "2")  # the last call per domain wins: one action
        txn.commit()
    assert sum("domainMetadata" in a for a in _commit(t, t.latest_version())) == 2
    t.write(pa.table({"id": [3], "name": ["c"]}))
    t.checkpoint()
    t.write(pa.table({"id": [4], "name": ["d"]}))
    assert Table.open(t.uri).snapshot().domain_metadata() == {"a.one": "1", "b.two": "2"}
    with t.transaction("REMOVE DOMAIN METADATA") as txn:
        txn.remove_domain_metadata("a.one")
        txn.commit()
    t.checkpoint()
    fresh = Table.open(t.uri).snapshot()
    assert fresh.domain_metadata() == {"b.two": "2"} and fresh.checkpoint_version == fresh.version
    assert Table.open(t.uri).snapshot(version=3).domain_metadata() == {"a.one": "1", "b.two": "2"}


def test_two_concurrent_changes_of_one_domain_conflict_and_of_two_domains_both_land(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    with t.transaction("SET DOMAIN METADATA") as txn:  # (the protocol gains the feature first: the
        txn.set_domain_metadata("setup", "1")  # racers below change no protocol, only domains)
        txn.commit()
    snap = t.snapshot()
    first = t.transaction("SET DOMAIN METADATA", snapshot=snap)
    first.set_domain_metadata("shared", "mine")
    second = t.transaction("SET DOMAIN METADATA", snapshot=snap)
    second.set_domain_metadata("shared", "theirs")
    other = t.transaction("SET DOMAIN METADATA", snapshot=snap)
    other.set_domain_metadata("elsewhere", "x")
    first.commit()
    with pytest.raises(ConcurrentDomainMetadataError, match="domain 'shared'") as info:
        second.commit()
    assert str(info.value).count("Help:") == 1 and isinstance(info.value, ConcurrentTransactionError)
    other.commit()  # a different domain: no conflict
    assert Table.open(t.uri).snapshot().domain_metadata() == {
        "elsewhere": "x",
        "setup": "1",
        "shared": "mine",
    }


def test_a_concurrent_plain_append_does_not_conflict_with_a_domain_change(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    txn = t.transaction("SET DOMAIN METADATA", snapshot=t.snapshot())
    txn.set_domain_metadata("d", "v")
    Table.open(t.uri).write(pa.table({"id": [9], "name": ["z"]}))
    txn.commit()
    assert Table.open(t.uri).snapshot().domain_metadata() == {"d": "v"}


@pytest.mark.parametrize(
    ("domain", "configuration", "message"),
    [
        ("delta.rowTracking", "{}", "reserved"),
        ("DELTA.clustering", "{}", "reserved"),
        ("", "x", "non-empty string"),
        (None, "x", "non-empty string"),
        ("ok", None, "configuration"),
        ("ok", {"a": 1}, "configuration"),
    ],
)
def test_bad_domains_are_refused_and_nothing_is_written(
    tmp_path: Path, domain: object, configuration: object, message: str
) -> None:
    t = _table(tmp_path / "t")
    before = t.latest_version()
    with pytest.raises(InvalidArgumentError, match=message), t.transaction("SET DOMAIN METADATA") as txn:
        txn.set_domain_metadata(domain, configuration)  # type: ignore[arg-type]
        txn.commit()
    assert Table.open(t.uri).latest_version() == before


def test_removing_a_domain_the_table_does_not_have_is_refused(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match="no metadata domain 'ghost'"), t.transaction("X") as txn:
        txn.remove_domain_metadata("ghost")
        txn.commit()
    with pytest.raises(InvalidArgumentError, match="reserved"), t.transaction("X") as txn:
        txn.remove_domain_metadata("delta.clustering")
        txn.commit()


def test_a_table_with_domains_another_writer_made_stays_writable_and_keeps_them(tmp_path: Path) -> None:
    """A domain this engine does not understand (a `delta.*` one too) is kept untouched."""
    t = _table(tmp_path / "t")
    log = Path(t.uri) / "_delta_log"
    foreign = {"domain": "delta.someFutureFeature", "configuration": '{"k":1}', "removed": False}
    protocol = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["appendOnly", "invariants", "domainMetadata"],
    }
    commit = [
        {"commitInfo": {"timestamp": 1, "operation": "OTHER"}},
        {"protocol": protocol},
        {"domainMetadata": foreign},
    ]
    (log / f"{2:020d}.json").write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in commit))
    t = Table.open(t.uri)
    t.write(pa.table({"id": [5], "name": ["e"]}))
    t.checkpoint()
    assert Table.open(t.uri).snapshot().domain_metadata() == {"delta.someFutureFeature": '{"k":1}'}
    assert DeltaTable(t.uri).to_pyarrow_table().num_rows == 3


def test_the_feature_can_be_named_by_its_property(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    t.set_properties({"delta.feature.domainMetadata": "supported"})
    assert "domainMetadata" in (Table.open(t.uri).snapshot().protocol.writer_features or ())


def test_a_protocol_set_after_a_domain_keeps_the_domain_feature(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")  # (1, 2)
    with t.transaction("X") as txn:
        txn.set_domain_metadata("a", "1")
        txn.update_protocol(with_writer_feature(txn.snapshot.protocol, "checkConstraints"))  # (1, 3)
        txn.commit()
    protocol = Table.open(t.uri).snapshot().protocol
    assert protocol.min_writer_version == 7
    assert {"domainMetadata", "checkConstraints", "invariants", "appendOnly"} <= set(
        protocol.writer_features or ()
    )


def test_restore_keeps_the_current_domains(tmp_path: Path) -> None:
    """As Delta's RESTORE: domains are not part of what a restore brings back (documented)."""
    t = _table(tmp_path / "t")
    with t.transaction("X") as txn:
        txn.set_domain_metadata("watermark", "1")
        txn.commit()
    target = t.latest_version()
    with t.transaction("X") as txn:
        txn.set_domain_metadata("watermark", "2")
        txn.commit()
    t.restore(version=target)
    assert Table.open(t.uri).snapshot().domain_metadata() == {"watermark": "2"}
