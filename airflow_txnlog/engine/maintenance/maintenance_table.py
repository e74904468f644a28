"""`MaintenanceTable`: the narrow view of a table that savepoints, restore, vacuum, log cleanup and
health work through.

The maintenance modules sit below `table` in the module layers (`Table` calls them, so they must not
import it); they name what they need of a table as a `typing.Protocol` instead, much as
delta-kernel-rs passes a `Committer` trait rather than the whole engine:

- `storage`: the table's files;
- `snapshot()`: the latest version, brought up to date (only new commits are read);
- `transaction(operation, parameters, snapshot=...)`: a transaction reading `snapshot` (default the
  latest), committed through the table so that its checkpoint policy and limits apply;
- `txn_commit_version(app_id, version)`: which commit recorded an idempotent writer's txn.

`Table` satisfies it as it is (no adapter). A test can hand in a stand-in, e.g. one whose
`snapshot()` first returns a stale version, to drive a race deterministically. Operations that need
only files (listing or reading savepoints) keep taking a `Storage`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from airflow_txnlog.engine.state.snapshot import Snapshot
from airflow_txnlog.engine.storage import Storage
from airflow_txnlog.engine.write.transaction import Transaction


class MaintenanceTable(Protocol):
    """What maintenance needs of a table; `airflow_txnlog.engine.Table` satisfies it."""

    @property
    def storage(self) -> Storage: ...

    def snapshot(self) -> Snapshot:
        """The latest snapshot."""
        ...

    def transaction(
        self,
        operation: str = ...,
        parameters: Mapping[str, Any] | None = None,
        *,
        snapshot: Snapshot | None = None,
    ) -> Transaction:
        """A transaction reading `snapshot` (None: the latest snapshot)."""
        ...

    def txn_commit_version(self, app_id: str, version: int) -> int | None:
        """The version whose commit recorded txn `app_id` at `version` or later (None: not in the log)."""
        ...
