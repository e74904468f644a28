"""Which files of `_delta_log/` make up a version: the newest usable checkpoint and the commits after it.

`_last_checkpoint` is only a hint. With a valid hint the log is listed from the hinted version; if
the listing shows no complete checkpoint at or after it (stale or deleted), or the hint is missing or
unreadable, the whole log is listed. A checkpoint is usable when it is complete (a classic file, a
UUID-named v2 checkpoint whose sidecars it names itself, or all parts 1..n of a multi-part set) and
not empty. The commits from checkpoint+1 to the target must be
contiguous, else `LogCorruptedError`; a target below the oldest reconstructable version is a
`VersionNotFoundError`.

Commit timestamps are file modification times forced to increase: ts(v) = max(mtime(v), ts(v-1) + 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from airflow_txnlog.engine.errors import LogCorruptedError, TableNotFoundError, VersionNotFoundError
from airflow_txnlog.engine.log.log_paths import parse_name
from airflow_txnlog.engine.storage import LOG_DIR, ListedFile, Storage


@dataclass
class LogListing:
    """The log files seen by one listing, classified by version."""

    commits: dict[int, ListedFile] = field(default_factory=dict)
    checkpoints: dict[int, list[str]] = field(default_factory=dict)  # complete sets only
    complete: bool = True  # False when listed from a hint (older files not seen)
    compactions: dict[int, list[tuple[int, ListedFile]]] = field(
        default_factory=dict
    )  # first -> (last, file)
    checksums: set[int] = field(default_factory=set)  # versions with a `.crc` file

    @classmethod
    def build(cls, files: list[ListedFile], *, complete: bool) -> LogListing:
        out = cls(complete=complete)
        multi: dict[tuple[int, int], dict[int, str]] = {}
        for f in files:
            parsed = parse_name(f.name)
            if parsed is None:
                continue
            if parsed.kind == "commit":
                out.commits[parsed.version] = f
            elif parsed.kind == "crc" and f.size > 0:
                out.checksums.add(parsed.version)
            elif parsed.kind == "compacted" and parsed.first is not None and f.size > 0:
                out.compactions.setdefault(parsed.first, []).append((parsed.version, f))
            elif parsed.kind == "v2checkpoint" and f.size > 0:
                out.checkpoints.setdefault(parsed.version, [f.name])  # one file, sidecars aside
            elif parsed.kind == "checkpoint" and f.size > 0:
                if parsed.parts == 1:
                    out.checkpoints.setdefault(parsed.version, [f.name])
                else:
                    multi.setdefault((parsed.version, parsed.parts), {})[parsed.part] = f.name
        for (version, parts), found in multi.items():
            if len(found) == parts and version not in out.checkpoints:
                out.checkpoints[version] = [found[i] for i in range(1, parts + 1)]
        return out

    def latest(self) -> int | None:
        versions = list(self.commits) + list(self.checkpoints)
        return max(versions) if versions else None

    def checkpoints_at_or_below(self, version: int) -> list[int]:
        return sorted((v for v in self.checkpoints if v <= version), reverse=True)

    def run_from(self, first: int, until: int | None = None) -> list[tuple[int, ListedFile]]:
        """The contiguous commits `first`, `first`+1, ... (up to `until`) that the listing holds."""
        run = []
        while first in self.commits and (until is None or first <= until):
            run.append((first, self.commits[first]))
            first += 1
        return run


def list_log(storage: Storage, *, hint_version: int | None = None) -> LogListing:
    """List the log, from the hinted version when that finds a complete checkpoint."""
    if hint_version is not None and hint_version >= 0:
        listing = LogListing.build(storage.list_log(f"{hint_version:020d}"), complete=False)
        if any(v >= hint_version for v in listing.checkpoints):
            return listing
    listing = LogListing.build(storage.list_log(), complete=True)
    if listing.latest() is None:
        where = f"{storage.root}/{LOG_DIR}"
        raise TableNotFoundError(f"no Delta table at {storage.root!r}: {where} has no commits or checkpoints")
    return listing


@dataclass(frozen=True)
class LogSegment:
    version: int
    checkpoint_version: int | None
    checkpoint_parts: list[str]
    commits: list[tuple[int, ListedFile]]  # checkpoint+1 .. version, in order


def segment_for(
    listing: LogListing, version: int, *, skip_checkpoints: frozenset[int] = frozenset()
) -> LogSegment:
    """The files to replay for `version`, using the newest usable checkpoint not in `skip_checkpoints`."""
    latest = listing.latest()
    assert latest is not None
    if version > latest:
        raise VersionNotFoundError(f"version {version} does not exist; the latest version is {latest}")
    cp = next((v for v in listing.checkpoints_at_or_below(version) if v not in skip_checkpoints), None)
    start = 0 if cp is None else cp + 1
    if cp is None and 0 not in listing.commits:
        oldest = min(listing.commits) if listing.commits else latest
        raise VersionNotFoundError(
            f"version {version} cannot be reconstructed: commit 0 is gone and no usable checkpoint "
            f"is at or below it (oldest commit present: {oldest})"
        )
    commits = listing.run_from(start, version)
    if len(commits) != version + 1 - start:
        missing = start + len(commits)
        raise LogCorruptedError(
            f"the log is missing commit {missing:020d}.json: versions {start}..{version} must be contiguous"
        )
    parts = listing.checkpoints[cp] if cp is not None else []
    return LogSegment(version, cp, parts, _compacted(listing, commits))


def _compacted(listing: LogListing, commits: list[tuple[int, ListedFile]]) -> list[tuple[int, ListedFile]]:
    """`commits` with runs x..y replaced by a log compaction file `x.y.compacted.json` (entered as
    version y), the longest one at each step. The last commit is always read itself: it carries the
    version's commitInfo (in-commit timestamp, row tracking marks), which a compaction leaves out."""
    if not listing.compactions or len(commits) < 3:
        return commits
    first, last = commits[0][0], commits[-1][0]
    out, v = [], first
    while v <= last:
        spans = [(y, f) for y, f in listing.compactions.get(v, []) if y < last]
        if spans:
            y, f = max(spans, key=lambda span: span[0])
            out.append((y, f))
            v = y + 1
        else:
            out.append((v, listing.commits[v]))
            v += 1
    return out


def monotonic_timestamps(commits: Mapping[int, ListedFile], *, after: int | None = None) -> dict[int, int]:
    """Commit timestamps from modification times, forced strictly increasing by version (and above
    `after`, the timestamp of the version before the first of `commits`, when it is known)."""
    out: dict[int, int] = {}
    prev = after
    for v in sorted(commits):
        ts = commits[v].mtime_ms
        if prev is not None and ts <= prev:
            ts = prev + 1
        out[v] = prev = ts
    return out
