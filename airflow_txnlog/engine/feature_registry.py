"""Delta's table features, one entry each: the one place where a feature's facts are written.

Each `Feature` (PROTOCOL.md "Table Features") gives
    name          its wire name in `readerFeatures` / `writerFeatures`
    readers       a reader-writer feature: at reader 3 / writer 7 it is listed on both sides (every
                  feature is a writer feature, so `readers=False` means writer-only)
    legacy        the (minReader, minWriter) versions that imply it, for the features older than
                  table features: a legacy protocol supports a feature when both its versions reach
                  these (`implied_features` in engine.features.table_features)
    switch        the table property and value that turn it on (`delta.appendOnly` = `true`), or
    condition     what else does (a column type, column metadata, an API call)
    requires      the features it needs in the protocol too (row tracking keeps its mark in a domain)
    column_key    the field metadata key (a prefix when it ends in `.`) marking a column that uses it;
                  `assigned`: the engine writes that metadata itself, so a schema bringing it raw is
                  refused at create
    row_rules     its rules hold for every row, and every write path enforces them where it is used
and what this engine does with a table that has it: `reads` (only reader-writer features matter to
readers), `writes` (honours it when committing), `checkpoints` (its state survives the checkpoints
the engine writes: a checkpoint must not lose what older commits held once they are cleaned up).

Everything that names a feature derives from `FEATURES`: the supported reader, writer and checkpoint
sets and the legacy implications (engine.features.table_features), the features properties turn on
(engine.properties.property_features, used by create, set_properties and every metadata change), the
protocol of a new table (engine.write.create_table), each feature module's `FEATURE`, and the feature
tables of docs/engine.md (tests/engine/features/test_feature_registry.py compares them). A feature
missing here is unknown: a table listing it is refused for writing, and for reading when readers must know it.

The module sits at the engine's root below `properties`, which reads the switches, so every room can
import it; it imports nothing of the engine.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The table properties that turn a feature on, spelled once (engine.properties reads and checks them
# with every other key, under its own names: APPEND_ONLY, CHANGE_DATA_FEED, ...).
APPEND_ONLY_KEY = "delta.appendOnly"
CHANGE_DATA_FEED_KEY = "delta.enableChangeDataFeed"
IN_COMMIT_TIMESTAMPS_KEY = "delta.enableInCommitTimestamps"
DELETION_VECTORS_KEY = "delta.enableDeletionVectors"
TYPE_WIDENING_KEY = "delta.enableTypeWidening"
CHECKPOINT_POLICY_KEY = "delta.checkpointPolicy"
ROW_TRACKING_KEY = "delta.enableRowTracking"
ICEBERG_COMPAT_V2_KEY = "delta.enableIcebergCompatV2"
# The field metadata keys that mark a column using a feature (a prefix ends in `.`).
INVARIANTS_KEY = "delta.invariants"
GENERATION_KEY = "delta.generationExpression"
IDENTITY_PREFIX = "delta.identity."
COLUMN_MAPPING_PREFIX = "delta.columnMapping."


@dataclass(frozen=True)
class Feature:
    """One table feature (see the module docstring for each field)."""

    name: str
    readers: bool = False
    legacy: tuple[int, int] | None = None
    switch: tuple[str, str] | None = None
    condition: str = ""
    requires: tuple[str, ...] = ()
    column_key: str | None = None
    assigned: bool = False
    row_rules: bool = False
    reads: bool = True
    writes: bool = True
    checkpoints: bool = True

    @property
    def enabled_by(self) -> str:
        """What turns the feature on, in words (`key=value` for a property switch)."""
        return f"{self.switch[0]}={self.switch[1]}" if self.switch else self.condition

    def marks(self, key: str) -> bool:
        """Whether field metadata `key` marks a column using the feature (`column_key`, or a key under
        it when it is a prefix)."""
        mark = self.column_key
        return mark is not None and (key == mark or (mark.endswith(".") and key.startswith(mark)))


_FEATURE_KEY = "delta.feature.<name>=supported (set_properties)"

# The protocol's legacy features, in the order writer versions 2..6 added them.
APPEND_ONLY = Feature("appendOnly", legacy=(1, 2), switch=(APPEND_ONLY_KEY, "true"))
INVARIANTS = Feature(
    "invariants", legacy=(1, 2), condition=f"column metadata {INVARIANTS_KEY}",
    column_key=INVARIANTS_KEY, row_rules=True,
)  # fmt: skip
CHECK_CONSTRAINTS = Feature(
    "checkConstraints", legacy=(1, 3), condition="delta.constraints.* (add_constraint)", row_rules=True
)
CHANGE_DATA_FEED = Feature("changeDataFeed", legacy=(1, 4), switch=(CHANGE_DATA_FEED_KEY, "true"))
GENERATED_COLUMNS = Feature(
    "generatedColumns", legacy=(1, 4), condition=f"column metadata {GENERATION_KEY}",
    column_key=GENERATION_KEY, row_rules=True,
)  # fmt: skip
COLUMN_MAPPING = Feature(
    "columnMapping", readers=True, legacy=(2, 5), condition="delta.columnMapping.mode=name or id",
    column_key=COLUMN_MAPPING_PREFIX, assigned=True,
)  # fmt: skip
IDENTITY_COLUMNS = Feature(
    "identityColumns", legacy=(1, 6), condition="identity_columns= at create",
    column_key=IDENTITY_PREFIX, assigned=True, row_rules=True,
)  # fmt: skip
# Table features (reader 3 / writer 7 only).
TIMESTAMP_NTZ = Feature("timestampNtz", readers=True, condition="a timestamp column without time zone")
DELETION_VECTORS = Feature("deletionVectors", readers=True, switch=(DELETION_VECTORS_KEY, "true"))
TYPE_WIDENING = Feature("typeWidening", readers=True, switch=(TYPE_WIDENING_KEY, "true"))
TYPE_WIDENING_PREVIEW = Feature("typeWidening-preview", readers=True, condition="Delta 3.x's typeWidening")
V2_CHECKPOINT = Feature("v2Checkpoint", readers=True, switch=(CHECKPOINT_POLICY_KEY, "v2"))
VACUUM_PROTOCOL_CHECK = Feature("vacuumProtocolCheck", readers=True, condition=_FEATURE_KEY)
VARIANT_TYPE = Feature("variantType", readers=True, condition="a variant column")
VARIANT_TYPE_PREVIEW = Feature("variantType-preview", readers=True, condition="Delta 3.x's variantType")
IN_COMMIT_TIMESTAMP = Feature("inCommitTimestamp", switch=(IN_COMMIT_TIMESTAMPS_KEY, "true"))
DOMAIN_METADATA = Feature("domainMetadata", condition=f"{_FEATURE_KEY}, or a transaction's first domain")
CLUSTERING = Feature("clustering", condition="cluster_by", requires=(DOMAIN_METADATA.name,))
ROW_TRACKING = Feature("rowTracking", switch=(ROW_TRACKING_KEY, "true"), requires=(DOMAIN_METADATA.name,))
# Delta 4's DROP FEATURE adds it; log cleanup and checkpoints honour it (features.checkpoint_protection).
CHECKPOINT_PROTECTION = Feature("checkpointProtection", condition="Delta 4's DROP FEATURE")
# Column defaults: every write fills them (engine.features.column_defaults);
# `liquid` is Databricks' preview of clustering, never in the protocol (such tables are read).
ALLOW_COLUMN_DEFAULTS = Feature(
    "allowColumnDefaults", condition="a column default (set_column_default, or CURRENT_DEFAULT at create)"
)
# IcebergCompatV2: data files Iceberg reads as they are (engine.features.iceberg_compat), UniForm's base.
ICEBERG_COMPAT_V2 = Feature(
    "icebergCompatV2", switch=(ICEBERG_COMPAT_V2_KEY, "true"), requires=(COLUMN_MAPPING.name,)
)
LIQUID = Feature("liquid", condition="Databricks' clustering preview", writes=False, checkpoints=False)

FEATURES: tuple[Feature, ...] = (
    APPEND_ONLY, INVARIANTS, CHECK_CONSTRAINTS, CHANGE_DATA_FEED, GENERATED_COLUMNS, COLUMN_MAPPING,
    IDENTITY_COLUMNS, TIMESTAMP_NTZ, DELETION_VECTORS, TYPE_WIDENING, TYPE_WIDENING_PREVIEW,
    V2_CHECKPOINT, VACUUM_PROTOCOL_CHECK, VARIANT_TYPE, VARIANT_TYPE_PREVIEW, IN_COMMIT_TIMESTAMP,
    DOMAIN_METADATA, CLUSTERING, ROW_TRACKING, CHECKPOINT_PROTECTION, ALLOW_COLUMN_DEFAULTS,
    ICEBERG_COMPAT_V2, LIQUID,
)  # fmt: skip
BY_NAME = {f.name: f for f in FEATURES}


def names(*, where: str) -> frozenset[str]:
    """The names of the features whose boolean field `where` is true (`readers`, `writes`, ...)."""
    return frozenset(f.name for f in FEATURES if getattr(f, where))


def with_required(features: Iterable[str]) -> set[str]:
    """`features` with the features each of them requires (`Feature.requires`)."""
    out = set(features)
    for name in list(out):
        feature = BY_NAME.get(name)
        out.update(feature.requires if feature else ())
    return out
