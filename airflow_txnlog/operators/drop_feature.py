"""`TxnLogDropFeatureOperator`: Delta 4's DROP FEATURE as a task (`Table.drop_feature`,
docs/maintenance.md "Dropping a table feature").

Safe to retry: a feature the table's protocol no longer has was dropped already (by this task's
earlier try, or someone else), and the task commits nothing; a name the table does not have and the
engine does not know as a Delta table feature (a typo) fails the task. Names match
case-insensitively. Returns {"feature", "version": the DROP FEATURE commit or None, "commits": [...],
"protected_before": V or None}. No data changes: no asset event unless `emit_asset_event=True`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context

from airflow_txnlog.arguments import invalid
from airflow_txnlog.operators._base import TxnLogBaseOperator


class TxnLogDropFeatureOperator(TxnLogBaseOperator):
    """Drop a table feature from the protocol.

    :param feature: the feature's name, e.g. `inCommitTimestamp` or `deletionVectors` (templated).
    :param truncate_history: for `checkpointProtection` only: clean up its protected history first.
    """

    emits_by_default = False
    template_fields: Sequence[str] = ("table_uri", "txnlog_conn_id", "feature")

    def __init__(self, *, feature: str, truncate_history: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(feature, str) or not feature.strip():
            raise invalid(f"feature must be a table feature's name, got {feature!r}")
        if not isinstance(truncate_history, bool):
            raise invalid(f"truncate_history must be True or False, got {truncate_history!r}")
        self.feature = feature
        self.truncate_history = truncate_history

    def execute(self, context: Context) -> dict[str, Any]:
        # (here, not at module level: DAG parsing must not import pyarrow)
        from airflow_txnlog.engine.spi import (  # noqa: PLC0415
            canonical_feature,
            is_known_feature,
            supported_features,
        )

        feature = canonical_feature(self.feature.strip())
        table = self.table()
        snap = table.snapshot()
        if feature not in supported_features(snap.protocol):
            if not is_known_feature(feature):
                raise invalid(
                    f"{feature!r} is neither a feature of {self.table_uri} nor a Delta table feature this "
                    "engine knows (e.g. inCommitTimestamp, deletionVectors)"
                )
            self.lineage_read_version = snap.version
            self.log.info("%s has no feature %s (dropped already): nothing to do", self.table_uri, feature)
            self.emit(context, None, "DROP FEATURE")
            return {"feature": feature, "version": None, "commits": [], "protected_before": None}
        result = table.drop_feature(feature, truncate_history=self.truncate_history)
        self.lineage_read_version = result.version
        self.emit(context, result.version, "DROP FEATURE")
        self.log.info("dropped %s from %s: commits %s", feature, self.table_uri, result.commits)
        return {
            "feature": feature,
            "version": result.version,
            "commits": result.commits,
            "protected_before": result.protected_before,
        }
