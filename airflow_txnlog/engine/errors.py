"""The engine's exceptions: one root, one class per thing that can go wrong.

Every message says what happened and, where the caller can act, what to do ("Help: ...").
Conflict errors are raised when a concurrent writer committed first and our transaction cannot be
safely rebased on top of it; re-running the whole operation (re-reading the table) is the remedy.
Retry errors (`CommitRetriesExceededError`, and restore's `RestoreRetriesExceededError`) mean the
table stayed too busy: nothing was committed, and retrying later (or pausing other writers) is the
remedy. `CommitOutcomeUnknownError` is the one case where a commit may or may not have landed.
"""

from __future__ import annotations

from collections.abc import Sequence


class TxnLogError(Exception):
    """Root of every error raised by airflow_txnlog."""


class InvalidArgumentError(TxnLogError, ValueError):
    """A caller passed a value the engine cannot accept (nothing was written)."""


class TableNotFoundError(TxnLogError):
    """There is no Delta log at the given location."""


class TableExistsError(TxnLogError):
    """A table (a `_delta_log` with commits) already exists where one was to be created."""


class VersionNotFoundError(TxnLogError):
    """The requested version or timestamp is not reconstructable from the log."""


class LogCorruptedError(TxnLogError):
    """The log is inconsistent: a missing commit, an unreadable file, missing protocol/metaData."""


class UnsupportedFeatureError(TxnLogError):
    """The table uses a protocol feature this engine does not implement; nothing was read or written."""

    def __init__(self, message: str, *, feature: str) -> None:
        super().__init__(message)
        self.feature = feature


class SchemaMismatchError(TxnLogError):
    """Data written does not match the table schema."""


class PredicateError(TxnLogError, ValueError):
    """A SQL predicate could not be parsed or refers to unknown columns."""


class UnsupportedExpressionError(TxnLogError):
    """A valid Spark SQL expression (a constraint, a generation expression) uses something the
    engine's Arrow evaluator cannot compute; nothing was written. Spark paths (`SparkTable`)
    evaluate it with Spark itself."""


class ConstraintViolationError(TxnLogError):
    """Rows written break a rule of the table or of the write: a CHECK constraint, a column
    invariant, a NULL in a NOT NULL column, a generated column's value, or a row outside
    `replace_where`. Nothing was committed and the files written for it were removed.

    `constraint` / `expression` name the rule (None where the rule is not a named constraint),
    `row` holds one offending row's values (column -> value) and `count` how many rows broke it
    (None when the write stopped at the first one)."""

    # (class defaults: an error carried back from a Spark worker without its fields keeps these)
    constraint: str | None = None
    expression: str | None = None
    row: dict[str, object] | None = None
    count: int | None = None

    def __init__(
        self,
        message: str,
        *,
        constraint: str | None = None,
        expression: str | None = None,
        row: dict[str, object] | None = None,
        count: int | None = None,
    ) -> None:
        super().__init__(message)
        self.constraint, self.expression, self.row, self.count = constraint, expression, row, count


class ConstraintNotFoundError(InvalidArgumentError):
    """A CHECK constraint to drop is not in the table; nothing was written.

    `constraint` is the name asked for, `known` the table's constraints. The message's "Help:" names
    how the caller ignores a missing constraint: `if_exists=True` in Python; a command line renders
    its own flag with `worded_for(...)`."""

    def __init__(
        self, constraint: str, known: Sequence[str], *, ignore_missing: str = "if_exists=True"
    ) -> None:
        super().__init__(
            f"the table has no constraint {constraint!r} (its constraints: {list(known) or 'none'}). Nothing "
            f"was written. Help: pass {ignore_missing} to ignore a missing constraint"
        )
        self.constraint, self.known = constraint, list(known)

    def worded_for(self, ignore_missing: str) -> ConstraintNotFoundError:
        """The same error, its Help naming `ignore_missing` (e.g. a command line's `--if-exists`)."""
        return ConstraintNotFoundError(self.constraint, self.known, ignore_missing=ignore_missing)


class PropertyNotSetError(InvalidArgumentError):
    """A table property to unset is not in the table; nothing was written. `key` is the property;
    the message's "Help:" names how the caller skips it (`worded_for`, as ConstraintNotFoundError)."""

    def __init__(self, key: str, *, ignore_missing: str = "if_exists=True") -> None:
        super().__init__(
            f"unset_properties: the table has no property {key!r}; nothing was written. Help: "
            f"{ignore_missing} skips keys that are not set"
        )
        self.key = key

    def worded_for(self, ignore_missing: str) -> PropertyNotSetError:
        return PropertyNotSetError(self.key, ignore_missing=ignore_missing)


class StorageError(TxnLogError):
    """The storage backend failed, or cannot give the atomicity a commit needs."""


class AppendOnlyViolationError(TxnLogError):
    """A data-changing remove was attempted on a table with `delta.appendOnly=true`."""


class RetentionTooShortError(InvalidArgumentError):
    """A vacuum / cleanup retention below the table's safety limit, with the check left on."""


class FilesMissingError(TxnLogError):
    """Data files a version needs are gone (vacuumed or deleted by hand); `missing` lists them."""

    def __init__(self, message: str, *, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing


class SavepointExistsError(TxnLogError):
    """A savepoint with that name already exists."""


class SavepointNotFoundError(TxnLogError):
    """No savepoint with that name exists."""


class SavepointFilesMissingError(FilesMissingError):
    """Files of the version to savepoint are gone; no savepoint was created."""


class RestoreError(TxnLogError):
    """A restore cannot be performed safely; the table is unchanged."""


class RestoreFilesMissingError(RestoreError, FilesMissingError):
    """Files the restore must re-add are gone; the table is unchanged."""


class VacuumInProgressError(TxnLogError):
    """A vacuum kept deleting files that a new savepoint or restore needs checked; nothing was made."""

    def __init__(self, fences: list[str], waited_s: float) -> None:
        super().__init__(
            f"a vacuum is still deleting files after waiting {waited_s:g} s (fences: {fences}); the "
            "savepoint (or restore) needs files that vacuum may delete, so it was not made. Help: retry "
            "after the vacuum ends; if no vacuum is running, a crashed one left the fence, which is "
            "ignored 20 minutes after its last update (or delete it)."
        )
        self.fences = fences


class ForeignCommitsError(RestoreError):
    """Other writers committed after the restore target; restoring would discard their data."""

    def __init__(self, message: str, *, versions: list[int]) -> None:
        super().__init__(message)
        self.versions = versions


class PublicationError(TxnLogError):
    """A publication (write-audit-publish) cannot be made or its version cannot be kept."""


class NotPublishedError(PublicationError):
    """A reader follows a publication channel on which nothing has been published yet."""


class ReleaseError(TxnLogError):
    """A multi-table release cannot be published, read or rolled back (engine.releases)."""


class ReleaseNotFoundError(ReleaseError):
    """There is no release log at a location, or no release with a sequence, or none yet."""


class VersionAlreadyExistsError(TxnLogError):
    """Internal to the commit loop: another writer created the commit file for this version first.

    Never escapes `Transaction.commit` (and so is not exported): the loop catches it, checks the
    winning commits for conflicts and retries at the next version. What the caller may see instead
    is a `CommitConflictError` subclass (a winner invalidated what we read) or
    `CommitRetriesExceededError` (the attempts ran out).
    """

    def __init__(self, version: int) -> None:
        super().__init__(f"commit file for version {version} already exists")
        self.version = version


class CommitTooLargeError(InvalidArgumentError):
    """A commit's JSON is larger than the table handle's `max_commit_bytes`; nothing was written."""

    def __init__(self, size: int, limit: int, actions: int) -> None:
        super().__init__(
            f"the commit would be {size:,} bytes ({actions:,} actions), over the limit of {limit:,} bytes "
            "(max_commit_bytes). Nothing was written. Every reader replays each commit whole, so huge "
            "commits make the table slow for everyone. Help: split the operation into several commits "
            "(e.g. per partition), or open the table with a larger max_commit_bytes (None: no limit)."
        )
        self.size, self.limit, self.actions = size, limit, actions


class CommitRetriesExceededError(TxnLogError):
    """The table stayed too busy for the configured number of commit attempts; nothing was committed."""


class RestoreRetriesExceededError(CommitRetriesExceededError, RestoreError):
    """Other writers kept committing while a restore re-planned; the table is unchanged."""


class CommitOutcomeUnknownError(StorageError):
    """The storage failed while writing a commit file: the commit may or may not have been written."""

    def __init__(self, version: int, cause: BaseException) -> None:
        super().__init__(
            f"the storage failed while writing commit {version} ({type(cause).__name__}: {cause}); the "
            "commit may or may not be in the log. Help: re-open the table and look at latest_version() / "
            "history() before retrying, or write with txn=(app_id, version) so that a retry cannot commit "
            "twice."
        )
        self.version = version


class CommitConflictError(TxnLogError):
    """Base of the concurrency conflicts: a concurrent commit invalidated what this one read."""

    help = "Re-run the operation: it will read the latest version and plan again."

    def __init__(self, what: str, *, winning_version: int) -> None:
        super().__init__(f"{what} (conflicting commit: version {winning_version}). Help: {self.help}")
        self.winning_version = winning_version


class ProtocolChangedError(CommitConflictError):
    """A concurrent commit changed the table protocol."""

    help = "The protocol was upgraded concurrently; re-open the table and retry the operation."


class TableCreatedConcurrentlyError(ProtocolChangedError):
    """A first write to an empty location (a deferred create) lost to another writer's version 0."""

    help = (
        "Another writer created a table at this location first (both wrote to an empty location). "
        "Open the table and run the write again, or create the table ahead of time."
    )

    def __init__(self) -> None:
        super().__init__("version 0 was written by another writer", winning_version=0)


class MetadataChangedError(CommitConflictError):
    """A concurrent commit changed the table metadata (schema, partitioning or properties)."""

    help = "The schema or properties changed concurrently; re-read the table and retry the operation."


class ConcurrentTransactionError(CommitConflictError):
    """A concurrent commit used the same application id (txn appId)."""

    help = "Two runs of the same idempotent writer raced; check which one should win before retrying."


class ConcurrentDomainMetadataError(ConcurrentTransactionError):
    """A concurrent commit changed a metadata domain this transaction changes too."""

    help = "Read the table again and redo the change on top of the other commit's domain value."


class ConcurrentAppendError(CommitConflictError):
    """Files were added concurrently to the data this transaction read."""

    help = (
        "Re-run the operation so it sees the new files; narrow its predicate (e.g. to a partition) "
        "so unrelated appends do not conflict."
    )


class ConcurrentDeleteReadError(CommitConflictError):
    """A file this transaction read was removed concurrently."""

    help = "Re-run the operation on the latest version; the data it read has been rewritten or deleted."


class ConcurrentDeleteDeleteError(CommitConflictError):
    """A file this transaction removes was removed concurrently as well."""

    help = "Another operation deleted or rewrote the same files; re-run on the latest version."
