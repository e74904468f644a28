"""Table properties (`metaData.configuration`): the keys that exist, the ones the engine honours
with Delta's defaults, and the check every property a user sets goes through (`checked_changes`).

Delta on Spark knows a fixed list of `delta.*` keys (DeltaConfigs) and refuses any other
(DELTA_UNKNOWN_CONFIGURATION), matching keys without regard to case and storing them in their own
spelling. This engine does the same with one more rule, its own: each key Delta defines is either
honoured (the engine acts on it, or it describes what the engine already does) or refused by name
unless it holds the value that leaves it without effect (`delta.autoOptimize.optimizeWrite=false` is
fine; `true` would promise something no writer here does). `delta.constraints.*` and
`delta.feature.*` are keys of their own kinds (ADD CONSTRAINT, protocol features). The check applies
to what a user sets (create, set_properties, the CLI, Spark's create): keys already in a table another
engine wrote stay as they are. Values of the `txnlog.maintenance.*` keys (the planner's thresholds,
engine.maintenance.plan_settings) are parsed and range-checked when set, and unknown ones refused.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping

from airflow_txnlog.engine.errors import InvalidArgumentError, UnsupportedFeatureError

CHECKPOINT_INTERVAL = "delta.checkpointInterval"
APPEND_ONLY = "delta.appendOnly"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
LOG_RETENTION = "delta.logRetentionDuration"
IN_COMMIT_TIMESTAMPS = "delta.enableInCommitTimestamps"
ICT_ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
TARGET_FILE_SIZE = "delta.targetFileSize"
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
COLUMN_MAPPING_MODES = ("none", "name", "id")

DEFAULT_CHECKPOINT_INTERVAL = 10
DEFAULT_DELETED_FILE_RETENTION_MS = 7 * 24 * 3600 * 1000
DEFAULT_LOG_RETENTION_MS = 30 * 24 * 3600 * 1000
DEFAULT_NUM_INDEXED_COLS = 32
DEFAULT_TARGET_FILE_SIZE = 100 * 1024 * 1024  # delta-rs's default

_UNIT_MS = {
    "microsecond": 0.001,
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}
_INTERVAL_RE = re.compile(r"^\s*(?:interval\s+)?(\d+)\s*([a-z]+?)s?\s*$", re.IGNORECASE)


def parse_interval_ms(text: str, what: str = "interval") -> int:
    """Milliseconds of a Delta interval string such as "interval 7 days" or "30 days"."""
    m = _INTERVAL_RE.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNIT_MS:
        raise InvalidArgumentError(
            f"{what}: invalid interval {text!r}; expected e.g. 'interval 7 days' "
            f"(units: {', '.join(_UNIT_MS)})"
        )
    return int(int(m.group(1)) * _UNIT_MS[unit])


def _bool(conf: Mapping[str, str], key: str) -> bool:
    return str(conf.get(key, "false")).strip().lower() == "true"


def positive_int(raw: object, default: int, what: str) -> int:
    """`raw` as a positive integer (`default` when None), or InvalidArgumentError naming `what`."""
    try:
        value = int(str(raw)) if raw is not None else default
    except ValueError as exc:
        raise InvalidArgumentError(f"{what} must be a positive integer, got {raw!r}") from exc
    if value <= 0:
        raise InvalidArgumentError(f"{what} must be a positive integer, got {raw!r}")
    return value


def checkpoint_interval(conf: Mapping[str, str]) -> int:
    return positive_int(conf.get(CHECKPOINT_INTERVAL), DEFAULT_CHECKPOINT_INTERVAL, CHECKPOINT_INTERVAL)


def target_file_size(conf: Mapping[str, str], override: int | None = None) -> int:
    """Bytes per file for compaction: `override`, else `delta.targetFileSize`, else 100 MiB."""
    raw = override if override is not None else conf.get(TARGET_FILE_SIZE)
    return positive_int(raw, DEFAULT_TARGET_FILE_SIZE, TARGET_FILE_SIZE)


def append_only(conf: Mapping[str, str]) -> bool:
    return _bool(conf, APPEND_ONLY)


def change_data_feed(conf: Mapping[str, str]) -> bool:
    return _bool(conf, CHANGE_DATA_FEED)


def in_commit_timestamps(conf: Mapping[str, str]) -> bool:
    return _bool(conf, IN_COMMIT_TIMESTAMPS)


def deleted_file_retention_ms(conf: Mapping[str, str]) -> int:
    raw = conf.get(DELETED_FILE_RETENTION)
    return parse_interval_ms(raw, DELETED_FILE_RETENTION) if raw else DEFAULT_DELETED_FILE_RETENTION_MS


def log_retention_ms(conf: Mapping[str, str]) -> int:
    raw = conf.get(LOG_RETENTION)
    return parse_interval_ms(raw, LOG_RETENTION) if raw else DEFAULT_LOG_RETENTION_MS


def num_indexed_cols(conf: Mapping[str, str]) -> int:
    """Leaf columns to collect stats for: `delta.dataSkippingNumIndexedCols` (-1: all), default 32."""
    raw = conf.get(NUM_INDEXED_COLS)
    try:
        value = int(str(raw)) if raw is not None else DEFAULT_NUM_INDEXED_COLS
    except ValueError:
        value = -2
    if value < -1:
        raise InvalidArgumentError(
            f"{NUM_INDEXED_COLS} must be an integer >= -1 (-1: every column), got {raw!r}"
        )
    return value


def column_mapping_mode(conf: Mapping[str, str]) -> str:
    """`delta.columnMapping.mode`: `none`, `name` or `id` (InvalidArgumentError for anything else)."""
    mode = str(conf.get(COLUMN_MAPPING_MODE, "none"))
    if mode not in COLUMN_MAPPING_MODES:
        raise InvalidArgumentError(
            f"{COLUMN_MAPPING_MODE} must be one of {', '.join(map(repr, COLUMN_MAPPING_MODES))}, got {mode!r}"
        )
    return mode


def validate(conf: Mapping[str, str]) -> None:
    """Reject malformed values of the properties we interpret before they reach the log."""
    maintenance_values(conf)
    checkpoint_interval(conf)
    deleted_file_retention_ms(conf)
    log_retention_ms(conf)
    target_file_size(conf)
    num_indexed_cols(conf)
    for key in _BOOLEANS:
        if key in conf and str(conf[key]).strip().lower() not in ("true", "false"):
            raise InvalidArgumentError(f"{key} must be 'true' or 'false', got {conf[key]!r}")
    refuse_unhonored_features(conf)
    column_mapping_mode(conf)
    if _bool(conf, "delta.enableRowTracking") and _bool(conf, "delta.rowTrackingSuspended"):
        raise InvalidArgumentError(
            "delta.enableRowTracking and delta.rowTrackingSuspended cannot both be true"
        )


# Properties that turn on a table feature this engine does not (yet) honor when it writes. Creating a
# table with one would record the property under a protocol that does not name the feature, so other
# writers would ignore it too (delta-rs appends past a CHECK constraint of a (1, 2) table): refuse.
# key -> (feature, the value that leaves the feature off, if any).
_FEATURE_SWITCHES: dict[str, tuple[str, str | None]] = {}
# Properties that turn on a feature the engine honors: key -> (feature, readers need it too, the
# value that turns it on). Creating a table or `Table.set_properties` adds the feature to the protocol.
FEATURE_PROPERTIES: dict[str, tuple[str, bool, str]] = {
    APPEND_ONLY: ("appendOnly", False, "true"),
    IN_COMMIT_TIMESTAMPS: ("inCommitTimestamp", False, "true"),
    "delta.enableDeletionVectors": ("deletionVectors", True, "true"),
    "delta.enableTypeWidening": ("typeWidening", True, "true"),
    "delta.checkpointPolicy": ("v2Checkpoint", True, "v2"),
    CHANGE_DATA_FEED: ("changeDataFeed", False, "true"),
    "delta.enableRowTracking": ("rowTracking", False, "true"),
}
# Features that need another one in the protocol (PROTOCOL.md: row tracking keeps its mark in a domain).
REQUIRED_FEATURES = {"rowTracking": "domainMetadata"}


def property_features(conf: Mapping[str, str]) -> tuple[set[str], set[str]]:
    """(reader features, writer features) that the properties in `conf` turn on."""
    readers: set[str] = set()
    writers: set[str] = set()
    for key, value in conf.items():
        if key in FEATURE_PROPERTIES:
            feature, reader, on = FEATURE_PROPERTIES[key]
            if str(value).strip().lower() == on:
                writers.add(feature)
                if reader:
                    readers.add(feature)
    writers |= {REQUIRED_FEATURES[f] for f in writers if f in REQUIRED_FEATURES}
    return readers, writers


# (`delta.constraints.*` are not here: they are added by ADD CONSTRAINT, engine.write.alter_table)
_FEATURE_PREFIXES = {"delta.feature.": ""}


def refuse_unhonored_features(conf: Mapping[str, str]) -> None:
    """UnsupportedFeatureError naming the feature a property would need that the engine cannot honor."""
    for key, value in conf.items():
        feature = None
        if key in _FEATURE_SWITCHES:
            name, off = _FEATURE_SWITCHES[key]
            feature = None if str(value).strip().lower() == off else name
        for prefix, name in _FEATURE_PREFIXES.items():
            if key.startswith(prefix):
                feature = name or key[len(prefix) :]
        if feature is not None:
            raise UnsupportedFeatureError(
                f"{key}={value!r} needs the table feature {feature!r}, which this engine does not honor "
                "when writing; nothing was created. Help: create the table without it (the engine sets "
                "the features it supports, timestampNtz and appendOnly, itself)",
                feature=feature,
            )


# ----------------------------------------------------------------------------- the keys that exist
ROW_ID_COLUMN_KEY = "delta.rowTracking.materializedRowIdColumnName"
COMMIT_VERSION_COLUMN_KEY = "delta.rowTracking.materializedRowCommitVersionColumnName"
CONSTRAINT_PREFIX = "delta.constraints."
FEATURE_PREFIX = "delta.feature."
# Keys the engine acts on (or that state what it does anyway: it is Serializable).
HONORED = (
    APPEND_ONLY, CHECKPOINT_INTERVAL, DELETED_FILE_RETENTION, LOG_RETENTION, IN_COMMIT_TIMESTAMPS,
    CHANGE_DATA_FEED, NUM_INDEXED_COLS, STATS_COLUMNS, TARGET_FILE_SIZE, COLUMN_MAPPING_MODE,
    "delta.enableDeletionVectors", "delta.enableTypeWidening", "delta.checkpointPolicy",
    "delta.enableRowTracking", "delta.rowTrackingSuspended", ROW_ID_COLUMN_KEY, COMMIT_VERSION_COLUMN_KEY,
    "delta.minReaderVersion", "delta.minWriterVersion", "delta.checkpoint.writeStatsAsJson",
    "delta.checkpoint.writeStatsAsStruct", "delta.isolationLevel",
)  # fmt: skip
_BOOLEANS = (
    APPEND_ONLY, IN_COMMIT_TIMESTAMPS, CHANGE_DATA_FEED, "delta.enableDeletionVectors",
    "delta.enableTypeWidening", "delta.enableRowTracking", "delta.rowTrackingSuspended",
    "delta.checkpoint.writeStatsAsJson", "delta.checkpoint.writeStatsAsStruct",
)  # fmt: skip
# Keys the engine writes itself: a user setting one would state something untrue.
MANAGED = {
    "delta.columnMapping.maxColumnId": "set by the engine as columns get ids (column mapping)",
    ICT_ENABLEMENT_VERSION: f"set by the engine in the commit that turns {IN_COMMIT_TIMESTAMPS} on",
    ICT_ENABLEMENT_TIMESTAMP: f"set by the engine in the commit that turns {IN_COMMIT_TIMESTAMPS} on",
}
# Keys Delta defines that the engine does not honour: key -> (what it would take, the value that
# leaves it without effect, or None when every value has one).
NOT_HONORED: dict[str, tuple[str, str | None]] = {
    "delta.isolationLevel": ("isolation levels other than Serializable (Delta's only one)", "serializable"),
    "delta.autoOptimize": ("optimized writes and auto compaction (Databricks)", "false"),
    "delta.autoOptimize.autoCompact": ("auto compaction (schedule OPTIMIZE / planned maintenance)", "false"),
    "delta.autoOptimize.optimizeWrite": ("optimized writes (Databricks)", "false"),
    "delta.randomizeFilePrefixes": ("random file name prefixes", "false"),
    "delta.randomPrefixLength": ("random file name prefixes", "2"),
    "delta.enableVariantShredding": ("shredded variant columns (variants are written unshredded)", "false"),
    "delta.parquet.format.version": ("a chosen parquet format version", None),
    "delta.dataSkippingStringPrefixLength": ("a chosen string stats prefix length", None),
    "delta.compatibility.symlinkFormatManifest.enabled": ("symlink manifests", "false"),
    "delta.enableExpiredLogCleanup": ("keeping every log file (cleanup runs only when asked)", "true"),
    "delta.enableFullRetentionRollback": ("partial-retention rollback", "true"),
    "delta.checkpointRetentionDuration": ("a checkpoint retention apart from the log's", None),
    "delta.sampleRetentionDuration": ("samples (deprecated in Delta)", None),
    "delta.dropFeatureTruncateHistory.retentionDuration": ("DROP FEATURE", None),
    "delta.setTransactionRetentionDuration": ("expiring idempotency ids (they are kept)", None),
    "delta.enableChangeDataCapture": ("the legacy spelling: use delta.enableChangeDataFeed", None),
    "delta.ignoreProtocolDefaults": ("session protocol defaults (the engine has none)", None),
    "delta.universalFormat.enabledFormats": ("UniForm (Iceberg / Hudi metadata)", ""),
    "delta.enableIcebergCompatV1": ("the icebergCompatV1 feature", "false"),
    "delta.enableIcebergCompatV2": ("the icebergCompatV2 feature", "false"),
    "delta.enableIcebergCompatV3": ("the icebergCompatV3 feature", "false"),
    "delta.universalFormat.iceberg.atomicConversion.supported": ("UniForm", "false"),
    "delta.castIcebergTimeType": ("UniForm", "false"),
    "delta.ignoreIcebergBucketPartition": ("UniForm", "false"),
    "delta.coordinatedCommits.commitCoordinator-preview": ("coordinated commits", None),
    "delta.coordinatedCommits.commitCoordinatorConf-preview": ("coordinated commits", None),
    "delta.coordinatedCommits.tableConf-preview": ("coordinated commits", None),
    "delta.redirectReaderWriter-preview": ("table redirects", None),
    "delta.redirectWriterOnly-preview": ("table redirects", None),
    "delta.requireCheckpointProtectionBeforeVersion": ("the checkpointProtection feature", None),
    "delta.enableMaterializePartitionColumnsFeature": ("materialized partition columns", "false"),
    "delta.writePartitionColumnsToParquet": ("partition columns in data files", "false"),
}
_NOT_HONORED_PREFIXES = {"delta.universalformat.config.": "UniForm (Iceberg / Hudi metadata)"}
_CANONICAL = {k.lower(): k for k in (*HONORED, *MANAGED, *NOT_HONORED)}


def checked_changes(changes: Mapping[str, str]) -> dict[str, str]:
    """`changes` with Delta's keys in their own spelling, or InvalidArgumentError /
    UnsupportedFeatureError naming the first key no writer should record (see the module docstring)."""
    out: dict[str, str] = {}
    for key, value in changes.items():
        name = _canonical(key)
        if name in out:
            raise InvalidArgumentError(f"properties: {key!r} is given twice (Delta's keys ignore case)")
        out[name] = value
    refuse_not_honored(out)
    maintenance_values(out, unknown=True)
    return out


def _canonical(key: str) -> str:
    lower = key.lower()
    if not lower.startswith("delta."):
        return key
    if lower.startswith(CONSTRAINT_PREFIX) or lower.startswith(FEATURE_PREFIX):
        return key
    for prefix, what in _NOT_HONORED_PREFIXES.items():
        if lower.startswith(prefix):
            raise _not_honored(key, what)
    name = _CANONICAL.get(lower)
    if name is None:
        close = difflib.get_close_matches(lower, _CANONICAL, n=1, cutoff=0.75)
        hint = f" Did you mean {_CANONICAL[close[0]]!r}?" if close else ""
        raise InvalidArgumentError(
            f"unknown Delta table property {key!r}: Delta defines no such key (Delta on Spark refuses it "
            f"too: DELTA_UNKNOWN_CONFIGURATION), so it would turn nothing on.{hint} Nothing was written"
        )
    if name in MANAGED:
        raise InvalidArgumentError(f"{name} is {MANAGED[name]}; it cannot be set. Nothing was written")
    return name


def refuse_not_honored(conf: Mapping[str, str]) -> None:
    """UnsupportedFeatureError for a key Delta defines that the engine cannot honour at its value."""
    for key, value in conf.items():
        if key in NOT_HONORED:
            what, inert = NOT_HONORED[key]
            if inert is None or str(value).strip().lower() != inert:
                raise _not_honored(f"{key}={value!r}", what, inert)


def _not_honored(key: str, what: str, inert: str | None = None) -> UnsupportedFeatureError:
    keep = f" (only {inert!r}, which has no effect, is accepted)" if inert is not None else ""
    return UnsupportedFeatureError(
        f"{key} asks for {what}, which this engine does not honour{keep}: recording it would promise "
        "what no writer here does. Nothing was written",
        feature=key.split("=", maxsplit=1)[0],
    )


# ----------------------------------------------------------------------------- txnlog.maintenance.*
MAINTENANCE_PREFIX = "txnlog.maintenance."
# property suffix -> (planner setting, type, lowest, highest, whether the lowest is excluded)
MAINTENANCE_PROPERTIES: dict[str, tuple[str, type, float, float, bool]] = {
    "smallFraction": ("small_fraction", float, 0, 1, True),
    "largeFraction": ("large_fraction", float, 1, math.inf, False),
    "minInputFiles": ("min_input_files", int, 2, math.inf, False),
    "minFilesRemoved": ("min_files_removed", int, 1, math.inf, False),
    "dvPurgeFraction": ("dv_purge_fraction", float, 0, 1, True),
    "quietMinutes": ("quiet_minutes", float, 0, math.inf, False),
    "vacuumMinBytes": ("vacuum_min_bytes", int, 0, math.inf, False),
    "fullVacuumDays": ("full_vacuum_days", float, 0, math.inf, False),
    "unclusteredFraction": ("unclustered_fraction", float, 0, 1, False),
}


def maintenance_values(
    conf: Mapping[str, str], *, skip: frozenset[str] = frozenset(), unknown: bool = False
) -> dict[str, int | float]:
    """{planner setting: value} of the `txnlog.maintenance.*` keys in `conf` (InvalidArgumentError
    naming a malformed or out-of-range one; with `unknown`, also an unknown key). Settings in `skip`
    are not read (an argument overrides them)."""
    out: dict[str, int | float] = {}
    for key, raw in conf.items():
        if not key.startswith(MAINTENANCE_PREFIX):
            continue
        spec = MAINTENANCE_PROPERTIES.get(key[len(MAINTENANCE_PREFIX) :])
        if spec is None:
            if unknown:
                raise _unknown_maintenance(key)
            continue
        if spec[0] not in skip:
            out[spec[0]] = typed_setting(key, raw, spec)
    return out


def _unknown_maintenance(key: str) -> InvalidArgumentError:
    known = [MAINTENANCE_PREFIX + k for k in MAINTENANCE_PROPERTIES]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    hint = f" Did you mean {close[0]!r}?" if close else f" Known: {', '.join(known)}."
    return InvalidArgumentError(f"unknown maintenance property {key!r}.{hint} Nothing was written")


def typed_setting(name: str, raw: object, spec: tuple[str, type, float, float, bool]) -> int | float:
    """`raw` as the setting's type within its range, or InvalidArgumentError naming `name`."""
    _, kind, low, high, open_low = spec
    try:
        if isinstance(raw, bool):
            raise ValueError
        value: int | float = float(str(raw)) if kind is float else int(str(raw).strip())
        if not math.isfinite(value):
            raise ValueError
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidArgumentError(f"{name} must be a finite {kind.__name__}, got {raw!r}") from exc
    if value < low or (open_low and value == low) or value > high:
        bounds = ("> " if open_low else ">= ") + f"{low:g}" + (f" and <= {high:g}" if high < math.inf else "")
        raise InvalidArgumentError(f"{name} must be {bounds}, got {raw!r}")
    return value
