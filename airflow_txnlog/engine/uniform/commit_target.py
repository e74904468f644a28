"""The version a commit just made, as a UniForm sync needs it, without loading that version.

A sync needs the new version's number, metadata (schema, partitioning, properties, id), commit
timestamp, and, for a full conversion only, its live files. After a commit the table holds the
snapshot it read before (`base`); bringing it up to the new version lists `_delta_log/` (a cost
that grows with the log) and replays. A `CommitTarget` instead reads the commits after `base` by
name (usually one): the newest `metaData` among them, or the base's; the last commit's
`inCommitTimestamp`, else its commitInfo `timestamp`; and keeps their parsed actions, which the
sync folds into its net change without reading them again. Only `files()` loads the snapshot (once).
"""

from __future__ import annotations

from typing import Any

from airflow_txnlog.engine.log.actions import IN_COMMIT_TIMESTAMP, AddFile, Metadata
from airflow_txnlog.engine.log.log_paths import commit_name
from airflow_txnlog.engine.log.log_reader import parse_commit
from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import LOG_DIR, Storage


class CommitTarget:
    """Version `version` of the table `base` is a snapshot of (see the module docstring)."""

    def __init__(self, storage: Storage, base: Snapshot, version: int) -> None:
        self.base, self.version = base, version
        names = [f"{LOG_DIR}/{commit_name(v)}" for v in range(base.version + 1, version + 1)]
        self.commits: list[list[dict[str, Any]]] = [
            parse_commit(blob, name=name) for name, blob in zip(names, storage.read_many(names), strict=True)
        ]
        self.metadata: Metadata = base.metadata
        for actions in self.commits:
            for action in actions:
                if "metaData" in action:
                    self.metadata = Metadata.from_wire(action["metaData"])
        last = self.commits[-1] if self.commits else []
        info: dict[str, Any] = next((a["commitInfo"] for a in last if "commitInfo" in a), {})
        self.timestamp = int(info.get(IN_COMMIT_TIMESTAMP) or info.get("timestamp") or 0)
        self._snapshot: Snapshot | None = None

    def files(self) -> list[AddFile]:
        if self._snapshot is None:
            self._snapshot = self.base.update(until=self.version)
        return self._snapshot.files()

    def actions_after(self, version: int) -> list[list[dict[str, Any]]] | None:
        """The parsed commits after `version` up to this one, when they are the ones read here."""
        return self.commits if version == self.base.version else None
