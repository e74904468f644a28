"""The thresholds the maintenance planner decides by: defaults from the references, a table property
each, an argument each (an argument beats the property, which beats the default).

setting              default (reference)                               property
target_file_size     delta.targetFileSize, else 128 MiB (Databricks)    delta.targetFileSize
small_fraction       0.75: below 0.75 x target is small (Iceberg)       txnlog.maintenance.smallFraction
large_fraction       1.8: above is large, left alone (Iceberg)          txnlog.maintenance.largeFraction
min_input_files      5 small files in a partition (Iceberg)             txnlog.maintenance.minInputFiles
min_files_removed    4 files fewer, net (min_input_files - 1)           txnlog.maintenance.minFilesRemoved
dv_purge_fraction    0.05 of a file's rows deleted (Delta OPTIMIZE)     txnlog.maintenance.dvPurgeFraction
checkpoint_interval  delta.checkpointInterval, else 10 (Delta)          delta.checkpointInterval
quiet_minutes        60: a partition written since is skipped (Amoro)   txnlog.maintenance.quietMinutes
vacuum_min_bytes     1 GiB reclaimable                                  txnlog.maintenance.vacuumMinBytes
full_vacuum_days     30 between listings for orphans (VACUUM FULL)      txnlog.maintenance.fullVacuumDays
unclustered_fraction 0.1 of a clustered table's bytes unclustered       txnlog.maintenance.unclusteredFraction
                     (no clusteringProvider): above it, they are
                     clustered (1: never by this rule; 0: any at all)
rewrite_memory_bytes 256 MiB of input files a Z-order / clustering      txnlog.maintenance.rewriteMemoryBytes
                     group may sort in memory; a larger group is
                     sorted externally (engine.maintenance.external_sort)
log_compaction_commits  20 commits after the newest checkpoint,      txnlog.maintenance.logCompactionCommits
                     before the latest, that no log compaction covers
                     (engine.maintenance.log_compaction); 0: never

The properties are parsed and range-checked where they are set (engine.properties.
MAINTENANCE_PROPERTIES), and read here with them; a property an argument overrides is not read. A
malformed property or argument is an `InvalidArgumentError` naming it, and so is a
`vacuum_retention_ms` / `log_retention_ms` argument below the table's own retention (the planner
never plans to delete what the table keeps; a longer one is allowed).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError

DEFAULT_TARGET = 128 * 1024 * 1024
DEFAULT_REWRITE_MEMORY = 256 * 1024 * 1024


@dataclass(frozen=True)
class PlanSettings:
    """See the module docstring."""

    target_file_size: int = DEFAULT_TARGET
    small_fraction: float = 0.75
    large_fraction: float = 1.8
    min_input_files: int = 5
    min_files_removed: int = 4
    dv_purge_fraction: float = 0.05
    checkpoint_interval: int = props.DEFAULT_CHECKPOINT_INTERVAL
    quiet_minutes: float = 60.0
    vacuum_min_bytes: int = 1024**3
    full_vacuum_days: float = 30.0
    unclustered_fraction: float = 0.1
    rewrite_memory_bytes: int = DEFAULT_REWRITE_MEMORY
    log_compaction_commits: int = 20
    vacuum_retention_ms: int = props.DEFAULT_DELETED_FILE_RETENTION_MS
    log_retention_ms: int = props.DEFAULT_LOG_RETENTION_MS

    @property
    def small_bytes(self) -> int:
        return int(self.target_file_size * self.small_fraction)

    @property
    def large_bytes(self) -> int:
        return int(self.target_file_size * self.large_fraction)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def settings(conf: Mapping[str, str], overrides: Mapping[str, Any]) -> PlanSettings:
    """The settings for a table with properties `conf`, `overrides` (setting -> value) applied."""
    names = {f.name for f in dataclasses.fields(PlanSettings)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise InvalidArgumentError(
            f"plan_maintenance: unknown setting {unknown[0]!r}; known: {sorted(names)}"
        )
    values: dict[str, Any] = {
        # (128 MiB when unset, as the references; the engine's own OPTIMIZE default is delta-rs's)
        "target_file_size": props.target_file_size(conf)
        if conf.get(props.TARGET_FILE_SIZE)
        else DEFAULT_TARGET,
        "checkpoint_interval": props.checkpoint_interval(conf),
        "vacuum_retention_ms": props.deleted_file_retention_ms(conf),
        "log_retention_ms": props.log_retention_ms(conf),
    }
    defaults = dict(values)
    # (a property an argument overrides is not read: a bad one must not block the override)
    values.update(props.maintenance_values(conf, skip=frozenset(overrides)))
    for name, raw in overrides.items():
        kind = type(getattr(PlanSettings(), name))
        values[name] = _typed(name, raw, kind)
    for name in ("vacuum_retention_ms", "log_retention_ms"):  # (destructive: never below the table's)
        if name in overrides and values[name] < defaults[name]:
            raise InvalidArgumentError(
                f"{name}={values[name]} is below the table's ({defaults[name]}): the plan would delete"
                " what the table's retention keeps. Help: leave it unset, or change the table property"
            )
    if "min_files_removed" not in values and "min_input_files" in values:
        values["min_files_removed"] = max(1, values["min_input_files"] - 1)  # (follows it by default)
    out = PlanSettings(**values)
    _check(out)
    return out


def _typed(name: str, raw: Any, kind: type) -> Any:
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = kind(raw) if kind is float else int(str(raw))
        if not math.isfinite(value):
            raise ValueError
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidArgumentError(f"{name} must be a finite {kind.__name__}, got {raw!r}") from exc
    if value < 0:
        raise InvalidArgumentError(f"{name} must be >= 0, got {raw!r}")
    return value


def _check(s: PlanSettings) -> None:
    if s.target_file_size <= 0:
        raise InvalidArgumentError(f"target_file_size must be > 0, got {s.target_file_size}")
    if not 0 < s.small_fraction <= 1 <= s.large_fraction:
        raise InvalidArgumentError(
            f"need 0 < small_fraction <= 1 <= large_fraction, got {s.small_fraction} and {s.large_fraction}"
        )
    if s.min_input_files < 2:
        raise InvalidArgumentError(
            f"min_input_files must be >= 2 (no one-file bins), got {s.min_input_files}"
        )
    if s.min_files_removed < 1:
        raise InvalidArgumentError(f"min_files_removed must be >= 1, got {s.min_files_removed}")
    if not 0 < s.dv_purge_fraction <= 1:
        raise InvalidArgumentError(f"dv_purge_fraction must be in (0, 1], got {s.dv_purge_fraction}")
    if not 0 <= s.unclustered_fraction <= 1:
        raise InvalidArgumentError(f"unclustered_fraction must be in [0, 1], got {s.unclustered_fraction}")
    if s.rewrite_memory_bytes < 1:
        raise InvalidArgumentError(f"rewrite_memory_bytes must be >= 1, got {s.rewrite_memory_bytes}")
    if s.checkpoint_interval < 1:
        raise InvalidArgumentError(f"checkpoint_interval must be >= 1, got {s.checkpoint_interval}")
