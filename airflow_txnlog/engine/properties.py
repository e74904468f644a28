"""Table properties (`metaData.configuration`) the engine honours, with Delta's defaults."""

from __future__ import annotations

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
    checkpoint_interval(conf)
    deleted_file_retention_ms(conf)
    log_retention_ms(conf)
    target_file_size(conf)
    num_indexed_cols(conf)
    for key in (APPEND_ONLY, IN_COMMIT_TIMESTAMPS):
        if key in conf and str(conf[key]).lower() not in ("true", "false"):
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
