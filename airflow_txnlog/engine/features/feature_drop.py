"""DROP FEATURE's rules, as Delta 4 applies them (AlterTableDropFeatureDeltaCommand, fast drop):
which features may leave a table's protocol, which need their history protected, and the protocol
that remains. The commits are engine.maintenance.drop_feature's.

Protocol algebra (Delta's TableFeatureSupport):
    denormalized  a legacy protocol (writer < 7) as table features: (r, 7) listing what it implies
    without      `denormalized` less the feature (both lists for a reader-writer feature), plus
                  `checkpointProtection` when the drop protects history, then
    normalized    the legacy (r, w) whose versions imply exactly the remaining features, if the
                  lowest versions that support them do; else (r, 7) listing them, r = 3 if a
                  reader-writer table feature remains, 2 for column mapping alone, else 1.
So (1, 7, appendOnly, invariants, checkConstraints, inCommitTimestamp) less inCommitTimestamp is
(1, 3), and a protected drop always stays at writer 7 (checkpointProtection is a table feature).

Protected drops (`protects_history`): reader-writer features, whose readers must start from a
checkpoint past the drop; writer-only features drop with one commit. Delta cannot drop appendOnly,
invariants, changeDataFeed, generatedColumns, identityColumns, timestampNtz, variantType,
icebergCompat*, clustering or allowColumnDefaults (`NEVER`), nor checkpointProtection except by
truncating history; this engine drops icebergCompatV2 (its rules bind only while its property is on)
and generatedColumns / identityColumns once no column uses them (decided, as the issue asked: so a
table can be handed back to writers that do not know them). `NOT_YET` (columnMapping)
is droppable in Delta by rewriting every data file, which this engine does not do yet.
"""

from __future__ import annotations

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine.errors import InvalidArgumentError, UnsupportedFeatureError
from airflow_txnlog.engine.features import checkpoint_protection
from airflow_txnlog.engine.features.table_features import implied_features
from airflow_txnlog.engine.log.actions import Protocol

DROPPABLE = frozenset(
    {"deletionVectors", "vacuumProtocolCheck", "inCommitTimestamp", "checkConstraints", "rowTracking"}
    | {"domainMetadata", "typeWidening", "typeWidening-preview", checkpoint_protection.FEATURE}
    | {"icebergCompatV2"}  # (not in Delta: a writer feature whose rules bind only while its property is on)
    | {"v2Checkpoint"}
    | {"generatedColumns", "identityColumns"}  # (not in Delta: when no column uses them, nothing does)
)
NEVER = frozenset(
    {"appendOnly", "invariants", "changeDataFeed", "timestampNtz"}
    | {"variantType", "variantType-preview", "icebergCompatV1", "icebergCompatV3"}
    | {"clustering", "allowColumnDefaults", "liquid"}
)
NOT_YET = frozenset({"columnMapping"})
# feature -> the features that need it in the protocol (Delta's reverse `requiredFeatures`)
_NEEDED_BY = {"domainMetadata": ("rowTracking", "clustering"), "columnMapping": ("icebergCompatV2",)}


def supported_features(protocol: Protocol) -> set[str]:
    """Every feature the protocol supports: listed, or implied by its legacy versions."""
    readers, writers = implied_features(protocol)
    return readers | writers


def is_known(feature: str) -> bool:
    """Is `feature` a Delta table feature this module has a rule for (droppable or not)?"""
    return feature in registry.BY_NAME or feature in DROPPABLE | NEVER | NOT_YET


def protects_history(feature: str) -> bool:
    """Does dropping `feature` need the barrier checkpoints and checkpointProtection?"""
    known = registry.BY_NAME.get(feature)
    return known is not None and known.readers


def check_droppable(protocol: Protocol, feature: str) -> None:
    """InvalidArgumentError / UnsupportedFeatureError unless `feature` can be dropped from a table
    with `protocol` (what the table's state must be, the per-feature checks, come later)."""
    if not isinstance(feature, str) or not feature:
        raise InvalidArgumentError(f"drop_feature: feature must be a feature name, got {feature!r}")
    if feature.startswith("delta."):
        raise InvalidArgumentError(
            f"drop_feature: {feature!r} is a table property, not a feature. Help: unset_properties"
        )
    present = supported_features(protocol)
    if feature not in present:
        has = ", ".join(sorted(present)) or "none"
        raise InvalidArgumentError(
            f"drop_feature: the table does not have feature {feature!r} (it has: {has})"
        )
    if feature in NEVER:
        raise UnsupportedFeatureError(
            f"drop_feature: {feature!r} cannot be dropped (Delta cannot drop it either); nothing was written",
            feature=feature,
        )
    if feature in NOT_YET or feature not in DROPPABLE:
        known = "cannot drop" if is_known(feature) else "does not know the feature"
        raise UnsupportedFeatureError(
            f"drop_feature: this engine {known} {feature!r} yet; nothing was written. "
            "Help: drop it with Delta on Spark (ALTER TABLE ... DROP FEATURE)",
            feature=feature,
        )
    for other in _NEEDED_BY.get(feature, ()):
        if other in present:
            raise InvalidArgumentError(
                f"drop_feature: {feature!r} is needed by {other!r}, which the table has; nothing was written"
            )


def without(protocol: Protocol, feature: str, *, protect: bool) -> Protocol:
    """The protocol after dropping `feature` (see the module doc), with checkpointProtection if `protect`."""
    readers, writers = implied_features(protocol)
    readers.discard(feature)
    writers.discard(feature)
    if protect:
        writers.add(checkpoint_protection.FEATURE)
    return normalized(readers, writers)


def check_protocol_change(current: Protocol, new: Protocol, dropping: str | None) -> None:
    """InvalidArgumentError unless a commit may change `current` to `new`: it never loses a feature
    (Delta's `canUpgradeTo`; a legacy protocol may take its table-features form and back), but for a
    DROP FEATURE of `dropping`, which loses exactly that one and may gain only checkpointProtection
    (Delta's `canDowngradeTo`)."""
    old, got = supported_features(current), supported_features(new)
    if dropping is None:
        if not old <= got:
            raise InvalidArgumentError(f"a protocol is never downgraded (it would lose {sorted(old - got)})")
        return
    if old - got != {dropping} or got - old - {checkpoint_protection.FEATURE}:
        raise InvalidArgumentError(f"a DROP FEATURE of {dropping!r} may remove that feature only; got {new}")


def canonical(feature: str) -> str:
    """A feature name as Delta spells it (Delta matches DROP FEATURE names case-insensitively)."""
    if not isinstance(feature, str):
        return feature  # (check_droppable says what is wrong with it)
    known = {n.lower(): n for n in (*registry.BY_NAME, *DROPPABLE, *NEVER, *NOT_YET)}
    return known.get(feature.strip().lower(), feature)


def normalized(readers: set[str], writers: set[str]) -> Protocol:
    """The weakest protocol supporting exactly these features (Delta's `normalized`)."""
    everything = readers | writers
    r = max([1, *(_min_versions(f)[0] for f in everything)])
    w = max([1, *(_min_versions(f)[1] for f in everything)])
    legacy = Protocol(r, w)
    if w < 7 and supported_features(legacy) == everything:
        return legacy
    listed_readers = tuple(sorted(readers)) if r == 3 else None
    return Protocol(r, 7, listed_readers, tuple(sorted(everything)))


def _min_versions(feature: str) -> tuple[int, int]:
    known = registry.BY_NAME.get(feature)
    if known is not None and known.legacy is not None:
        return known.legacy
    return (3, 7) if known is not None and known.readers else (1, 7)
