"""The state of a log segment: the newest usable checkpoint at or below a version, and the commits
after it, applied in order.

`load_segment` picks the segment (`log_segment.segment_for`) and reads its checkpoint while the
commits after it are read and parsed on another thread (`thread_pools.side_reads`: their JSON parse
holds the GIL, the checkpoint's Arrow decode releases it). A checkpoint that cannot be read
(`LogCorruptedError`) is skipped and the next older one (or a full replay from commit 0) is tried;
with no older way to the version the error names the bad checkpoint.

`SegmentReads` is what one load has learnt, kept across its attempts (`snapshot.load_snapshot` tries
again on the whole listing when the hint's listing had no older way): the unreadable checkpoints,
never read again, and the commits already parsed, never read again, since an older checkpoint's
commits include a newer one's. Invariant: every attempt applies exactly its segment's commits, in
order; a parsed file is reused only for the same file name (a commit file never changes; a
compacted file stands at the version of the last commit it covers, so a version alone could mean
either). A full replay from commit 0, the last way out, reads its commits again.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from airflow_txnlog.engine.errors import LogCorruptedError, TxnLogError, VersionNotFoundError
from airflow_txnlog.engine.log import bulk_replay
from airflow_txnlog.engine.log.bulk_replay import bulk_state
from airflow_txnlog.engine.log.log_reader import CommitFiles, read_commits
from airflow_txnlog.engine.log.log_segment import LogListing, LogSegment, segment_for
from airflow_txnlog.engine.log.replay import LogState
from airflow_txnlog.engine.log.thread_pools import side_reads
from airflow_txnlog.engine.state.checkpoint_read import read_checkpoint
from airflow_txnlog.engine.storage import Storage

Parsed = tuple[int, list[dict[str, Any]], str]  # (version, actions, file name) of a commit


@dataclass
class SegmentReads:
    """What the attempts of one load share (see the module doc)."""

    bad_checkpoints: set[int] = field(default_factory=set)
    error: LogCorruptedError | None = None  # (the last bad checkpoint's: reported when no way is left)
    commits: dict[str, Parsed] = field(default_factory=dict)  # (by file name)


def parsed(storage: Storage, commits: CommitFiles, known: Mapping[str, Parsed] | None = None) -> list[Parsed]:
    """Each commit's (version, actions, file name), in order; the files in `known` (by file name:
    a compacted file `x.y.compacted.json` stands at version y, as commit y does) are not read again."""
    known = known or {}
    missing = [c for c in commits if c[1].name not in known]
    done = read_commits(storage, missing) if missing else []
    read = {c.name: (c.version, c.actions, c.name) for c in done}
    return [known[f.name] if f.name in known else read[f.name] for _, f in commits]


def replay(storage: Storage, state: LogState, commits: CommitFiles) -> LogState:
    """`state` with `commits` applied."""
    return state.apply_many(parsed(storage, commits))


def load_segment(
    storage: Storage, listing: LogListing, version: int, reads: SegmentReads
) -> tuple[LogState, LogSegment]:
    """The state at `version` and the segment it was built from (see the module doc)."""
    while True:
        try:
            segment = segment_for(listing, version, skip_checkpoints=frozenset(reads.bad_checkpoints))
        except (LogCorruptedError, VersionNotFoundError):
            if reads.error is None:
                raise
            raise reads.error from None  # no older way to rebuild this version: report the bad checkpoint
        if segment.checkpoint_version is None:
            # (None: too few commits for the bulk path, replayed action by action)
            bulk = bulk_state(storage, segment.commits, min_commits=bulk_replay.MIN_COMMITS)
            return bulk or replay(storage, LogState(version=-1), segment.commits), segment
        tail = side_reads().submit(parsed, storage, segment.commits, dict(reads.commits))
        try:
            base = read_checkpoint(storage, segment.checkpoint_version, segment.checkpoint_parts)
        except LogCorruptedError as exc:
            reads.bad_checkpoints.add(segment.checkpoint_version)
            reads.error = exc
            reads.commits.update(_kept(tail))  # (the next attempt's commits include these)
            continue
        return base.apply_many(tail.result()), segment


def _kept(tail: Future[list[Parsed]]) -> dict[str, Parsed]:
    """The commits a side read parsed, by file name; none when it failed (they are read again, and
    fail there)."""
    try:
        return {p[2]: p for p in tail.result()}
    except (TxnLogError, OSError):
        return {}
