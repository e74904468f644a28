"""Names of the files in `_delta_log/` and how to recognise them.

- commit         `%020d.json`
- checkpoint     `%020d.checkpoint.parquet` (classic), `%020d.checkpoint.%010d.%010d.parquet` (part i of n)
- v2 checkpoint  `%020d.checkpoint.<uuid>.(json|parquet)` (engine.log.checkpoint_v2; sidecars in `_sidecars/`)
- log compaction `%020d.%020d.compacted.json`: the reconciled actions of commits x..y (x < y)
- version checksum `%020d.crc` (engine.log.checksum)
- `_last_checkpoint` (a hint); anything else is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LAST_CHECKPOINT = "_last_checkpoint"

_COMMIT_RE = re.compile(r"^(\d{20})\.json$")
_CLASSIC_CP_RE = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTI_CP_RE = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2_CP_RE = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$")
_COMPACTED_RE = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CRC_RE = re.compile(r"^(\d{20})\.crc$")


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def checkpoint_name(version: int, part: int | None = None, parts: int | None = None) -> str:
    if part is None or parts is None:
        return f"{version:020d}.checkpoint.parquet"
    return f"{version:020d}.checkpoint.{part:010d}.{parts:010d}.parquet"


def compacted_name(first: int, last: int) -> str:
    return f"{first:020d}.{last:020d}.compacted.json"


@dataclass(frozen=True, slots=True)
class ParsedName:
    kind: str  # "commit" | "checkpoint" | "v2checkpoint" | "compacted" | "crc"
    version: int  # a compaction's last version (`first` its first)
    part: int = 1
    parts: int = 1
    first: int | None = None


def parse_name(name: str) -> ParsedName | None:
    """Classify a log file name; None for files the log protocol says to ignore."""
    if m := _COMMIT_RE.match(name):
        return ParsedName("commit", int(m.group(1)))
    if m := _CLASSIC_CP_RE.match(name):
        return ParsedName("checkpoint", int(m.group(1)))
    if m := _MULTI_CP_RE.match(name):
        return ParsedName("checkpoint", int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if m := _V2_CP_RE.match(name):
        return ParsedName("v2checkpoint", int(m.group(1)))
    if m := _CRC_RE.match(name):
        return ParsedName("crc", int(m.group(1)))
    if (m := _COMPACTED_RE.match(name)) and int(m.group(1)) < int(m.group(2)):
        return ParsedName("compacted", int(m.group(2)), first=int(m.group(1)))
    return None
