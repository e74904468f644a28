"""Table properties (`metaData.configuration`): the keys that exist, the ones the engine honours
with Delta's defaults, their typed values (`TableProperties`), and the check every property a user
sets goes through (`checked_changes`).

Delta on Spark knows a fixed list of `delta.*` keys (DeltaConfigs) and refuses any other
(DELTA_UNKNOWN_CONFIGURATION), matching keys without regard to case and storing them in their own
spelling. This engine does the same with one more rule, its own: each key Delta defines is either
honoured (the engine acts on it, or it describes what the engine already does) or refused by name
unless it holds the value that leaves it without effect (`delta.autoOptimize.optimizeWrite=false` is
fine; `true` would promise something no writer here does). `delta.constraints.*` and
`delta.feature.*` are keys of their own kinds (ADD CONSTRAINT, protocol features: a
`delta.feature.<name>` key is never recorded as a property). The check applies to what a user sets
(create, set_properties, the CLI, Spark's create): keys already in a table another engine wrote stay
as they are. Values of the `txnlog.maintenance.*` keys (the planner's thresholds,
engine.maintenance.plan_settings) are parsed and range-checked when set, and unknown ones refused.

Reading: `TableProperties` is the one parse of a configuration (a snapshot keeps one:
`Snapshot.table_properties`). Each value is parsed on first use and kept; a malformed one raises
`InvalidArgumentError` naming its key whenever it is read, so a table with one bad value stays usable
for everything that does not need it (Delta fails only the operation that reads it). A boolean is
its word ignoring case and spaces, other text counting as the opposite of its default (`_Flag`).
The module-level readers (`checkpoint_interval(conf)`, `change_data_feed(conf)`, ...) are the same
parse of a mapping.
The keys that turn a table feature on are spelled in engine.feature_registry, which says which
feature each turns on (`FEATURE_PROPERTIES`, `property_features`).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine.errors import InvalidArgumentError, UnsupportedFeatureError

# The keys that turn a table feature on are spelled with the features (engine.feature_registry).
APPEND_ONLY = registry.APPEND_ONLY_KEY
CHANGE_DATA_FEED = registry.CHANGE_DATA_FEED_KEY
IN_COMMIT_TIMESTAMPS = registry.IN_COMMIT_TIMESTAMPS_KEY
ENABLE_DELETION_VECTORS = registry.DELETION_VECTORS_KEY
ICEBERG_COMPAT_V2 = registry.ICEBERG_COMPAT_V2_KEY  # (engine.features.iceberg_compat)
UNIFORM_FORMATS = "delta.universalFormat.enabledFormats"  # UniForm: "iceberg" (engine.uniform)
ENABLE_TYPE_WIDENING = registry.TYPE_WIDENING_KEY
CHECKPOINT_POLICY = registry.CHECKPOINT_POLICY_KEY
ENABLE_ROW_TRACKING = registry.ROW_TRACKING_KEY
CHECKPOINT_INTERVAL = "delta.checkpointInterval"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
LOG_RETENTION = "delta.logRetentionDuration"
ICT_ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
CHECKPOINT_PROTECTION_VERSION = "delta.requireCheckpointProtectionBeforeVersion"
ICT_ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
TARGET_FILE_SIZE = "delta.targetFileSize"
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
COLUMN_MAPPING_MODES = ("none", "name", "id")
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
ROW_TRACKING_SUSPENDED = "delta.rowTrackingSuspended"
ROW_ID_COLUMN_KEY = "delta.rowTracking.materializedRowIdColumnName"
COMMIT_VERSION_COLUMN_KEY = "delta.rowTracking.materializedRowCommitVersionColumnName"
WRITE_STATS_AS_JSON = "delta.checkpoint.writeStatsAsJson"
WRITE_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
MIN_READER_VERSION = "delta.minReaderVersion"
MIN_WRITER_VERSION = "delta.minWriterVersion"
ISOLATION_LEVEL = "delta.isolationLevel"
CONSTRAINT_PREFIX = "delta.constraints."
FEATURE_PREFIX = "delta.feature."

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


def positive_int(raw: object, default: int, what: str) -> int:
    """`raw` as a positive integer (`default` when None), or InvalidArgumentError naming `what`."""
    try:
        value = int(str(raw)) if raw is not None else default
    except ValueError as exc:
        raise InvalidArgumentError(f"{what} must be a positive integer, got {raw!r}") from exc
    if value <= 0:
        raise InvalidArgumentError(f"{what} must be a positive integer, got {raw!r}")
    return value


class _Flag:
    """A boolean of `TableProperties`, kept once read: `true` / `false` ignoring case and spaces,
    `default` when absent, any other text the opposite of `default` (as Delta reads booleans)."""

    def __init__(self, key: str, *, default: bool = False) -> None:
        self.key, self.default = key, default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: TableProperties, owner: type | None = None) -> bool:
        raw = instance.configuration.get(self.key)
        word = "" if raw is None else str(raw).strip().lower()
        value = self.default if raw is None else (word != "false" if self.default else word == "true")
        instance.__dict__[self.name] = value  # (an instance value hides this non-data descriptor)
        return value


@dataclass(frozen=True)
class TableProperties:
    """A table's properties as typed values, with Delta's defaults (see the module docstring: each
    value parsed on first use and kept, a malformed one raising InvalidArgumentError naming its key)."""

    configuration: Mapping[str, str] = field(default_factory=dict)

    append_only = _Flag(APPEND_ONLY)
    change_data_feed = _Flag(CHANGE_DATA_FEED)
    in_commit_timestamps = _Flag(IN_COMMIT_TIMESTAMPS)
    deletion_vectors = _Flag(ENABLE_DELETION_VECTORS)  # writers may write deletion vectors
    row_tracking = _Flag(ENABLE_ROW_TRACKING)  # every live file has row ids (features.row_tracking)
    iceberg_compat_v2 = _Flag(ICEBERG_COMPAT_V2)  # data files Iceberg reads (features.iceberg_compat)
    row_tracking_suspended = _Flag(ROW_TRACKING_SUSPENDED)
    write_stats_as_json = _Flag(WRITE_STATS_AS_JSON, default=True)  # checkpoints carry add.stats
    write_stats_as_struct = _Flag(WRITE_STATS_AS_STRUCT, default=True)  # ... and add.stats_parsed

    @cached_property
    def checkpoint_interval(self) -> int:
        """`delta.checkpointInterval`: commits between checkpoints (10)."""
        raw = self.configuration.get(CHECKPOINT_INTERVAL)
        return positive_int(raw, DEFAULT_CHECKPOINT_INTERVAL, CHECKPOINT_INTERVAL)

    @cached_property
    def deleted_file_retention_ms(self) -> int:
        """`delta.deletedFileRetentionDuration`: how long vacuum keeps removed files (7 days)."""
        raw = self.configuration.get(DELETED_FILE_RETENTION)
        return parse_interval_ms(raw, DELETED_FILE_RETENTION) if raw else DEFAULT_DELETED_FILE_RETENTION_MS

    @cached_property
    def log_retention_ms(self) -> int:
        """`delta.logRetentionDuration`: how long log cleanup keeps commits (30 days)."""
        raw = self.configuration.get(LOG_RETENTION)
        return parse_interval_ms(raw, LOG_RETENTION) if raw else DEFAULT_LOG_RETENTION_MS

    @cached_property
    def num_indexed_cols(self) -> int:
        """`delta.dataSkippingNumIndexedCols`: leaf columns to collect stats for (-1: all; 32)."""
        raw = self.configuration.get(NUM_INDEXED_COLS)
        try:
            value = int(str(raw)) if raw is not None else DEFAULT_NUM_INDEXED_COLS
        except ValueError:
            value = -2
        if value < -1:
            raise InvalidArgumentError(
                f"{NUM_INDEXED_COLS} must be an integer >= -1 (-1: every column), got {raw!r}"
            )
        return value

    @cached_property
    def target_file_size(self) -> int:
        """`delta.targetFileSize`: bytes per file for compaction (100 MiB)."""
        raw = self.configuration.get(TARGET_FILE_SIZE)
        return positive_int(raw, DEFAULT_TARGET_FILE_SIZE, TARGET_FILE_SIZE)

    @cached_property
    def stats_columns(self) -> str | None:
        """`delta.dataSkippingStatsColumns` as written (engine.log.stats.stats_columns parses it)."""
        return self.configuration.get(STATS_COLUMNS)

    @cached_property
    def column_mapping_mode(self) -> str:
        """`delta.columnMapping.mode` as readers take it: `none` (also when absent or empty), `name`,
        `id`, or another word the reader refuses (engine.features.table_features)."""
        return str(self.configuration.get(COLUMN_MAPPING_MODE, "none")).strip().lower() or "none"

    @cached_property
    def max_column_id(self) -> int:
        """`delta.columnMapping.maxColumnId`: the highest field id given (0: none, or unreadable)."""
        try:
            return int(self.configuration.get(MAX_COLUMN_ID, 0))
        except ValueError:
            return 0

    @cached_property
    def row_id_column(self) -> str | None:
        """The hidden column of materialized row ids (None until row tracking names it)."""
        return self.configuration.get(ROW_ID_COLUMN_KEY)

    @cached_property
    def row_commit_version_column(self) -> str | None:
        """The hidden column of materialized row commit versions (None until row tracking names it)."""
        return self.configuration.get(COMMIT_VERSION_COLUMN_KEY)

    def maintenance(self, skip: frozenset[str] = frozenset()) -> dict[str, int | float]:
        """The planner's settings the `txnlog.maintenance.*` keys give (`maintenance_values`)."""
        return maintenance_values(self.configuration, skip=skip)


def checkpoint_interval(conf: Mapping[str, str]) -> int:
    return TableProperties(conf).checkpoint_interval


def target_file_size(conf: Mapping[str, str], override: int | None = None) -> int:
    """Bytes per file for compaction: `override`, else `delta.targetFileSize`, else 100 MiB."""
    if override is not None:
        return positive_int(override, DEFAULT_TARGET_FILE_SIZE, TARGET_FILE_SIZE)
    return TableProperties(conf).target_file_size


def append_only(conf: Mapping[str, str]) -> bool:
    return TableProperties(conf).append_only


def change_data_feed(conf: Mapping[str, str]) -> bool:
    return TableProperties(conf).change_data_feed


def in_commit_timestamps(conf: Mapping[str, str]) -> bool:
    return TableProperties(conf).in_commit_timestamps


def deleted_file_retention_ms(conf: Mapping[str, str]) -> int:
    return TableProperties(conf).deleted_file_retention_ms


def log_retention_ms(conf: Mapping[str, str]) -> int:
    return TableProperties(conf).log_retention_ms


def num_indexed_cols(conf: Mapping[str, str]) -> int:
    """Leaf columns to collect stats for: `delta.dataSkippingNumIndexedCols` (-1: all), default 32."""
    return TableProperties(conf).num_indexed_cols


def column_mapping_mode(conf: Mapping[str, str]) -> str:
    """`delta.columnMapping.mode` as a user sets it: `none`, `name` or `id` exactly
    (InvalidArgumentError for anything else; `TableProperties.column_mapping_mode` reads a table's)."""
    mode = str(conf.get(COLUMN_MAPPING_MODE, "none"))
    if mode not in COLUMN_MAPPING_MODES:
        raise InvalidArgumentError(
            f"{COLUMN_MAPPING_MODE} must be one of {', '.join(map(repr, COLUMN_MAPPING_MODES))}, got {mode!r}"
        )
    return mode


def validate(conf: Mapping[str, str]) -> None:
    """Reject malformed values of the properties we interpret before they reach the log, and a
    `delta.feature.*` key (it changes the protocol only: `refuse_not_honored(recorded=True)`)."""
    parsed = TableProperties(conf)
    maintenance_values(conf)
    _ = (  # each parsed for its check, in this order
        parsed.checkpoint_interval, parsed.deleted_file_retention_ms, parsed.log_retention_ms,
        parsed.target_file_size, parsed.num_indexed_cols,
    )  # fmt: skip
    for key in _BOOLEANS:
        if key in conf and str(conf[key]).strip().lower() not in ("true", "false"):
            raise InvalidArgumentError(f"{key} must be 'true' or 'false', got {conf[key]!r}")
    refuse_not_honored(conf, recorded=True)
    column_mapping_mode(conf)
    if parsed.row_tracking and parsed.row_tracking_suspended:
        raise InvalidArgumentError(f"{ENABLE_ROW_TRACKING} and {ROW_TRACKING_SUSPENDED} cannot both be true")


# Properties that turn on a feature the engine honors (engine.feature_registry: `Feature.switch`):
# key -> (feature, readers need it too, the value that turns it on). Creating a table or
# `Table.set_properties` adds the feature to the protocol.
FEATURE_PROPERTIES: dict[str, tuple[str, bool, str]] = {
    f.switch[0]: (f.name, f.readers, f.switch[1]) for f in registry.FEATURES if f.switch and f.writes
}


def property_features(conf: Mapping[str, str]) -> tuple[set[str], set[str]]:
    """(reader features, writer features) that the properties in `conf` turn on, with the features
    they require (`Feature.requires`: row tracking keeps its mark in a domain)."""
    readers: set[str] = set()
    writers: set[str] = set()
    for key, value in conf.items():
        if key in FEATURE_PROPERTIES:
            feature, reader, on = FEATURE_PROPERTIES[key]
            if str(value).strip().lower() == on:
                writers.add(feature)
                if reader:
                    readers.add(feature)
    return readers, registry.with_required(writers)


# ----------------------------------------------------------------------------- the keys that exist
# Keys the engine acts on (or that state what it does anyway: it is Serializable).
HONORED = (
    APPEND_ONLY, CHECKPOINT_INTERVAL, DELETED_FILE_RETENTION, LOG_RETENTION, IN_COMMIT_TIMESTAMPS,
    CHANGE_DATA_FEED, NUM_INDEXED_COLS, STATS_COLUMNS, TARGET_FILE_SIZE, COLUMN_MAPPING_MODE,
    ENABLE_DELETION_VECTORS, ENABLE_TYPE_WIDENING, CHECKPOINT_POLICY, ENABLE_ROW_TRACKING,
    ROW_TRACKING_SUSPENDED, ROW_ID_COLUMN_KEY, COMMIT_VERSION_COLUMN_KEY, MIN_READER_VERSION,
    MIN_WRITER_VERSION, WRITE_STATS_AS_JSON, WRITE_STATS_AS_STRUCT, ISOLATION_LEVEL, ICEBERG_COMPAT_V2,
    UNIFORM_FORMATS,
)  # fmt: skip
_BOOLEANS = (
    APPEND_ONLY, IN_COMMIT_TIMESTAMPS, CHANGE_DATA_FEED, ENABLE_DELETION_VECTORS, ENABLE_TYPE_WIDENING,
    ENABLE_ROW_TRACKING, ROW_TRACKING_SUSPENDED, WRITE_STATS_AS_JSON, WRITE_STATS_AS_STRUCT,
    ICEBERG_COMPAT_V2,
)  # fmt: skip
# Keys the engine writes itself: a user setting one would state something untrue.
MANAGED = {
    CHECKPOINT_PROTECTION_VERSION: "set by Delta's DROP FEATURE with the checkpointProtection feature",
    MAX_COLUMN_ID: "set by the engine as columns get ids (column mapping)",
    ICT_ENABLEMENT_VERSION: f"set by the engine in the commit that turns {IN_COMMIT_TIMESTAMPS} on",
    ICT_ENABLEMENT_TIMESTAMP: f"set by the engine in the commit that turns {IN_COMMIT_TIMESTAMPS} on",
}
# Keys Delta defines that the engine does not honour: key -> (what it would take, the value that
# leaves it without effect, or None when every value has one).
NOT_HONORED: dict[str, tuple[str, str | None]] = {
    ISOLATION_LEVEL: ("isolation levels other than Serializable (Delta's only one)", "serializable"),
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
    "delta.enableIcebergCompatV1": ("the icebergCompatV1 feature", "false"),
    "delta.enableIcebergCompatV3": ("the icebergCompatV3 feature", "false"),
    "delta.universalFormat.iceberg.atomicConversion.supported": ("UniForm", "false"),
    "delta.castIcebergTimeType": ("UniForm", "false"),
    "delta.ignoreIcebergBucketPartition": ("UniForm", "false"),
    "delta.coordinatedCommits.commitCoordinator-preview": ("coordinated commits", None),
    "delta.coordinatedCommits.commitCoordinatorConf-preview": ("coordinated commits", None),
    "delta.coordinatedCommits.tableConf-preview": ("coordinated commits", None),
    "delta.redirectReaderWriter-preview": ("table redirects", None),
    "delta.redirectWriterOnly-preview": ("table redirects", None),
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


def refuse_not_honored(conf: Mapping[str, str], *, recorded: bool = False) -> None:
    """UnsupportedFeatureError for a key the engine cannot honour at its value (nothing is written).

    A user's keys (`checked_changes`): a key Delta defines that the engine does not honour
    (NOT_HONORED) at a value with an effect. With `recorded`, the configuration a create or a
    metaData action would record, where keys another engine wrote stay as they are: a
    `delta.feature.<name>` key, which only asks set_properties for a protocol feature; recorded as a
    property it would name a feature the protocol does not list, so other writers would ignore it."""
    for key, value in conf.items():
        if recorded and key.startswith(FEATURE_PREFIX):
            feature = key[len(FEATURE_PREFIX) :]
            raise UnsupportedFeatureError(
                f"{key}={value!r} needs the table feature {feature!r}, which this engine does not honor "
                "when writing; nothing was created. Help: create the table without it (the engine sets "
                "the features it supports, timestampNtz and appendOnly, itself)",
                feature=feature,
            )
        if not recorded and key in NOT_HONORED:
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
    "rewriteMemoryBytes": ("rewrite_memory_bytes", int, 1, math.inf, False),
    "logCompactionCommits": ("log_compaction_commits", int, 0, math.inf, False),
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
