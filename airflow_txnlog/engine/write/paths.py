"""Where a transaction's files may be: inside the table root, never above it (no `..`, no other
location), whether given relative (the usual) or absolute (a URI or path under the root)."""

from __future__ import annotations

import posixpath

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.storage import has_scheme


def check_inside_root(path: str, root: str) -> None:
    """Refuse add paths that would point outside the table root."""
    if "\\" in path or ".." in path.split("/"):
        raise InvalidArgumentError(f"add path {path!r} has a '..' segment: it could escape the table root")
    if has_scheme(path) or path.startswith("/"):
        local = "/" + path[5:].lstrip("/") if path.startswith("file:") else path
        if not posixpath.normpath(local).startswith(root.rstrip("/") + "/"):
            raise InvalidArgumentError(f"add path {path!r} is outside the table root {root!r}")
        return
    norm = posixpath.normpath(path)
    if norm.startswith("../") or norm == ".." or "\\" in path or not path:
        raise InvalidArgumentError(f"add path {path!r} escapes the table root")
