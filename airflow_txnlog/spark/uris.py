"""Table URIs as the engine (fsspec) names them vs as Spark (Hadoop) names them.

The engine opens a table through fsspec; Spark's executors reach the same files through Hadoop
`FileSystem` connectors, which use other scheme names for some stores. The mapping is explicit and
configurable (`SparkTable(..., scheme_map={...})`):

    fsspec                         Hadoop (default map)
    /local/path, file:///path  ->  file:/local/path
    s3://bucket/key (s3a, s3n) ->  s3a://bucket/key
    gs://bucket/key (gcs)      ->  gs://bucket/key
    abfss://c@acct.dfs.../key  ->  abfss://c@acct.dfs.../key (abfs stays abfs)

`memory://` tables cannot be reached by Spark and are refused. `az://container/key` (adlfs) carries no
storage account, so it has no Hadoop form: give such tables as `abfss://container@account.dfs.core.
windows.net/key` (the engine accepts that form too). A cluster brings its own Hadoop connectors
(hadoop-aws for `s3a`, the GCS connector for `gs`, hadoop-azure for `abfss`) and their credentials;
this module only renames schemes.

Paths handed to Spark are *decoded* paths (a file whose name contains `%25` is passed with `%25` in
it): Hadoop's `Path` quotes `%` itself. Spark reports paths back (`_metadata.file_path`) in URI form
(`%` -> `%25`, space -> `%20`), so `decode_spark_path` percent-decodes exactly once.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from airflow_txnlog.engine import InvalidArgumentError
from airflow_txnlog.spark import _arguments as check

#: fsspec scheme -> Hadoop scheme. `SparkTable(scheme_map=...)` entries override these.
DEFAULT_SCHEME_MAP: Mapping[str, str] = {
    "file": "file",
    "s3": "s3a",
    "s3a": "s3a",
    "s3n": "s3a",
    "gs": "gs",
    "gcs": "gs",
    "abfss": "abfss",
    "abfs": "abfs",
}


def to_hadoop_uri(uri: str, scheme_map: Mapping[str, str] | None = None) -> str:
    """The Hadoop URI Spark uses for the table (or file) at fsspec `uri`, without a trailing slash."""
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidArgumentError(f"uri must be a non-empty string such as 's3://bucket/table', got {uri!r}")
    mapping = {**DEFAULT_SCHEME_MAP, **check.scheme_map(scheme_map)}
    parts = urlsplit(uri.strip())
    scheme = parts.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        if scheme == "file" and parts.netloc not in ("", "localhost"):
            raise InvalidArgumentError(f"file URI with a host is not supported: {uri!r}")
        path = parts.path if scheme == "file" else uri.strip()
        return f"{mapping['file']}:{posixpath.normpath(os.path.abspath(path))}"
    if scheme not in mapping:
        raise InvalidArgumentError(
            f"no Hadoop scheme is known for {scheme!r} URIs ({uri!r}); Spark cannot reach "
            "memory:// tables, and az:// must be given as abfss://container@account.dfs.core.windows.net/. "
            "Help: pass scheme_map={'" + scheme + "': '<hadoop scheme>'} to SparkTable."
        )
    path = posixpath.normpath(parts.path) if parts.path not in ("", "/") else ""
    return f"{mapping[scheme]}://{parts.netloc}{path}".rstrip("/")


def file_uri(root: str, path: str, scheme_map: Mapping[str, str] | None = None) -> str:
    """Hadoop URI of a file named in the log: relative to the Hadoop `root`, or absolute."""
    head, sep, _ = path.partition(":")
    if sep and len(head) > 1 and head.isalnum() and "/" not in head:
        return to_hadoop_uri(path, scheme_map)
    if path.startswith("/"):
        return to_hadoop_uri(path, scheme_map)
    return f"{root}/{path}"


def decode_spark_path(reported: str) -> str:
    """A path as Spark reports it (`_metadata.file_path`) in the decoded form `file_uri` produces."""
    text = unquote(reported)
    if text.startswith("file:///"):
        text = "file:/" + text[len("file:///") :]
    elif text.startswith("file://localhost/"):
        text = "file:/" + text[len("file://localhost/") :]
    return text
