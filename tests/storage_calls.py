"""A table's storage that records every call, for tests that prove what an operation touches.

`RecordingStorage(table._storage)` forwards every method to the real storage and records
`(method, key)` in `calls`: the key the method was given first ('' when that is not a string, e.g. a
batch call's list), and every key of a call, batch calls' too, in `keys`. The values returned are the
real storage's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class RecordingStorage:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str]] = []
        self.keys: list[str] = []  # every non-empty key given ('' is a listing of the root's log)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            first = args[0] if args else None
            self.calls.append((name, first if isinstance(first, str) else ""))
            given = first if isinstance(first, list) else [first]
            self.keys += [k for k in given if isinstance(k, str) and k]
            return attr(*args, **kwargs)

        return call

    def by_method(self) -> Counter[str]:
        return Counter(name for name, _ in self.calls)
