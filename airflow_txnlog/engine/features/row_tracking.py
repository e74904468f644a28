"""Row tracking (PROTOCOL.md "Row Tracking"): stable row ids and row commit versions.

Supported (writer feature `rowTracking`, with `domainMetadata`) and not suspended
(`delta.rowTrackingSuspended`): every commit gives each add without them
    baseRowId                 the next free id above the high-water mark; the file's rows get
                              baseRowId .. baseRowId + numRecords - 1 (so numRecords is required)
    defaultRowCommitVersion   the version being committed
and, when it assigned ids, a `delta.rowTracking` domain `{"rowIdHighWaterMark": highest id}`. An add
that already has them (a file recommitted with a new deletion vector, a restored file) keeps them.
Ids are assigned per commit attempt: a commit that loses a race is re-based past the winner's mark
(engine.write.transaction), which is why concurrent row-tracking writers merge instead of conflict.

Enabled (`delta.enableRowTracking=true`, only with the feature): readers rely on every live file
having `baseRowId`, so enabling an existing table recommits its files that lack one in the same
commit (the backfill), and the two hidden columns that preserve ids through rewrites get names:
    delta.rowTracking.materializedRowIdColumnName             `_row-id-col-<uuid>`
    delta.rowTracking.materializedRowCommitVersionColumnName  `_row-commit-version-col-<uuid>`
A row's stable id is its file's materialized id when not null, else baseRowId + its physical
position in the file; its stable commit version likewise (`row_columns`). A rewrite that copies
rows (OPTIMIZE, a DELETE / UPDATE / MERGE rewrite) writes their stable values into the hidden
columns (an updated row: its id, and a null commit version), and commitInfo's tag
`delta.rowTracking.preserved` says whether every copied row kept them.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine import properties as props
from airflow_txnlog.engine.errors import InvalidArgumentError, LogCorruptedError
from airflow_txnlog.engine.log.actions import DOMAIN_METADATA, AddFile, DomainMetadata, Metadata, Protocol

FEATURE = registry.ROW_TRACKING.name
DOMAIN = "delta.rowTracking"
ENABLED = props.ENABLE_ROW_TRACKING
SUSPENDED = props.ROW_TRACKING_SUSPENDED
ROW_ID_COLUMN = props.ROW_ID_COLUMN_KEY
COMMIT_VERSION_COLUMN = props.COMMIT_VERSION_COLUMN_KEY
PRESERVED_TAG = "delta.rowTracking.preserved"
ROW_ID, ROW_COMMIT_VERSION = "_row_id", "_row_commit_version"  # the columns reads add (opt-in)
_MARK = "rowIdHighWaterMark"


def assigns(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether commits must assign row ids: the feature is listed and not suspended."""
    listed = FEATURE in (protocol.writer_features or ())
    return listed and not props.TableProperties(metadata.configuration).row_tracking_suspended


def enabled(conf: Mapping[str, str]) -> bool:
    return props.TableProperties(conf).row_tracking


def with_column_names(conf: Mapping[str, str], taken: Iterable[str]) -> dict[str, str]:
    """`conf` with the two hidden columns named (kept when already named); a name that is one of the
    table's columns (`taken`, physical names under column mapping) is refused."""
    out = dict(conf)
    out.setdefault(ROW_ID_COLUMN, f"_row-id-col-{uuid.uuid4()}")
    out.setdefault(COMMIT_VERSION_COLUMN, f"_row-commit-version-col-{uuid.uuid4()}")
    hidden = [out[ROW_ID_COLUMN], out[COMMIT_VERSION_COLUMN]]
    if not all(isinstance(h, str) and h.strip() for h in hidden):
        raise InvalidArgumentError(f"row tracking's hidden column names must be non-empty, got {hidden}")
    lowered = {t.lower() for t in taken}
    clash = [n for n in hidden if n.lower() in lowered]
    if clash or hidden[0].lower() == hidden[1].lower():
        raise InvalidArgumentError(
            f"row tracking's hidden column names must be unique, not {clash or hidden}"
        )
    return out


def check_names(before: Mapping[str, str], changes: Mapping[str, str], *, turning_on: bool) -> None:
    """The hidden column names may be given only by the commit that turns row tracking on (and
    only if none were named before); afterwards they never change (PROTOCOL.md: unique in all future
    versions, and files already hold them)."""
    for key in (ROW_ID_COLUMN, COMMIT_VERSION_COLUMN):
        if key in changes and (not turning_on or before.get(key)) and changes[key] != before.get(key):
            raise InvalidArgumentError(
                f"{key} names the hidden column that keeps row ids; it is set once, when row tracking is "
                "turned on, and never changed. Nothing was written"
            )


def high_water_mark(domains: Mapping[str, str]) -> int:
    """The highest row id assigned so far (-1: none), from the live `delta.rowTracking` domain."""
    raw = domains.get(DOMAIN)
    if raw is None:
        return -1
    try:
        return int(orjson.loads(raw)[_MARK])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise LogCorruptedError(f"the {DOMAIN} domain has no integer {_MARK}: {raw!r}") from exc


def mark_in(actions: Sequence[Mapping[str, Any]]) -> int:
    """The high-water mark a commit's actions set (-1: none), to re-base past a winner's ids."""
    best = -1
    for a in actions:
        d = a.get(DOMAIN_METADATA)
        if d and d.get("domain") == DOMAIN and not d.get("removed"):
            best = max(best, high_water_mark({DOMAIN: str(d.get("configuration"))}))
    return best


def unnumbered_add(
    before: tuple[Protocol, Mapping[str, str]],
    after: tuple[Protocol | None, Mapping[str, str] | None],
    actions: Sequence[Mapping[str, Any]],
) -> str | None:
    """When a commit adds the feature to the protocol or turns `delta.enableRowTracking` on (the
    (protocol, configuration) it read vs. the ones it commits): the path of a winning commit's add
    without row ids (its writer read the old protocol, or wrote while tracking was suspended)."""
    protocol, conf = after
    gains_feature = (
        protocol is not None
        and FEATURE in (protocol.writer_features or ())
        and FEATURE not in (before[0].writer_features or ())
    )
    turns_on = conf is not None and enabled(conf) and not enabled(before[1])
    if not (gains_feature or turns_on):
        return None
    for a in actions:
        add = a.get("add")
        if add is not None and add.get("baseRowId") is None:
            return str(add.get("path"))
    return None


def assign(adds: Sequence[AddFile], *, mark: int, version: int) -> tuple[list[AddFile], int]:
    """`adds` with baseRowId (above `mark`) and defaultRowCommitVersion (`version`) where missing;
    the new high-water mark (`mark` when no id was assigned). An add that already has a baseRowId
    (a recommit, a restore, or a caller's own numbering) keeps it, and the mark covers its range
    too, so later ids never reuse it."""
    for add in adds:
        if add.base_row_id is not None:
            mark = max(mark, add.base_row_id + (add.num_records or 1) - 1)
    out, nxt = [], mark + 1
    for add in adds:
        base = add.base_row_id
        if base is None:
            n = add.num_records
            if n is None:
                raise InvalidArgumentError(
                    f"row tracking numbers rows by the file's numRecords, which add {add.path!r} lacks"
                )
            base, nxt = nxt, nxt + n
        version_of = version if add.default_row_commit_version is None else add.default_row_commit_version
        same = (base, version_of) == (add.base_row_id, add.default_row_commit_version)
        out.append(add if same else _with(add, base, version_of))
    return out, nxt - 1


def _with(a: AddFile, base: int, version: int) -> AddFile:
    return dataclasses.replace(a, base_row_id=base, default_row_commit_version=version)


def stamp(
    adds: Sequence[AddFile], *, mark: int, version: int, enabled: bool, copies: bool, vouched: bool
) -> tuple[list[AddFile], DomainMetadata | None, dict[str, str]]:
    """One commit attempt's row tracking: its adds numbered above `mark`, the new mark's domain (None:
    no id assigned) and, when enabled, commitInfo's `preserved` tag: false when the commit removes
    files and adds new ones (it copies rows) unless the writer vouched it kept their ids."""
    copied = copies and any(a.base_row_id is None for a in adds)
    out, new_mark = assign(adds, mark=mark, version=version)
    tags = {PRESERVED_TAG: "true" if vouched or not copied else "false"} if enabled else {}
    return out, (domain(new_mark) if new_mark > mark else None), tags


def domain(mark: int) -> DomainMetadata:
    return DomainMetadata(DOMAIN, orjson.dumps({_MARK: mark}).decode())


def hidden_columns(conf: Mapping[str, str]) -> list[str]:
    """The names of the two hidden columns (materialized row ids, commit versions) that are set."""
    parsed = props.TableProperties(conf)
    return [n for n in (parsed.row_id_column, parsed.row_commit_version_column) if n]


def row_columns(
    table: pa.Table, add: AddFile, conf: Mapping[str, str], *, rows: int
) -> tuple[pa.Array, pa.Array]:
    """(stable row ids, stable row commit versions) of every row of data file `add` (`rows` of them,
    in file order, before any is dropped); `table` holds the file's hidden columns it has."""
    if add.base_row_id is None or add.default_row_commit_version is None:
        raise LogCorruptedError(f"row tracking is enabled but file {add.path!r} has no baseRowId")
    fresh_ids = pa.array(np.arange(rows, dtype=np.int64) + add.base_row_id, pa.int64())
    fresh_versions = pa.repeat(pa.scalar(add.default_row_commit_version, pa.int64()), rows)
    ids, versions = fresh_ids, fresh_versions
    parsed = props.TableProperties(conf)
    id_col, version_col = parsed.row_id_column, parsed.row_commit_version_column
    if id_col and id_col in table.column_names:
        ids = pc.coalesce(table.column(id_col).combine_chunks().cast(pa.int64()), fresh_ids)
    if version_col and version_col in table.column_names:
        versions = pc.coalesce(table.column(version_col).combine_chunks().cast(pa.int64()), fresh_versions)
    return ids, versions


def to_hidden(data: pa.Table, conf: Mapping[str, str]) -> pa.Table:
    """`data` read with row ids (`_row_id`, `_row_commit_version`) with those two columns renamed to
    the table's hidden columns, as a rewrite that copies the rows writes them."""
    names = {ROW_ID: conf[ROW_ID_COLUMN], ROW_COMMIT_VERSION: conf[COMMIT_VERSION_COLUMN]}
    return data.rename_columns([names.get(n, n) for n in data.column_names])
