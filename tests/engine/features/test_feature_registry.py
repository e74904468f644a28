"""One place for each concept: the feature registry (engine.feature_registry) and the typed table
properties (engine.properties.TableProperties).

The registry is the only list of table features: the supported reader, writer and checkpoint sets,
the legacy implications and the features properties turn on derive from it, and the feature tables
of docs/engine.md must say what it says. The sets are also pinned to the ones the engine had when
they were written out by hand, so moving them into the registry changed no behaviour.
`TableProperties` parses a configuration once, each value on first use: a malformed value raises
`InvalidArgumentError` naming its key only when it is read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, Protocol, Table, UnsupportedFeatureError
from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.features import (
    clustering,
    domain_metadata,
    generated,
    row_tracking,
    table_features,
    type_widening,
    variant,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "engine.md"
SCHEMA = pa.schema([("id", pa.int64())])
LEGACY_WRITERS = ("appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns")
LEGACY_WRITERS += ("columnMapping", "identityColumns")


def _table(heading: str) -> list[list[str]]:
    """The rows (cells) of the first table after `heading` in docs/engine.md."""
    text = DOC.read_text()
    lines = text[text.index(heading) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def _top_level_names(text: str) -> list[str]:
    """The backticked names outside parentheses; `name` (and `-preview`...) adds `name-preview`."""
    names: list[str] = []
    depth = 0
    for m in re.finditer(r"\(|\)|`([^`]+)`", text):
        if m.group(0) == "(":
            if depth == 0 and text.startswith("(and `-preview`", m.start()):
                names.append(names[-1] + "-preview")
            depth += 1
        elif m.group(0) == ")":
            depth -= 1
        elif depth == 0:
            names.append(m.group(1))
    return names


def _writer_rows() -> dict[str, list[str]]:
    """Feature name -> its row of "Writer features, one by one" (rows naming no feature left out)."""
    out = {}
    for row in _table("### Writer features, one by one"):
        for name in _top_level_names(row[0].split(" (", 1)[0]):
            out[name] = row
    return out


def test_the_writer_feature_table_has_one_row_per_registry_entry() -> None:
    rows = _writer_rows()
    assert set(rows) == {f.name for f in registry.FEATURES}
    for feature in registry.FEATURES:
        first, _create, commit, checkpoint = rows[feature.name]
        if feature.switch:  # (`key=value`, as the row names the property)
            assert f"`{feature.enabled_by}`" in first, feature.name
        assert commit.startswith("refused") == (not feature.writes), feature.name
        assert checkpoint.startswith("refused") == (not feature.checkpoints), feature.name


def test_the_protocol_table_lists_what_the_registry_supports() -> None:
    rows = {row[0]: row[1] for row in _table("## Protocol support")}
    readers = _top_level_names(rows["reader"])
    assert set(readers) == table_features.SUPPORTED_READER_FEATURES and len(readers) == len(set(readers))
    legacy, _, version_7 = rows["writer"].partition(", 7 with features ")
    assert set(_top_level_names(version_7)) == table_features.SUPPORTED_WRITER_FEATURES
    legacy_listed = re.findall(r"`([^`]+)`", legacy.split("(", 1)[1])
    assert set(legacy_listed) == {f.name for f in registry.FEATURES if f.legacy}


def test_the_derived_sets_are_the_ones_the_engine_had() -> None:
    reader_writer = {"deletionVectors", "typeWidening", "typeWidening-preview", "v2Checkpoint"}
    reader_writer |= {"timestampNtz", "columnMapping", "vacuumProtocolCheck"}
    readers = reader_writer | {"variantType", "variantType-preview"}
    writers = readers | set(LEGACY_WRITERS) | {"inCommitTimestamp", "domainMetadata", "clustering"}
    writers |= {"rowTracking", "checkpointProtection", "allowColumnDefaults", "icebergCompatV2"}
    assert readers == table_features.SUPPORTED_READER_FEATURES
    assert writers == table_features.SUPPORTED_WRITER_FEATURES
    assert writers == table_features.CHECKPOINT_WRITER_FEATURES
    rules = {"invariants", "checkConstraints", "generatedColumns", "identityColumns"}
    assert rules == table_features.ENFORCED_WHEN_USED
    # (variantType is a reader-writer feature too: `delta.feature.variantType` now lists both sides)
    assert readers == table_features.READER_WRITER_FEATURES
    legacy = dict(zip(LEGACY_WRITERS, (2, 2, 3, 4, 4, 5, 6), strict=True))
    assert legacy == table_features.LEGACY_WRITER_VERSION


@pytest.mark.parametrize(
    ("versions", "implied"),
    [
        ((1, 1), (set(), set())),
        ((1, 2), (set(), set(LEGACY_WRITERS[:2]))),
        ((1, 3), (set(), set(LEGACY_WRITERS[:3]))),
        ((1, 4), (set(), set(LEGACY_WRITERS[:5]))),
        ((2, 5), ({"columnMapping"}, set(LEGACY_WRITERS[:6]))),
        ((2, 6), ({"columnMapping"}, set(LEGACY_WRITERS))),
        ((3, 7), (set(), set())),
    ],
)
def test_legacy_versions_imply_their_features(
    versions: tuple[int, int], implied: tuple[set[str], set[str]]
) -> None:
    reader, writer = versions
    protocol = Protocol(reader, writer, () if reader == 3 else None, () if writer == 7 else None)
    assert table_features.implied_features(protocol) == implied


def test_feature_modules_and_property_switches_come_from_the_registry() -> None:
    names = (row_tracking.FEATURE, domain_metadata.FEATURE, clustering.FEATURE, generated.FEATURE)
    assert names == ("rowTracking", "domainMetadata", "clustering", "generatedColumns")
    assert (clustering.PREVIEW_FEATURE, variant.FEATURE) == ("liquid", "variantType")
    assert {"typeWidening", "typeWidening-preview"} == type_widening.FEATURES
    assert registry.BY_NAME["rowTracking"].requires == ("domainMetadata",)
    assert props.FEATURE_PROPERTIES == {
        "delta.appendOnly": ("appendOnly", False, "true"),
        "delta.enableInCommitTimestamps": ("inCommitTimestamp", False, "true"),
        "delta.enableDeletionVectors": ("deletionVectors", True, "true"),
        "delta.enableTypeWidening": ("typeWidening", True, "true"),
        "delta.checkpointPolicy": ("v2Checkpoint", True, "v2"),
        "delta.enableChangeDataFeed": ("changeDataFeed", False, "true"),
        "delta.enableRowTracking": ("rowTracking", False, "true"),
        "delta.enableIcebergCompatV2": ("icebergCompatV2", False, "true"),
    }
    assert registry.BY_NAME["icebergCompatV2"].requires == ("columnMapping",)
    conf = {"delta.enableRowTracking": "TRUE ", "delta.enableDeletionVectors": "true"}
    assert props.property_features(conf) == (
        {"deletionVectors"}, {"deletionVectors", "rowTracking", "domainMetadata"}
    )  # fmt: skip


# ------------------------------------------------------------------ TableProperties
def test_table_properties_give_delta_defaults_and_typed_values() -> None:
    empty = props.TableProperties({})
    assert (empty.checkpoint_interval, empty.num_indexed_cols, empty.target_file_size) == (10, 32, 100 << 20)
    assert (empty.deleted_file_retention_ms, empty.log_retention_ms) == (7 * 86_400_000, 30 * 86_400_000)
    assert (empty.append_only, empty.write_stats_as_json, empty.column_mapping_mode) == (False, True, "none")
    conf = {
        "delta.checkpointInterval": "3", "delta.logRetentionDuration": "interval 2 days",
        "delta.appendOnly": " True", "delta.checkpoint.writeStatsAsJson": "FALSE",
        "delta.columnMapping.mode": "Name", "delta.columnMapping.maxColumnId": "x",
        "delta.rowTracking.materializedRowIdColumnName": "_rid",
    }  # fmt: skip
    p = props.TableProperties(conf)
    assert (p.checkpoint_interval, p.log_retention_ms, p.append_only) == (3, 2 * 86_400_000, True)
    assert (p.write_stats_as_json, p.column_mapping_mode, p.max_column_id) == (False, "name", 0)
    assert (p.row_id_column, p.row_commit_version_column) == ("_rid", None)
    assert props.checkpoint_interval(conf) == 3 and props.append_only(conf)  # the readers: the same parse


def test_a_malformed_value_raises_only_when_it_is_read() -> None:
    parsed = props.TableProperties({"delta.checkpointInterval": "often", "delta.appendOnly": "true"})
    assert parsed.append_only and parsed.num_indexed_cols == 32  # the other values stay readable
    for _ in range(2):  # (each read: a failed parse is not kept)
        with pytest.raises(InvalidArgumentError, match=r"checkpointInterval must be a positive integer"):
            _ = parsed.checkpoint_interval
    assert props.target_file_size({"delta.targetFileSize": "big"}, 64) == 64  # an override reads nothing


def test_a_snapshot_parses_its_properties_once(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties={"delta.checkpointInterval": "4"})
    snap = t.snapshot()
    assert snap.table_properties is snap.table_properties
    assert snap.table_properties.checkpoint_interval == 4
    assert snap.table_properties.configuration == snap.metadata.configuration


# ------------------------------------------------------------------ delta.feature.* is never recorded
def test_a_feature_key_is_refused_where_it_would_be_recorded(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeatureError, match="needs the table feature 'deletionVectors'") as info:
        Table.create(
            str(tmp_path / "t"), schema=SCHEMA, properties={"delta.feature.deletionVectors": "supported"}
        )
    assert info.value.feature == "deletionVectors" and not (tmp_path / "t").exists()
    foreign = {"delta.autoOptimize.optimizeWrite": "true"}  # (another engine's key: kept when recorded)
    props.refuse_not_honored(foreign, recorded=True)
    with pytest.raises(UnsupportedFeatureError, match="does not honour"):
        props.refuse_not_honored(foreign)
    with pytest.raises(UnsupportedFeatureError):
        props.refuse_not_honored({"delta.feature.x": "supported"}, recorded=True)
    props.refuse_not_honored({"delta.feature.x": "supported"})  # (set_properties turns it into a protocol)
