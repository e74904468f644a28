"""Properties are checked when set (issue 38): Delta's keys in their own spelling, unknown `delta.*`
keys refused (DELTA_UNKNOWN_CONFIGURATION), keys Delta defines but the engine does not honour refused
by name unless they hold their no-effect value, `txnlog.maintenance.*` parsed and range-checked, and
UNSET for what was recorded before. Each refusal writes nothing (the log's files compared); keys a
table another engine wrote already holds stay readable and writable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table, TxnLogError, UnsupportedFeatureError
from airflow_txnlog.engine import properties as props
from tests.conftest import SCHEMA, rows


def _log(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "_delta_log").iterdir())


@pytest.fixture
def table(tmp_path: Path) -> Table:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1, 2]))
    return t


def _refused(table: Table, properties: dict[str, str], error: type[TxnLogError], match: str) -> None:
    before = _log(Path(table.uri))
    with pytest.raises(error, match=match):
        table.set_properties(properties)
    assert _log(Path(table.uri)) == before


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("delta.enableRowTrackng", "Did you mean 'delta.enableRowTracking'"),
        ("delta.checkpointIntervall", "Did you mean 'delta.checkpointInterval'"),
        ("delta.somethingElse", "DELTA_UNKNOWN_CONFIGURATION"),
    ],
)
def test_an_unknown_delta_key_is_refused_with_a_hint(table: Table, key: str, hint: str) -> None:
    _refused(table, {key: "true"}, InvalidArgumentError, f"unknown Delta table property '{key}'.*{hint}")
    assert key not in Table.open(table.uri).snapshot().metadata.configuration


def test_an_unknown_delta_key_is_refused_at_create(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"Did you mean 'delta\.appendOnly'"):
        Table.create(str(tmp_path / "t"), schema=SCHEMA, properties={"delta.apendOnly": "true"})
    assert not (tmp_path / "t").exists()


def test_delta_keys_are_stored_in_their_own_spelling(tmp_path: Path) -> None:
    """As Delta on Spark: keys match without regard to case, and are stored as Delta spells them."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties={"DELTA.CHECKPOINTINTERVAL": "3"})
    t.set_properties({"delta.appendonly": "true", "my.Own.Key": "kept as given"})
    conf = Table.open(t.uri).snapshot().metadata.configuration
    assert conf == {
        "delta.checkpointInterval": "3",
        "delta.appendOnly": "true",
        "my.Own.Key": "kept as given",
    }
    protocol = Table.open(t.uri).snapshot().protocol  # (appendOnly: writer version 2, or the feature)
    assert protocol.min_writer_version >= 2 or "appendOnly" in (protocol.writer_features or ())


def test_one_key_twice_in_two_spellings_is_refused(table: Table) -> None:
    _refused(table, {"delta.appendOnly": "true", "delta.APPENDONLY": "false"}, InvalidArgumentError, "twice")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delta.autoOptimize.optimizeWrite", "true"),
        ("delta.randomizeFilePrefixes", "true"),
        ("delta.isolationLevel", "WriteSerializable"),
        ("delta.universalFormat.config.iceberg.x", "1"),
        ("delta.setTransactionRetentionDuration", "interval 7 days"),
        ("delta.enableExpiredLogCleanup", "false"),
        ("delta.coordinatedCommits.commitCoordinator-preview", "dynamodb"),
    ],
)
def test_a_key_delta_defines_but_the_engine_does_not_honour_is_refused_by_name(
    table: Table, key: str, value: str
) -> None:
    _refused(table, {key: value}, UnsupportedFeatureError, f"{key}.*does not honour")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delta.autoOptimize.optimizeWrite", "false"),
        ("delta.isolationLevel", "Serializable"),
        ("delta.enableIcebergCompatV2", "false"),
        ("delta.enableExpiredLogCleanup", "true"),
    ],
)
def test_the_no_effect_value_of_such_a_key_is_accepted(table: Table, key: str, value: str) -> None:
    version = table.set_properties({key: value})
    assert Table.open(table.uri).snapshot().metadata.configuration[key] == value and version == 2


@pytest.mark.parametrize(
    "key", ["delta.columnMapping.maxColumnId", "delta.inCommitTimestampEnablementVersion"]
)
def test_keys_the_engine_writes_itself_cannot_be_set(table: Table, key: str) -> None:
    _refused(table, {key: "5"}, InvalidArgumentError, "cannot be set")


def _as_another_engine_wrote_it(table: Table, extra: dict[str, str]) -> None:
    """Rewrite version 0's metaData as a writer that records keys this engine refuses would."""
    first = Path(table.uri) / "_delta_log" / f"{0:020d}.json"
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    for action in lines:
        if "metaData" in action:
            action["metaData"]["configuration"].update(extra)
    first.write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def test_keys_another_engine_wrote_stay_readable_and_writable(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    foreign = {"delta.autoOptimize.optimizeWrite": "true", "delta.tuneFileSizesForRewrites": "true"}
    _as_another_engine_wrote_it(t, foreign)
    t = Table.open(t.uri)
    t.write(rows([1]))
    t.set_properties({"delta.checkpointInterval": "5"})
    conf = Table.open(t.uri).snapshot().metadata.configuration
    assert {k: conf[k] for k in foreign} == foreign and conf["delta.checkpointInterval"] == "5"
    assert Table.open(t.uri).snapshot().to_arrow().column("id").to_pylist() == [1]


def test_unset_removes_a_recorded_typo(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    _as_another_engine_wrote_it(
        t, {"delta.enableRowTrackng": "true", "txnlog.maintenance.quietMinutes": "abc"}
    )
    t = Table.open(t.uri)
    version = t.unset_properties(["delta.enableRowTrackng", "txnlog.maintenance.quietMinutes"])
    assert version == 1 and Table.open(t.uri).snapshot().metadata.configuration == {}
    assert Table.open(t.uri).history(1)[0]["operation"] == "UNSET TBLPROPERTIES"
    assert t.unset_properties(["delta.enableRowTrackng"], if_exists=True) is None
    assert Table.open(t.uri).latest_version() == 1


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ("delta.notSet", "has no property 'delta.notSet'.*if_exists=True"),
        ("delta.columnMapping.mode", "cannot be unset: column mapping"),
        ("delta.enableChangeDataFeed", "set it to 'false'"),
        ("delta.constraints.positive", "drop_constraint"),
    ],
)
def test_unset_refuses_what_would_break_the_table(tmp_path: Path, key: str, match: str) -> None:
    t = Table.create(
        str(tmp_path / "t"), schema=SCHEMA,
        properties={"delta.columnMapping.mode": "name", "delta.enableChangeDataFeed": "true"},
    )  # fmt: skip
    t.add_constraint("positive", "id > 0")
    before = _log(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match=match):
        t.unset_properties([key])
    assert _log(tmp_path / "t") == before


@pytest.mark.parametrize(
    ("properties", "match"),
    [
        ({"txnlog.maintenance.quietMinutes": "abc"}, "quietMinutes must be a finite float, got 'abc'"),
        ({"txnlog.maintenance.quietMinutes": "nan"}, "finite float"),
        ({"txnlog.maintenance.quietMinutes": "-5"}, "must be >= 0"),
        ({"txnlog.maintenance.smallFraction": "1.5"}, r"smallFraction must be > 0 and <= 1"),
        ({"txnlog.maintenance.smallFraction": "0"}, r"smallFraction must be > 0"),
        ({"txnlog.maintenance.minInputFiles": "1"}, "minInputFiles must be >= 2"),
        ({"txnlog.maintenance.minInputFiles": "2.5"}, "finite int"),
        ({"txnlog.maintenance.quietMinute": "5"}, "Did you mean 'txnlog.maintenance.quietMinutes'"),
    ],
)
def test_maintenance_properties_are_parsed_when_set(
    table: Table, properties: dict[str, str], match: str
) -> None:
    _refused(table, properties, InvalidArgumentError, match)


def test_maintenance_properties_are_checked_at_create(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="largeFraction must be >= 1"):
        Table.create(
            str(tmp_path / "t"), schema=SCHEMA, properties={"txnlog.maintenance.largeFraction": "0.5"}
        )
    assert not (tmp_path / "t").exists()


def test_an_argument_overrides_a_malformed_property_already_recorded(tmp_path: Path) -> None:
    """A table whose quietMinutes was recorded before values were checked still plans with an override."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    _as_another_engine_wrote_it(t, {"txnlog.maintenance.quietMinutes": "abc"})
    t = Table.open(t.uri)
    with pytest.raises(InvalidArgumentError, match="quietMinutes must be a finite float"):
        t.plan_maintenance()
    assert t.plan_maintenance(quiet_minutes=0).settings.quiet_minutes == 0


def test_a_good_maintenance_property_reaches_the_plan(table: Table) -> None:
    table.set_properties({"txnlog.maintenance.quietMinutes": "7.5", "txnlog.maintenance.minInputFiles": "9"})
    settings = Table.open(table.uri).plan_maintenance().settings
    assert (settings.quiet_minutes, settings.min_input_files, settings.min_files_removed) == (7.5, 9, 8)


def test_every_key_delta_defines_is_honoured_or_refused() -> None:
    """The catalogue names each key of Delta on Spark's DeltaConfigs once, as honoured, engine-written
    or refused (a key in none of them would be refused as unknown although Delta defines it)."""
    known = {k.lower() for k in (*props.HONORED, *props.MANAGED, *props.NOT_HONORED)}
    deltaconfigs = [
        "minReaderVersion",
        "minWriterVersion",
        "ignoreProtocolDefaults",
        "logRetentionDuration",
        "sampleRetentionDuration",
        "checkpointRetentionDuration",
        "checkpointInterval",
        "redirectReaderWriter-preview",
        "redirectWriterOnly-preview",
        "autoOptimize.autoCompact",
        "enableExpiredLogCleanup",
        "enableFullRetentionRollback",
        "dropFeatureTruncateHistory.retentionDuration",
        "deletedFileRetentionDuration",
        "randomizeFilePrefixes",
        "randomPrefixLength",
        "appendOnly",
        "enableDeletionVectors",
        "parquet.format.version",
        "enableVariantShredding",
        "autoOptimize",
        "dataSkippingNumIndexedCols",
        "dataSkippingStatsColumns",
        "dataSkippingStringPrefixLength",
        "compatibility.symlinkFormatManifest.enabled",
        "checkpoint.writeStatsAsJson",
        "checkpoint.writeStatsAsStruct",
        "enableChangeDataCapture",
        "enableChangeDataFeed",
        "columnMapping.mode",
        "columnMapping.maxColumnId",
        "setTransactionRetentionDuration",
        "isolationLevel",
        "checkpointPolicy",
        "enableRowTracking",
        "rowTrackingSuspended",
        "universalFormat.enabledFormats",
        "enableIcebergCompatV1",
        "enableIcebergCompatV2",
        "enableIcebergCompatV3",
        "universalFormat.iceberg.atomicConversion.supported",
        "castIcebergTimeType",
        "ignoreIcebergBucketPartition",
        "autoOptimize.optimizeWrite",
        "enableTypeWidening",
        "coordinatedCommits.commitCoordinator-preview",
        "coordinatedCommits.commitCoordinatorConf-preview",
        "coordinatedCommits.tableConf-preview",
        "enableInCommitTimestamps",
        "inCommitTimestampEnablementVersion",
        "inCommitTimestampEnablementTimestamp",
        "requireCheckpointProtectionBeforeVersion",
        "enableMaterializePartitionColumnsFeature",
        "writePartitionColumnsToParquet",
    ]  # fmt: skip  (delta-io/delta spark/.../DeltaConfig.scala, every buildConfig key)
    assert [k for k in deltaconfigs if f"delta.{k}".lower() not in known] == []
