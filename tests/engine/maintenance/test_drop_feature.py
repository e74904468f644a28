"""`Table.drop_feature`, Delta 4's DROP FEATURE (fast drop): the protocol algebra on Delta's own
examples, each droppable feature on a real table (delta-rs then writes it where the feature was the
reason it could not), the barrier checkpoints and checkpointProtection of a reader-writer feature on
the Spark-written deletion-vector reference table, refusals that write nothing, and dropping
checkpointProtection by truncating history."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import polars_deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_txnlog.engine import (
    CommitConflictError,
    IdentityColumn,
    InvalidArgumentError,
    Table,
    UnsupportedFeatureError,
)
from airflow_txnlog.engine.features import feature_drop
from airflow_txnlog.engine.features.deletion_vectors import DeletionVector
from airflow_txnlog.engine.features.feature_drop import check_protocol_change, without
from airflow_txnlog.engine.log.actions import Protocol
from airflow_txnlog.engine.maintenance import drop_feature as drop_mod
from tests.cli_support import run, run_json

GOLDEN_DV = Path(__file__).parents[2] / "compat" / "golden" / "dv-partitioned-with-checkpoint"
SCHEMA = pa.schema([("id", pa.int64())])
V_KEY = "delta.requireCheckpointProtectionBeforeVersion"
BASE = ("appendOnly", "invariants")
ROW_TRACKING = {"delta.enableRowTracking": "true"}
V2_CHECKPOINTS = {"delta.checkpointPolicy": "v2"}
MAPPED = {"delta.columnMapping.mode": "name"}


@pytest.mark.parametrize(
    ("before", "feature", "protect", "after"),
    [
        (Protocol(1, 7, None, (*BASE, "checkConstraints", "inCommitTimestamp")), "inCommitTimestamp", False,
         Protocol(1, 3)),
        (Protocol(3, 7, ("deletionVectors",), (*BASE, "deletionVectors")), "deletionVectors", True,
         Protocol(1, 7, None, ("appendOnly", "checkpointProtection", "invariants"))),
        (Protocol(1, 3), "checkConstraints", False, Protocol(1, 2)),
        (Protocol(1, 7, None, ("checkpointProtection",)), "checkpointProtection", False, Protocol(1, 1)),
        (Protocol(3, 7, ("deletionVectors", "v2Checkpoint"), (*BASE, "deletionVectors", "v2Checkpoint")),
         "deletionVectors", True,
         Protocol(3, 7, ("v2Checkpoint",), (*sorted((*BASE, "checkpointProtection")), "v2Checkpoint"))),
    ],
)  # fmt: skip
def test_the_protocol_left_is_deltas(before: Protocol, feature: str, protect: bool, after: Protocol) -> None:
    """Delta's TableFeatureSupport examples: denormalize, remove (add checkpointProtection), normalize."""
    assert without(before, feature, protect=protect) == after


def _rows(root: Path) -> list[int]:
    return sorted(Table.open(str(root)).snapshot().to_arrow().column("id").to_pylist())


def _delta_rs_appends(root: Path, value: int) -> bool:
    try:
        write_deltalake(str(root), pa.table({"id": [value]}, schema=SCHEMA), mode="append")
    except Exception as exc:
        assert "Unsupported table features" in str(exc) or "feature" in str(exc).lower(), exc
        return False
    return True


def _operations(t: Table, n: int) -> list[str]:
    return [h["operation"] for h in reversed(t.history(limit=n))]


def test_in_commit_timestamps_dropped_lets_delta_rs_write(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties={"delta.enableInCommitTimestamps": "true"})
    t.write(pa.table({"id": [1]}, schema=SCHEMA))
    assert not _delta_rs_appends(root, 2)  # delta-rs 1.6: InCommitTimestamp unsupported
    result = t.drop_feature("inCommitTimestamp")
    snap = Table.open(str(root)).snapshot()
    assert "inCommitTimestamp" not in (snap.protocol.writer_features or ())
    assert snap.metadata.configuration.get("delta.enableInCommitTimestamps") == "false"
    assert not any(k.startswith("delta.inCommitTimestampEnablement") for k in snap.metadata.configuration)
    assert result.protected_before is None and V_KEY not in snap.metadata.configuration  # (writer-only)
    assert _operations(t, 2) == ["UNSET TBLPROPERTIES", "DROP FEATURE"]
    assert _delta_rs_appends(root, 2)
    assert _rows(root) == [1, 2] == sorted(DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist())


def test_domain_metadata_dropped_removes_the_domains(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA)
    txn = t.transaction("SET DOMAIN")
    txn.set_domain_metadata("my.app", '{"x": 1}')
    txn.commit()
    assert "domainMetadata" in (Table.open(str(root)).snapshot().protocol.writer_features or ())
    assert not _delta_rs_appends(root, 1)  # (delta-rs 1.6: DomainMetadata unsupported)
    t.drop_feature("domainMetadata")
    snap = Table.open(str(root)).snapshot()
    assert snap.domain_metadata() == {} and snap.protocol == Protocol(1, 2)
    assert _operations(t, 2) == ["DOMAIN METADATA CLEANUP", "DROP FEATURE"]
    assert _delta_rs_appends(root, 1)


def test_check_constraints_are_dropped_only_when_none_is_left(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA)
    t.add_constraint("positive", "id > 0")
    before = t.latest_version()
    with pytest.raises(InvalidArgumentError, match="positive"):
        t.drop_feature("checkConstraints")
    assert t.latest_version() == before
    t.drop_constraint("positive")
    t.drop_feature("checkConstraints")
    assert Table.open(str(root)).snapshot().protocol == Protocol(1, 2)


def _dv_copy(tmp_path: Path) -> Path:
    root = tmp_path / "dv"
    shutil.copytree(GOLDEN_DV, root, ignore=shutil.ignore_patterns("*.crc"))
    return root


def _col1(root: Path, version: int | None = None) -> list[int]:
    snap = Table.open(str(root)).snapshot(version=version)
    return sorted(snap.to_arrow(columns=["col1"]).column("col1").to_pylist())


def test_deletion_vectors_dropped_purges_them_behind_barrier_checkpoints(tmp_path: Path) -> None:
    """The Spark-written DV table: every DV purged (same rows), three empty commits each with a
    checkpoint, then DROP FEATURE with checkpointProtection and V = its own version, checkpointed;
    delta-rs reads the same rows; the version before the drop still reads through its DVs."""
    root = _dv_copy(tmp_path)
    t = Table.open(str(root))
    start, rows = t.latest_version(), _col1(root)
    live_dvs = {
        DeletionVector.from_wire(f.deletion_vector).relative_path()
        for f in t.snapshot().files()
        if f.deletion_vector
    }
    assert live_dvs
    result = t.drop_feature("deletionVectors")
    tombstones = [v for v in result.commits if _operation(root, v) == "Deletion Vector Tombstones"]
    assert len(tombstones) == 1  # (after the purge: the purged files' DV files, for old versions)
    assert _removed_paths(root, tombstones[0]) == live_dvs
    assert live_dvs <= {Path(p).name for p in _all_files(root)}  # (nothing deleted them)
    snap = Table.open(str(root)).snapshot()
    assert not any(f.deletion_vector for f in snap.files()) and _col1(root) == rows
    assert snap.protocol == Protocol(1, 7, None, ("checkpointProtection",))  # (Spark listed only DVs)
    assert snap.metadata.configuration[V_KEY] == str(result.version) == str(snap.version)
    assert "delta.enableDeletionVectors" not in snap.metadata.configuration  # (unset, as Delta does)
    barrier = result.commits[-4:-1]
    assert _operations(t, 4) == ["Empty Commit"] * 3 + ["DROP FEATURE"]
    log = root / "_delta_log"
    for v in [*barrier, result.version]:
        assert (log / f"{v:020d}.checkpoint.parquet").exists()
    assert sorted(DeltaTable(str(root)).to_pyarrow_table().column("col1").to_pylist()) == rows
    assert _col1(root, start) == rows  # (time travel before the drop: the DVs still apply)
    assert not _delta_rs_appends_dv(root)  # checkpointProtection: delta-rs 1.6 does not write it


def _commit(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _operation(root: Path, version: int) -> str:
    return next(a["commitInfo"]["operation"] for a in _commit(root, version) if "commitInfo" in a)


def _removed_paths(root: Path, version: int) -> set[str]:
    return {a["remove"]["path"] for a in _commit(root, version) if "remove" in a}


def _all_files(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file()]


def _delta_rs_appends_dv(root: Path) -> bool:
    dt = DeltaTable(str(root))
    batch = dt.to_pyarrow_table().slice(0, 1)
    try:
        write_deltalake(str(root), batch, mode="append")
    except Exception as exc:
        assert "checkpointProtection" in str(exc), exc
        return False
    return True


def test_checkpoint_protection_goes_with_its_history(tmp_path: Path) -> None:
    """After the DV drop: dropping checkpointProtection needs truncate_history, and is refused (nothing
    written) while commits below V are younger than 24 hours; once they are old it cleans them up,
    unsets V and leaves a legacy protocol that delta-rs writes again."""
    root = _dv_copy(tmp_path)
    t = Table.open(str(root))
    v = t.drop_feature("deletionVectors").version
    with pytest.raises(InvalidArgumentError, match="truncate_history"):
        t.drop_feature("checkpointProtection")
    latest = t.latest_version()
    with pytest.raises(UnsupportedFeatureError, match="still in the log"):
        t.drop_feature("checkpointProtection", truncate_history=True)
    assert t.latest_version() == latest
    old = time.time() - 2 * 86400
    for name in os.listdir(root / "_delta_log"):
        os.utime(root / "_delta_log" / name, (old, old))
    result = Table.open(str(root)).drop_feature("checkpointProtection", truncate_history=True)
    snap = Table.open(str(root)).snapshot()
    assert snap.protocol == Protocol(1, 1) and V_KEY not in snap.metadata.configuration
    assert not [n for n in os.listdir(root / "_delta_log") if n.endswith(".json") and int(n[:20]) < v]
    assert result.version == snap.version
    assert _delta_rs_appends_dv(root)


@pytest.mark.parametrize(
    ("properties", "feature", "error", "match"),
    [
        ({}, "appendOnly", UnsupportedFeatureError, "Delta cannot drop it either"),
        (MAPPED, "columnMapping", UnsupportedFeatureError, "cannot drop 'columnMapping' yet"),
        (ROW_TRACKING, "domainMetadata", InvalidArgumentError, "needed by 'rowTracking'"),
        ({}, "deletionVectors", InvalidArgumentError, "does not have feature"),
        ({}, "delta.appendOnly", InvalidArgumentError, "table property"),
        ({}, "noSuchFeature", InvalidArgumentError, "does not have feature"),
    ],
)  # fmt: skip
def test_refusals_write_nothing(
    tmp_path: Path, properties: dict[str, str], feature: str, error: type[Exception], match: str
) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties=properties)
    before = sorted(os.listdir(root / "_delta_log"))
    with pytest.raises(error, match=match):
        t.drop_feature(feature)
    assert sorted(os.listdir(root / "_delta_log")) == before


def test_the_cli_drops_a_feature(tmp_path: Path) -> None:
    root = tmp_path / "t"
    Table.create(str(root), schema=SCHEMA, properties={"delta.enableInCommitTimestamps": "true"})
    done = run_json("drop-feature", str(root), "inCommitTimestamp")
    assert done["feature"] == "inCommitTimestamp" and done["commits"] == [1, 2] and done["version"] == 2
    refused = run("drop-feature", str(root), "inCommitTimestamp")
    assert refused.exit_code == 1 and "does not have feature" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert Table.open(str(root)).latest_version() == 2


def test_a_restore_to_before_the_drop_brings_the_feature_back(tmp_path: Path) -> None:
    """A savepoint taken before the drop still restores: the files come back with their deletion
    vectors and the protocol with deletionVectors again (checkpointProtection kept), as Delta's
    RESTORE does; delta-rs reads the same rows."""
    root = _dv_copy(tmp_path)
    t = Table.open(str(root))
    rows = _col1(root)
    t.create_savepoint("before")
    dropped = t.drop_feature("deletionVectors")
    t.restore(savepoint="before")
    snap = Table.open(str(root)).snapshot()
    assert {"deletionVectors", "checkpointProtection"} <= set(snap.protocol.writer_features or ())
    assert snap.protocol.reader_features == ("deletionVectors",)
    assert snap.metadata.configuration[V_KEY] == str(dropped.version)  # (the protection is not lifted)
    assert any(f.deletion_vector for f in snap.files()) and _col1(root) == rows
    theirs = pa.table(DeltaTable(str(root)).scan().read_all())  # (delta-rs's scan applies DVs)
    assert sorted(theirs.column("col1").to_pylist()) == rows


def test_a_restore_after_a_drop_gives_deltas_merged_protocol(tmp_path: Path) -> None:
    """(1, 3) less checkConstraints is (1, 2); a restore to the (1, 3) version is (1, 3) again (Delta's
    protocol merge, normalized), not a table-features form of it."""
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA)
    t.add_constraint("positive", "id > 0")
    t.write(pa.table({"id": [1]}, schema=SCHEMA))
    t.create_savepoint("constrained")
    t.drop_constraint("positive")
    t.drop_feature("checkConstraints")
    assert t.snapshot().protocol == Protocol(1, 2)
    t.restore(savepoint="constrained")
    assert Table.open(str(root)).snapshot().protocol == Protocol(1, 3)


def _rival_once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, rival: Any) -> None:
    """Replace `owner.name` by a wrapper that runs `rival()` (another writer's commit) on its first call."""
    real, calls = getattr(owner, name), []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        if not calls:
            calls.append(1)
            rival()
        return out

    monkeypatch.setattr(owner, name, wrapped)


def test_a_writer_bringing_deletion_vectors_back_during_the_barrier_fails_the_drop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _dv_copy(tmp_path)
    rival = lambda: Table.open(str(root)).set_properties({"delta.enableDeletionVectors": "true"})  # noqa: E731
    _rival_once(monkeypatch, Table, "checkpoint", rival)
    with pytest.raises(CommitConflictError, match="brought deletionVectors back"):
        Table.open(str(root)).drop_feature("deletionVectors")
    assert "deletionVectors" in (Table.open(str(root)).snapshot().protocol.writer_features or ())


def test_a_writer_turning_in_commit_timestamps_on_again_fails_the_drop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    Table.create(str(root), schema=SCHEMA, properties={"delta.enableInCommitTimestamps": "true"})
    rival = lambda: Table.open(str(root)).set_properties({"delta.enableInCommitTimestamps": "true"})  # noqa: E731
    _rival_once(monkeypatch, drop_mod, "_set_conf", rival)
    with pytest.raises(CommitConflictError, match="in-commit timestamps are on"):
        Table.open(str(root)).drop_feature("inCommitTimestamp")
    assert "inCommitTimestamp" in (Table.open(str(root)).snapshot().protocol.writer_features or ())


def test_a_commit_between_reading_and_dropping_is_kept_and_v_is_the_drops_own_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _dv_copy(tmp_path)
    retention = {"delta.logRetentionDuration": "interval 60 days"}
    _rival_once(monkeypatch, feature_drop, "without", lambda: Table.open(str(root)).set_properties(retention))
    result = Table.open(str(root)).drop_feature("deletionVectors")
    snap = Table.open(str(root)).snapshot()
    assert snap.metadata.configuration["delta.logRetentionDuration"] == "interval 60 days"
    assert snap.metadata.configuration[V_KEY] == str(result.version) == str(snap.version)


def test_truncate_history_must_be_a_bool_and_names_are_matched_as_delta_matches_them(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties={"delta.enableInCommitTimestamps": "true"})
    with pytest.raises(InvalidArgumentError, match="truncate_history"):
        t.drop_feature("inCommitTimestamp", truncate_history="false")  # type: ignore[arg-type]
    assert t.latest_version() == 0
    assert t.drop_feature("INCOMMITTIMESTAMP").feature == "inCommitTimestamp"


@pytest.mark.parametrize(
    ("current", "new", "dropping"),
    [
        (Protocol(1, 7, None, (*BASE, "checkpointProtection", "inCommitTimestamp")), Protocol(1, 2),
         "inCommitTimestamp"),  # (checkpointProtection lost too)
        (Protocol(1, 2), Protocol(1, 7, None, (*BASE, "checkpointProtection")), "deletionVectors"),
        (Protocol(3, 7, ("deletionVectors",), (*BASE, "deletionVectors")), Protocol(3, 7, (), BASE), None),
    ],
)  # fmt: skip
def test_a_commit_may_not_lose_more_than_the_feature_it_drops(
    current: Protocol, new: Protocol, dropping: str | None
) -> None:
    with pytest.raises(InvalidArgumentError):
        check_protocol_change(current, new, dropping)
    check_protocol_change(
        Protocol(1, 7, None, ("appendOnly", "checkConstraints", "invariants")), Protocol(1, 3), None
    )


def test_row_tracking_then_domain_metadata_dropped_lets_delta_rs_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row tracking off and suspended, every file re-added without row ids (in batches: 2 files a
    commit here), then the drop commit without its properties and its domain. domainMetadata stays
    (as in Delta), and delta-rs 1.6 writes neither; once it is dropped too, delta-rs writes."""
    monkeypatch.setattr(drop_mod, "UNBACKFILL_BATCH", 2)
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties=ROW_TRACKING)
    for i in range(3):
        t.write(pa.table({"id": [i]}, schema=SCHEMA))
    assert all(f.base_row_id is not None for f in t.snapshot().files())
    assert not _delta_rs_appends(root, 9)
    result = t.drop_feature("rowTracking")
    snap = Table.open(str(root)).snapshot()
    assert "rowTracking" not in (snap.protocol.writer_features or ())
    assert "domainMetadata" in (snap.protocol.writer_features or ())
    assert "delta.rowTracking" not in snap.domain_metadata()
    assert not any(
        k.startswith("delta.rowTracking") or k == "delta.enableRowTracking"
        for k in snap.metadata.configuration
    )
    assert not any(
        f.base_row_id is not None or f.default_row_commit_version is not None for f in snap.files()
    )
    assert [_operation(root, v) for v in result.commits].count("ROW TRACKING UNBACKFILL") == 2
    assert _rows(root) == [0, 1, 2]
    assert not _delta_rs_appends(root, 9)  # (DomainMetadata)
    t.drop_feature("domainMetadata")
    assert _delta_rs_appends(root, 9)
    assert _rows(root) == [0, 1, 2, 9]


def test_type_widening_dropped_rewrites_the_files_written_before_the_change(tmp_path: Path) -> None:
    """A table whose `id` went from INT to BIGINT as Delta 4 records it (by hand: the protocol with
    typeWidening, the schema's delta.typeChanges): the INT files are rewritten as BIGINT, the
    records and the property go, then the protected drop; the rows stay, delta-rs reads them."""
    root = tmp_path / "t"
    t = Table.create(str(root), schema=pa.schema([("id", pa.int32())]))
    t.write(pa.table({"id": pa.array([1, 2], pa.int32())}))
    snap = t.snapshot()
    tree = json.loads(snap.metadata.schema_string)
    tree["fields"][0]["type"] = "long"
    tree["fields"][0]["metadata"] = {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    meta = snap.metadata.to_wire()["metaData"] | {"schemaString": json.dumps(tree)}
    meta["configuration"] = {"delta.enableTypeWidening": "true"}
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["typeWidening"]}
    protocol["writerFeatures"] = [*BASE, "typeWidening"]
    widen = [{"commitInfo": {"operation": "CHANGE COLUMN"}}, {"protocol": protocol}, {"metaData": meta}]
    (root / "_delta_log" / f"{2:020d}.json").write_text("\n".join(json.dumps(a) for a in widen) + "\n")
    Table.open(str(root)).write(pa.table({"id": pa.array([3], pa.int64())}))
    assert _rows(root) == [1, 2, 3]
    result = Table.open(str(root)).drop_feature("typeWidening")
    snap = Table.open(str(root)).snapshot()
    assert (
        "typeWidening" not in (snap.protocol.writer_features or ()) and snap.protocol.reader_features is None
    )
    assert "delta.typeChanges" not in snap.metadata.schema_string and snap.metadata.configuration.get(V_KEY)
    assert "delta.enableTypeWidening" not in snap.metadata.configuration
    footers = [pq.read_schema(root / f.path).field("id").type for f in snap.files()]
    assert footers == [pa.int64()] * len(footers) and len(footers) == 2
    assert (
        _rows(root) == [1, 2, 3] == sorted(DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist())
    )
    assert result.protected_before == result.version


def test_v2_checkpoints_dropped_leave_classic_checkpoints_readers_start_from(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=SCHEMA, properties=V2_CHECKPOINTS)
    t.write(pa.table({"id": [1, 2]}, schema=SCHEMA))
    t.checkpoint()
    log = root / "_delta_log"
    assert [n for n in os.listdir(log) if ".checkpoint." in n and n.count(".") == 3]  # a UUID-named V2 one
    result = t.drop_feature("v2Checkpoint")
    snap = Table.open(str(root)).snapshot()
    assert "v2Checkpoint" not in (snap.protocol.reader_features or ()) + (snap.protocol.writer_features or ())
    assert snap.metadata.configuration["delta.checkpointPolicy"] == "classic"
    assert result.protected_before == result.version  # a reader-writer feature: history protected
    newest = max(int(n[:20]) for n in os.listdir(log) if ".checkpoint" in n)
    assert newest == result.version and (log / f"{newest:020d}.checkpoint.parquet").exists()
    for v in range(result.version - 3, result.version + 1):  # the barriers' and the drop's: classic
        assert (log / f"{v:020d}.checkpoint.parquet").exists(), v
    t.write(pa.table({"id": [3]}, schema=SCHEMA))
    assert _rows(root) == [1, 2, 3]
    assert sorted(pa.table(DeltaTable(str(root)).scan().read_all()).column("id").to_pylist()) == [1, 2, 3]
    kernel = polars_deltalake.read_delta(str(root))
    assert sorted(kernel["id"].to_list()) == [1, 2, 3]


def test_identity_and_generated_columns_drop_once_no_column_uses_them(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("v2", pa.int64())])
    t = Table.create(
        str(root), schema=schema, properties=MAPPED, identity_columns={"id": IdentityColumn(start=1, step=1)},
        generated_columns={"v2": "v * 2"},
    )  # fmt: skip
    t.write(pa.table({"v": [1, 2]}, schema=pa.schema([("v", pa.int64())])))
    before = t.latest_version()
    for feature, column in (("identityColumns", "id"), ("generatedColumns", "v2")):
        with pytest.raises(InvalidArgumentError, match=f"used by column.*{column}"):
            t.drop_feature(feature)
    assert t.latest_version() == before  # refused: nothing written
    with pytest.raises(Exception, match=r"(?i)identity|feature"):  # delta-rs 1.6 does not write identity
        write_deltalake(str(root), pa.table({"v": [3]}, schema=pa.schema([("v", pa.int64())])), mode="append")
    t.drop_columns(["id", "v2"])
    for feature in ("identityColumns", "generatedColumns"):
        result = t.drop_feature(feature)
        assert result.protected_before is None  # writer features: one commit
        assert feature not in (t.snapshot().protocol.writer_features or ())
    write_deltalake(str(root), pa.table({"v": [3]}, schema=pa.schema([("v", pa.int64())])), mode="append")
    assert sorted(pa.table(DeltaTable(str(root)).scan().read_all()).column("v").to_pylist()) == [1, 2, 3]
