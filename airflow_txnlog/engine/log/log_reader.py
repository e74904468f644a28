"""Reading the log after a version: the one way to list, read and parse commits and the checkpoint hint.

Everything that reads commits goes through this module: snapshot refresh, a commit's check against
the commits that won the race, `Table.history`, restore's look at the commits since its target, time
travel by in-commit timestamp, and the trigger poller. None of them builds a log file name::

    _delta_log/ ... 41.json 42.json | 43.json 43.checkpoint.parquet 44.json
                                    ^
                 list_after(storage, 42): ONE listing that starts after 42.json

- `list_after(storage, v)`: the log files of versions > v (commits and checkpoints), from one listing
  that starts after `v.json`: on S3 a server-side `StartAfter`, so a long log costs one small request;
  locally one directory scan; other fsspec stores list the folder and filter. `v = -1`: the whole log.
  `LogListing.run_from` then gives the contiguous commits from a version on.
- `read_commits(storage, commits)`: each commit's parsed actions, in the order given. The files are
  fetched `batch` at a time with one `Storage.read_many` per batch (object stores fetch a batch
  concurrently), lazily: a caller that stops early reads no further batch, and memory stays bounded
  on a long log.
- `commit_info(actions)`: a commit's `commitInfo` (`{}` when it has none: the action is optional).
  `read_commit_infos` gets only that, parsing each commit line by line up to its commitInfo (the
  first line, as every writer we know writes it), so a poller never parses a big commit's file
  actions.
- `skim_commit(version, name, data, parse_when=...)`: a commit read for its `commitInfo` alone (the
  first line, parsed alone) and parsed whole only when its bytes hold one of `parse_when` (and,
  when asked, it is no blind append): a backwards pass over a long log for a few actions (VACUUM
  LITE's removes, the last Z-order) parses a small line per commit and searches the rest once.
- `read_last_checkpoint(storage)`: the `_last_checkpoint` hint, None when missing or unreadable (a
  hint only: a stale or bad one costs a longer listing, never a wrong answer);
  `latest_commit_version` lists from it.

Invariants: a commit is newline-delimited JSON objects, at least one (an empty file is a torn write);
anything else, or a listed commit that is gone when read (log cleanup raced the reader), is a
`LogCorruptedError` naming the file. Nothing here imports pyarrow.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from airflow_txnlog.engine.errors import LogCorruptedError
from airflow_txnlog.engine.log.actions import COMMIT_INFO
from airflow_txnlog.engine.log.log_paths import LAST_CHECKPOINT, commit_name
from airflow_txnlog.engine.log.log_segment import LogListing, list_log
from airflow_txnlog.engine.storage import LOG_DIR, ListedFile, Storage

# Commits per `read_many`: one concurrent round trip on object stores for a poll or a refresh, while
# a replay of thousands of commits never holds them all in memory at once.
READ_BATCH = 128
TXN_SEARCH_BATCH = 16  # the commit searched for is usually among the newest: stop reading early

CommitFiles = Sequence[tuple[int, ListedFile]]
"""(version, listed file) pairs, as `LogListing.run_from` and `LogSegment.commits` give them."""


@dataclass(frozen=True, slots=True)
class LogCommit:
    """One commit as read: its version, file name inside `_delta_log/` and actions (wire dicts)."""

    version: int
    name: str
    actions: list[dict[str, Any]]

    @property
    def info(self) -> dict[str, Any]:
        return commit_info(self.actions)


@dataclass(frozen=True, slots=True)
class SkimmedCommit:
    """A commit read for its `commitInfo` (`{}` when it has none) and, only when `skim_commit` was
    asked to, its actions (None: not parsed, since its bytes hold none of the strings asked for)."""

    version: int
    name: str
    info: dict[str, Any]
    actions: list[dict[str, Any]] | None


@dataclass(frozen=True, slots=True)
class LastCheckpoint:
    """The `_last_checkpoint` hint: a recent checkpoint's version (possibly stale) and its part count."""

    version: int
    parts: int | None = None


def list_after(storage: Storage, version: int) -> LogListing:
    """The log files of versions > `version` (every file when `version` < 0), from one listing."""
    if version < 0:
        return LogListing.build(storage.list_log(), complete=True)
    return LogListing.build(storage.list_log(commit_name(version)), complete=False)


def _blobs(storage: Storage, commits: CommitFiles, batch: int) -> Iterator[tuple[int, str, bytes]]:
    for start in range(0, len(commits), batch):
        chunk = commits[start : start + batch]
        try:
            blobs = storage.read_many([f"{LOG_DIR}/{f.name}" for _, f in chunk])
        except FileNotFoundError as exc:
            raise LogCorruptedError(f"a commit file disappeared while reading the log: {exc}") from exc
        for (version, f), data in zip(chunk, blobs, strict=True):
            yield version, f.name, data


def read_commit_blobs(
    storage: Storage, commits: CommitFiles, *, batch: int = READ_BATCH
) -> Iterator[tuple[int, str, bytes]]:
    """(version, file name, raw bytes) of each commit, in order, for a reader that parses in bulk."""
    return _blobs(storage, commits, batch)


def read_commits(
    storage: Storage,
    commits: CommitFiles,
    *,
    batch: int = READ_BATCH,
    containing: tuple[bytes, ...] = (),
) -> Iterator[LogCommit]:
    """The commits `commits` names, parsed, in that order (fetched `batch` at a time, lazily). With
    `containing`, only the commits whose bytes contain one of those strings are parsed and yielded
    (a scan for some actions skips the parse of every other commit)."""
    for version, name, data in _blobs(storage, commits, batch):
        if containing and not any(needle in data for needle in containing):
            continue
        yield LogCommit(version, name, parse_commit(data, name=name))


def read_commit_infos(
    storage: Storage, commits: CommitFiles, *, batch: int = READ_BATCH
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(version, commitInfo) of each commit, parsing each file only up to its commitInfo line."""
    for version, name, data in _blobs(storage, commits, batch):
        yield version, commit_info(_iter_actions(data, name=name))


def read_commit_info(storage: Storage, version: int) -> dict[str, Any] | None:
    """commitInfo of one known version, reading only that commit file (None once it is gone)."""
    try:
        data = storage.read(f"{LOG_DIR}/{commit_name(version)}")
    except FileNotFoundError:
        return None
    return commit_info(_iter_actions(data, name=commit_name(version)))


_INFO_LINE = b'{"commitInfo":'


def skim_commit(
    version: int,
    name: str,
    data: bytes,
    *,
    parse_when: tuple[bytes, ...] = (),
    blind_appends_skipped: bool = False,
) -> SkimmedCommit:
    """`data` (commit `version`'s bytes) as a SkimmedCommit: its commitInfo line parsed alone (every
    writer we know writes it first; one written elsewhere is found by a search, and a commit without
    one costs that search alone), and its actions too when the bytes hold one of `parse_when`. With
    `blind_appends_skipped`, a commit whose commitInfo says `isBlindAppend: true` (only adds, as
    Delta's writers set it) is not searched: an append-heavy log is mostly such commits."""
    if not data or data.isspace():  # (stops at the first other byte: no copy of the commit)
        raise LogCorruptedError(f"{name} is empty")
    if data.startswith(_INFO_LINE):
        end = data.find(b"\n")
        info = commit_info(_iter_actions(data if end < 0 else data[:end], name=name))
    elif b'"commitInfo"' in data:
        info = commit_info(_iter_actions(data, name=name))
    else:
        info = {}
    if blind_appends_skipped and info.get("isBlindAppend") is True:
        return SkimmedCommit(version, name, info, None)
    if any(needle in data for needle in parse_when):
        return SkimmedCommit(version, name, info, parse_commit(data, name=name))
    return SkimmedCommit(version, name, info, None)


def commit_info(actions: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The commitInfo of a commit's actions, or `{}` (the protocol makes commitInfo optional)."""
    return next((a[COMMIT_INFO] for a in actions if isinstance(a.get(COMMIT_INFO), dict)), {})


def _not_json(name: str, exc: orjson.JSONDecodeError) -> LogCorruptedError:
    return LogCorruptedError(f"{name} is not valid newline-delimited JSON ({type(exc).__name__}: {exc})")


def parse_commit(data: bytes, *, name: str = "commit") -> list[dict[str, Any]]:
    """All actions of one newline-delimited JSON commit, parsed in one pass."""
    lines = [ln for ln in data.split(b"\n") if ln.strip()]
    if not lines:  # a commit always holds at least commitInfo: an empty file is a torn write
        raise LogCorruptedError(f"{name} is empty")
    try:
        actions = orjson.loads(b"[" + b",".join(lines) + b"]")
    except orjson.JSONDecodeError as exc:
        raise _not_json(name, exc) from exc
    if not all(isinstance(a, dict) for a in actions):
        raise LogCorruptedError(f"{name} has a line that is not a JSON object")
    return actions  # type: ignore[no-any-return]


def _iter_actions(data: bytes, *, name: str) -> Iterator[dict[str, Any]]:
    """The actions of a commit one line at a time, for a reader that stops at the one it wants."""
    seen = False
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        seen = True
        try:
            action = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise _not_json(name, exc) from exc
        if not isinstance(action, dict):
            raise LogCorruptedError(f"{name} has a line that is not a JSON object")
        yield action
    if not seen:
        raise LogCorruptedError(f"{name} is empty")


def find_txn_commit(storage: Storage, app_id: str, version: int) -> int | None:
    """The version whose commit recorded txn `app_id` at `version` or later, searching newest first
    in small batches (None: no commit still in the log recorded it)."""
    newest_first = sorted(list_log(storage).commits.items(), reverse=True)
    for commit in read_commits(storage, newest_first, batch=TXN_SEARCH_BATCH):
        for a in commit.actions:
            t = a.get("txn")
            if t and t.get("appId") == app_id and int(t.get("version", -1)) >= version:
                return commit.version
    return None


def read_last_checkpoint(storage: Storage) -> LastCheckpoint | None:
    """The `_last_checkpoint` hint, or None if it is missing or unreadable (never an error)."""
    try:
        data = orjson.loads(storage.read(f"{LOG_DIR}/{LAST_CHECKPOINT}"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        return None
    parts = data.get("parts")
    return LastCheckpoint(version, parts if isinstance(parts, int) and not isinstance(parts, bool) else None)


def latest_commit_version(storage: Storage) -> int:
    """The newest commit's version, -1 when there is none.

    With a hint: the hint and one listing from its version; without one (or when that listing holds
    no commit, a hint left behind by a deleted log), one listing of the whole log.
    """
    hint = read_last_checkpoint(storage)
    if hint is not None:
        found = list_after(storage, hint.version - 1).commits
        if found:
            return max(found)
    return max(list_after(storage, -1).commits, default=-1)
