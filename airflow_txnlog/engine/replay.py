"""Log replay: reconcile the actions of a checkpoint and the commits after it into table state.

Reconciliation (Delta protocol, "Action Reconciliation"):
- the latest `protocol` and `metaData` win; the latest `txn` per appId wins; the latest
  `domainMetadata` per domain wins (a `removed` one deletes the domain);
- file actions are keyed by (decoded path, deletion-vector id); for each key the newest action wins:
  a surviving `add` is a live file, a surviving `remove` is a tombstone.

State is kept in two layers so that large tables stay cheap:
- `base_adds` / `base_removes`: the checkpoint's file actions as Arrow struct arrays (never turned
  into Python objects unless asked for);
- `tail`: a dict key -> (is_add, wire dict) of file actions from JSON commits after the checkpoint.
A key in `tail` hides the same key in the base layer. Applying more commits copies only the tail,
so a cached state is updated incrementally by reading just the new commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_txnlog.engine.actions import (
    ADD,
    COMMIT_INFO,
    DOMAIN_METADATA,
    METADATA,
    PROTOCOL,
    REMOVE,
    TXN,
    Metadata,
    Protocol,
    Txn,
    decode_path,
)
from airflow_txnlog.engine.errors import LogCorruptedError


def file_key(path: str, dv: Any = None) -> str:
    """Reconciliation key: the decoded path, plus the deletion vector's unique id when present.

    Absolute local paths are canonicalised as Spark does: `file:/x`, `file:///x` and `/x` are one file.
    """
    if path.startswith("file:"):
        path = "/" + path[5:].lstrip("/")
    if not dv:
        return path
    return f"{path}\x00{dv.get('storageType')}{dv.get('pathOrInlineDv')}@{dv.get('offset')}"


def _key_of(d: dict[str, Any]) -> str:
    path: str = d["path"]
    # The hot path of JSON replay: most paths need no decoding and have no deletion vector.
    if "%" not in path and not path.startswith("file:") and not d.get("deletionVector"):
        return path
    return file_key(decode_path(path), d.get("deletionVector"))


@dataclass(frozen=True)
class LogState:
    """Reconciled state of the table at `version`."""

    version: int
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)
    base_adds: pa.StructArray | None = None
    base_add_keys: pa.Array | None = None  # decoded keys of base_adds, same order
    base_removes: pa.StructArray | None = None
    base_remove_keys: pa.Array | None = None
    tail: dict[str, tuple[bool, dict[str, Any]]] = field(default_factory=dict)
    commit_infos: dict[int, dict[str, Any]] = field(default_factory=dict)

    def apply(self, version: int, actions: Iterable[dict[str, Any]], *, name: str = "") -> LogState:
        """State after one more commit (does not modify self)."""
        return _Applier(self).run([(version, actions, name)])

    def apply_many(self, commits: Sequence[tuple[int, Iterable[dict[str, Any]], str]]) -> LogState:
        return _Applier(self).run(commits) if commits else self

    # ------------------------------------------------------------------ derived views
    def _base_live_mask(self, keys: pa.Array | None) -> pa.Array | None:
        if keys is None or not self.tail:
            return None
        hidden = pa.array(list(self.tail.keys()), type=pa.string())
        return pc.invert(pc.is_in(keys, value_set=hidden))

    def live_base_adds(self) -> pa.StructArray | None:
        if self.base_adds is None:
            return None
        mask = self._base_live_mask(self.base_add_keys)
        return self.base_adds if mask is None else self.base_adds.filter(mask)

    def live_base_add_keys(self) -> list[str]:
        if self.base_add_keys is None:
            return []
        mask = self._base_live_mask(self.base_add_keys)
        keys = self.base_add_keys if mask is None else self.base_add_keys.filter(mask)
        return keys.to_pylist()  # type: ignore[no-any-return]

    def live_base_removes(self) -> pa.StructArray | None:
        if self.base_removes is None:
            return None
        mask = self._base_live_mask(self.base_remove_keys)
        return self.base_removes if mask is None else self.base_removes.filter(mask)

    def tail_adds(self) -> list[dict[str, Any]]:
        return [d for is_add, d in self.tail.values() if is_add]

    def tail_removes(self) -> list[dict[str, Any]]:
        return [d for is_add, d in self.tail.values() if not is_add]

    def tail_add_keys(self) -> list[str]:
        return [k for k, (is_add, _) in self.tail.items() if is_add]

    def num_files(self) -> int:
        base = self.live_base_adds()
        return (len(base) if base is not None else 0) + sum(1 for a, _ in self.tail.values() if a)

    def require_complete(self) -> None:
        if self.protocol is None:
            raise LogCorruptedError(f"no protocol action found while reconstructing version {self.version}")
        if self.metadata is None:
            raise LogCorruptedError(f"no metaData action found while reconstructing version {self.version}")


class _Applier:
    """Applies commits in order to a copy of a state's mutable parts."""

    def __init__(self, state: LogState) -> None:
        self.state = state
        self.protocol = state.protocol
        self.metadata = state.metadata
        self.txns = dict(state.txns)
        self.domains = dict(state.domains)
        self.tail = dict(state.tail)
        self.infos = dict(state.commit_infos)

    def run(self, commits: Sequence[tuple[int, Iterable[dict[str, Any]], str]]) -> LogState:
        version = self.state.version
        for version, actions, name in commits:
            for action in actions:
                try:
                    self._one(version, action, name)
                except (KeyError, TypeError, AttributeError, ValueError) as exc:
                    raise LogCorruptedError(
                        f"{name or version}: malformed action {action!r:.200}: {exc!r}"
                    ) from exc
        return replace(
            self.state,
            version=version,
            protocol=self.protocol,
            metadata=self.metadata,
            txns=self.txns,
            domains=self.domains,
            tail=self.tail,
            commit_infos=self.infos,
        )

    def _one(self, version: int, action: dict[str, Any], name: str) -> None:
        if (d := action.get(ADD)) is not None:
            self.tail[_key_of(d)] = (True, d)
        elif (d := action.get(REMOVE)) is not None:
            self.tail[_key_of(d)] = (False, d)
        elif (d := action.get(COMMIT_INFO)) is not None:
            self.infos[version] = d
        elif (d := action.get(TXN)) is not None:
            self.txns[d["appId"]] = Txn.from_wire(d)
        elif (d := action.get(METADATA)) is not None:
            try:
                self.metadata = Metadata.from_wire(d)
            except KeyError as exc:
                raise LogCorruptedError(f"{name}: metaData is missing field {exc}") from exc
        elif (d := action.get(PROTOCOL)) is not None:
            self.protocol = Protocol.from_wire(d)
        elif (d := action.get(DOMAIN_METADATA)) is not None:
            if d.get("removed"):
                self.domains.pop(d["domain"], None)
            else:
                self.domains[d["domain"]] = d
        # cdc and unknown actions do not affect the snapshot.
