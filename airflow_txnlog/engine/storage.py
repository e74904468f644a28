"""Storage for one table root, and the atomic `put_if_absent` that commits rely on.

Contract of `Storage.put_if_absent(key, data)`:
    Create `key` with exactly `data` if and only if no object exists at `key`; if one exists
    (created by anyone, at any time, even a moment earlier by another process or host), raise
    `FileExistsError` and leave the existing object untouched. Readers never observe a partial
    object: `key` either does not exist or holds all of `data`. `data` must not be empty.

How each backend meets it:
- `LocalStorage`: writes a temp file under `_delta_log/.tmp/`, fsyncs it, then `os.link`s it to the
  final name. `link` fails with EEXIST atomically if the name exists; there is never an
  exists-then-rename window.
- `FsspecStorage`: exclusive create through fsspec (`open(path, "xb")`): S3 `If-None-Match: *`
  (s3fs), Azure `If-None-Match` (adlfs); GCS's `ifGenerationMatch=0` on a multipart upload (gcsfs
  `pipe_file(mode="create")`, the upload type fake-gcs-server checks too). Backends that cannot
  do this refuse to commit with `StorageError` unless the table was opened with `single_writer=True`,
  in which case the caller promises no other writer exists and a check-then-write is used.
  Empty objects are never written: s3fs does not make a zero-byte exclusive create exclusive.
  Before its first exclusive create, a store is **probed** (once per process and bucket): a probe
  object under `_delta_log/_txnlog_probe/` is created twice; the second create must fail. A store
  that accepts it (some S3-compatible servers take `If-None-Match: *` and ignore it) would let two
  writers both "win" a version, so it is refused with `StorageError` naming the remedies (a store
  that honors conditional writes, or `single_writer=True`); the probe objects are deleted.
- `MemoryStorage`: fsspec's in-memory filesystem, with a process-wide lock; for tests.

Errors: every failure of a store is an `OSError` (`FileNotFoundError`, `FileExistsError`, ...), which
is what the engine's callers classify (a commit whose PUT failed is "outcome unknown"; a checkpoint
that failed after its commit is only logged). s3fs and gcsfs raise OSErrors already; adlfs wraps a
failed upload in `RuntimeError` and lets the Azure SDK's own errors through, so `FsspecStorage`
turns an error that comes from a store client (its cause chain holds an exception of the Azure,
Google or botocore SDKs, or aiohttp) into an `OSError` naming the object, with the cause chained.

Listing: `list_dir(dir, start_after)` returns only names after `start_after`. On S3 (`S3Storage`) the
server does the filtering (ListObjectsV2 `StartAfter`), so polling a long log costs one small
request instead of one per 1,000 commits; other fsspec backends list the folder and filter here.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import fsspec
from fsspec.implementations.local import LocalFileSystem
from typing_extensions import override

from airflow_txnlog.engine.errors import InvalidArgumentError, StorageError
from airflow_txnlog.engine.gcs_token import safe_token
from airflow_txnlog.engine.store_errors import os_errors
from airflow_txnlog.engine.validate import flag, mapping

DELETE_BATCH = 1000  # keys per batch delete (S3 DeleteObjects takes at most 1,000)
LOG_DIR = "_delta_log"  # the log's folder under the table root (engine.log.log_paths names its files)


@dataclass(frozen=True, slots=True)
class ListedFile:
    """One file of a listing: its name inside the folder listed, size and modification time (ms)."""

    name: str
    size: int
    mtime_ms: int


def has_scheme(path: str) -> bool:
    """A path in the log is a URI with a scheme (`s3://...`), not a key relative to the table root."""
    head, sep, _ = path.partition(":")
    return bool(sep) and len(head) > 1 and head.isalnum() and "/" not in head


# Object stores whose fsspec implementation performs a real conditional (exclusive) create.
ATOMIC_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az"})
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}


class Storage(ABC):
    """Files of one table, addressed by keys relative to the table root (`_delta_log/...`)."""

    options: Mapping[str, Any] = {}  # the fsspec options it was opened with (none for local disks)

    def __init__(self, root: str, fs: Any, fs_root: str) -> None:
        self.root = root  # the URI the user gave, normalised
        self.fs = fs  # an fsspec filesystem, for data files (pyarrow reads through it)
        self.fs_root = fs_root.rstrip("/")

    def full_path(self, key: str) -> str:
        """Path of `key` in `self.fs` (keys may also be absolute paths of that filesystem)."""
        if key.startswith("/") and isinstance(self.fs, LocalFileSystem):
            return key
        return f"{self.fs_root}/{key}"

    def resolve(self, path: str) -> str:
        """Filesystem path of a file named in the log (relative to the root, or absolute)."""
        if has_scheme(path):
            return str(self.fs._strip_protocol(path))
        return self.full_path(path)

    def read_many(self, keys: list[str]) -> list[bytes]:
        """Several whole objects, in order (object stores fetch them concurrently)."""
        return [self.read(k) for k in keys]

    @abstractmethod
    def read(self, key: str) -> bytes:
        """Whole object; `FileNotFoundError` if absent."""

    @abstractmethod
    def put_if_absent(self, key: str, data: bytes) -> None:
        """Atomically create `key` (see the module docstring for the contract)."""

    @abstractmethod
    def write(self, key: str, data: bytes) -> None:
        """Create or replace `key` so that readers see either the old or the new content."""

    @abstractmethod
    def list_dir(self, key_dir: str, start_after: str | None = None) -> list[ListedFile]:
        """Files (not folders) directly in `key_dir` whose name sorts after `start_after`, sorted."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Delete `key`; a missing file is not an error."""

    def delete_many(self, keys: Sequence[str]) -> None:
        """Delete `keys` (a missing one is no error) in order, one after another; object stores
        delete them in batches of `DELETE_BATCH`, a batch before the next (FsspecStorage)."""
        for key in keys:
            self.delete(key)

    def exists(self, key: str) -> bool:
        return bool(self.fs.exists(self.full_path(key)))

    def remove_empty_dir(self, key_dir: str) -> None:
        """Remove the folder `key_dir` if it is empty (object stores have no folders: nothing to do)."""
        return None

    def open_input(self, key: str) -> BinaryIO:
        return self.fs.open(self.full_path(key), "rb")  # type: ignore[no-any-return]

    def list_log(self, start_after: str | None = None) -> list[ListedFile]:
        try:
            return self.list_dir(LOG_DIR, start_after)
        except FileNotFoundError:
            return []


class LocalStorage(Storage):
    """A table on a local (or mounted POSIX) filesystem."""

    def __init__(self, root: str) -> None:
        path = os.path.abspath(root)
        super().__init__(path, LocalFileSystem(), path)

    def _p(self, key: str) -> str:
        return key if key.startswith("/") else os.path.join(self.fs_root, key)

    @override
    def read(self, key: str) -> bytes:
        with open(self._p(key), "rb") as f:
            return f.read()

    @override
    def open_input(self, key: str) -> BinaryIO:
        # A native file: pyarrow's readers then read it without a Python file object in the loop
        # (no GIL, no copy through `bytes` for every column chunk). Imported here: the sensor's
        # trigger reads the log through this module without pyarrow (tests/airflow/test_trigger_event_loop).
        import pyarrow as pa  # noqa: PLC0415

        return pa.OSFile(self._p(key), "r")  # type: ignore[no-any-return]

    def _temp_write(self, key: str, data: bytes) -> str:
        # One temp folder on the table's filesystem (os.link needs the same filesystem), ignored by readers.
        tmp_dir = os.path.join(self.fs_root, LOG_DIR, ".tmp")
        os.makedirs(tmp_dir, exist_ok=True)
        tmp = os.path.join(tmp_dir, f".{os.path.basename(key)}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return tmp

    @override
    def put_if_absent(self, key: str, data: bytes) -> None:
        if not data:
            raise StorageError(f"refusing to create empty object {key!r}")
        os.makedirs(os.path.dirname(self._p(key)), exist_ok=True)
        tmp = self._temp_write(key, data)
        try:
            os.link(tmp, self._p(key))  # atomic: EEXIST if someone else won
        finally:
            os.unlink(tmp)

    @override
    def write(self, key: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(self._p(key)), exist_ok=True)
        tmp = self._temp_write(key, data)
        try:
            os.replace(tmp, self._p(key))
        except FileNotFoundError:  # another process removed the emptied folder meanwhile: make it again
            os.makedirs(os.path.dirname(self._p(key)), exist_ok=True)
            os.replace(tmp, self._p(key))

    @override
    def remove_empty_dir(self, key_dir: str) -> None:
        with contextlib.suppress(OSError):  # not empty (another writer's file), or already gone
            os.rmdir(self._p(key_dir))

    @override
    def list_dir(self, key_dir: str, start_after: str | None = None) -> list[ListedFile]:
        out: list[ListedFile] = []
        with os.scandir(self._p(key_dir)) as it:
            for e in it:
                if (start_after is None or e.name > start_after) and e.is_file():
                    st = e.stat()
                    out.append(ListedFile(e.name, st.st_size, st.st_mtime_ns // 1_000_000))
        out.sort(key=lambda f: f.name)
        return out

    @override
    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._p(key))

    @override
    def exists(self, key: str) -> bool:
        return os.path.exists(self._p(key))


def _mtime_ms(info: dict[str, Any]) -> int:
    for k in ("mtime", "LastModified", "last_modified", "updated", "created"):
        v = info.get(k)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return int(v.timestamp() * 1000)
        if isinstance(v, int | float):
            return int(v * 1000)
        if isinstance(v, str):
            import datetime as dt  # noqa: PLC0415 - rare path

            return int(dt.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() * 1000)
    return 0


PROBE_DIR = f"{LOG_DIR}/_txnlog_probe"
# Stores whose conditional create was probed in this process: (protocol, bucket or host, endpoint).
_PROBED: dict[tuple[str, str, str], bool] = {}
_PROBE_LOCK = threading.Lock()


class FsspecStorage(Storage):
    """A table on any fsspec filesystem (object stores, HDFS, ...)."""

    def __init__(self, root: str, fs: Any, fs_root: str, *, atomic: bool, single_writer: bool) -> None:
        super().__init__(root, fs, fs_root)
        self.atomic = atomic
        self.single_writer = single_writer

    def _store_key(self) -> tuple[str, str, str]:
        fs = self.fs
        endpoint = str(getattr(fs, "endpoint_url", "") or getattr(fs, "client_kwargs", "") or "")
        endpoint = endpoint or str(getattr(fs, "_endpoint", "") or "")  # (gcsfs keeps it here)
        return (self.fs_protocol, self.fs_root.strip("/").split("/", 1)[0], endpoint)

    def check_conditional_writes(self) -> None:
        """Probe that this store refuses a second exclusive create of one object (see the module
        docstring); `StorageError` when it does not. Done once per process and store."""
        key = self._store_key()
        with _PROBE_LOCK:
            if _PROBED.get(key):
                return
            path = self.full_path(f"{PROBE_DIR}/{uuid.uuid4().hex}")
            try:
                for _ in range(2):
                    try:
                        self._create_exclusive(path, b"probe")
                    except FileExistsError:
                        # The second create refused, or the first: a fresh name exists only if our own
                        # create landed and the client's retry was refused. Either way the store checks.
                        _PROBED[key] = True
                        return
                raise StorageError(
                    f"the store behind {self.root!r} accepted a second exclusive create of the same "
                    "object: it ignores conditional writes (If-None-Match), so two writers could both "
                    "commit the same version and one commit would be lost. Nothing was written. Help: use "
                    "a store that honors conditional writes (AWS S3, GCS, Azure, a current MinIO), or "
                    "open the table with single_writer=True if only one process ever writes to it"
                )
            finally:
                with contextlib.suppress(Exception):  # best effort: never hide the probe's own error
                    self.fs.rm_file(path)

    @os_errors
    @override
    def read(self, key: str) -> bytes:
        return self.fs.cat_file(self.full_path(key))  # type: ignore[no-any-return]

    @override
    def read_many(self, keys: list[str]) -> list[bytes]:
        # One cat_file per key (fs.cat would read [ ] * ? in keys as glob patterns), concurrently.
        if len(keys) <= 1:
            return [self.read(k) for k in keys]
        with ThreadPoolExecutor(max_workers=min(16, len(keys))) as pool:
            return list(pool.map(self.read, keys))

    @os_errors
    @override
    def put_if_absent(self, key: str, data: bytes) -> None:
        if not data:
            raise StorageError(f"refusing to create empty object {key!r} (not exclusive on s3fs)")
        path = self.full_path(key)
        if self.atomic and not self.single_writer:
            self.check_conditional_writes()
        if self.atomic:
            self._create_exclusive(path, data)
            return
        if not self.single_writer:
            raise StorageError(
                f"the {self.fs.protocol!r} filesystem cannot create files atomically, so concurrent "
                "writers could overwrite each other's commits. Help: open the table with "
                "single_writer=True only if no other process ever writes to it."
            )
        if self.fs.exists(path):
            raise FileExistsError(path)
        self.fs.pipe_file(path, data)

    def _create_exclusive(self, path: str, data: bytes) -> None:
        """Create `path` only if absent (FileExistsError otherwise). On GCS one multipart upload with
        `ifGenerationMatch=0` whatever the size (gcsfs `pipe_file(mode="create")`, its chunk size
        above the data's): GCS checks the precondition on every upload type, fake-gcs-server only on
        multipart ones, not on media uploads (`open("xb")` of a small object) nor on resumable ones
        (`pipe_file` of 50 MiB or more by default)."""
        if self.fs_protocol == "gs":
            self.fs.pipe_file(path, data, mode="create", chunksize=len(data) + 1)
            return
        with self.fs.open(path, "xb") as f:
            f.write(data)

    @property
    def fs_protocol(self) -> str:
        return str(self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0])

    @os_errors
    @override
    def write(self, key: str, data: bytes) -> None:
        self.fs.pipe_file(self.full_path(key), data)

    @os_errors
    @override
    def list_dir(self, key_dir: str, start_after: str | None = None) -> list[ListedFile]:
        base = self.full_path(key_dir)
        try:
            entries = self.fs.ls(base, detail=True, refresh=True)
        except TypeError:
            entries = self.fs.ls(base, detail=True)
        out = []
        for info in entries:
            if info.get("type") not in ("file", None):
                continue
            name = str(info["name"]).rstrip("/").rsplit("/", 1)[-1]
            if start_after is None or name > start_after:
                out.append(ListedFile(name, int(info.get("size") or 0), _mtime_ms(info)))
        out.sort(key=lambda f: f.name)
        return out

    @os_errors
    @override
    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self.full_path(key))

    @os_errors
    @override
    def delete_many(self, keys: Sequence[str]) -> None:
        """Batches through fsspec's `rm` of a list: s3fs sends one DeleteObjects per 1,000 keys (a
        missing key is no error there); adlfs and gcsfs use their stores' batch calls or delete
        concurrently. A store that refuses a batch holding a missing key gets that batch one key at
        a time (missing keys skipped)."""
        for start in range(0, len(keys), DELETE_BATCH):
            batch = list(keys[start : start + DELETE_BATCH])
            try:
                self.fs.rm([self.full_path(k) for k in batch])
            except FileNotFoundError:
                for key in batch:
                    self.delete(key)

    @os_errors
    @override
    def exists(self, key: str) -> bool:
        return super().exists(key)

    @os_errors
    @override
    def open_input(self, key: str) -> BinaryIO:
        return super().open_input(key)


class S3Storage(FsspecStorage):
    """s3fs tables: a listing from a name asks S3 itself for the keys after it (StartAfter)."""

    @override
    def list_dir(self, key_dir: str, start_after: str | None = None) -> list[ListedFile]:
        if start_after is None:
            return super().list_dir(key_dir)
        from s3fs.errors import translate_boto_error  # noqa: PLC0415 - s3fs is the optional `s3` extra

        base = self.full_path(key_dir)
        bucket, _, key = base.strip("/").partition("/")
        prefix = f"{key}/" if key else ""
        kwargs: dict[str, Any] = {
            "Bucket": bucket,
            "Prefix": prefix,
            "Delimiter": "/",
            "StartAfter": prefix + start_after,
            **getattr(self.fs, "req_kw", {}),
        }
        out: list[ListedFile] = []
        while True:
            try:
                page = self.fs.call_s3("list_objects_v2", **kwargs)
            except Exception as exc:  # botocore's ClientError -> the OSError subclass s3fs would raise
                raise translate_boto_error(exc) from exc
            for obj in page.get("Contents", []):
                out.append(ListedFile(obj["Key"][len(prefix) :], int(obj.get("Size") or 0), _mtime_ms(obj)))
            if not page.get("IsTruncated"):
                break
            kwargs["ContinuationToken"] = page["NextContinuationToken"]
        out.sort(key=lambda f: f.name)
        self.fs.invalidate_cache(base)  # in case the caller enabled s3fs's listings cache: it is now stale
        return out


class MemoryStorage(FsspecStorage):
    """fsspec's in-memory filesystem; `put_if_absent` is atomic within this process (tests only)."""

    _lock = threading.Lock()

    def __init__(self, root: str, fs: Any, fs_root: str) -> None:
        super().__init__(root, fs, fs_root, atomic=True, single_writer=False)

    @override
    def put_if_absent(self, key: str, data: bytes) -> None:
        if not data:
            raise StorageError(f"refusing to create empty object {key!r}")
        path = self.full_path(key)
        with self._lock:
            if self.fs.exists(path):
                raise FileExistsError(path)
            self.fs.pipe_file(path, data)

    @override
    def list_dir(self, key_dir: str, start_after: str | None = None) -> list[ListedFile]:
        if not self.fs.exists(self.full_path(key_dir)):
            raise FileNotFoundError(key_dir)
        return super().list_dir(key_dir, start_after)


def _filesystem(url: str, scheme: str, options: dict[str, Any]) -> tuple[Any, str]:
    """fsspec's filesystem for `url`. For `gs://` with an `endpoint_url` (an emulator, a private
    endpoint) gcsfs's plain filesystem: its default "extended" one first asks a gRPC control plane
    for the bucket's type, which such endpoints do not serve (a 60 s stall per bucket, then a
    fallback to the plain one anyway)."""
    if scheme == "gs":
        options = safe_token(options)  # (gcsfs would send an unknown string token in a URL)
    if scheme == "gs" and options.get("endpoint_url"):
        from gcsfs.core import GCSFileSystem  # noqa: PLC0415 - gcsfs is the optional `gcs` extra

        fs = GCSFileSystem(**options)
        return fs, fs._strip_protocol(url)
    return fsspec.url_to_fs(url, **options)  # type: ignore[no-any-return]


def storage_for(
    uri: str, storage_options: Mapping[str, Any] | None = None, *, single_writer: bool = False
) -> Storage:
    """The storage backend for a table URI (local path, `file://`, `memory://`, `s3://`, ...)."""
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidArgumentError(f"table URI must be a non-empty string, got {uri!r}")
    options = mapping("storage_options", storage_options, example="{'anon': False}")
    flag("single_writer", single_writer)  # a truthy "false" would promise that no one else writes
    uri = uri.strip().rstrip("/") or "/"
    parts = urlsplit(uri)
    if parts.query or parts.fragment:
        raise InvalidArgumentError(f"table URI {uri!r} has a query or fragment, which would be ignored")
    scheme = parts.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        path = parts.path if scheme == "file" else uri
        if scheme == "file" and parts.netloc not in ("", "localhost"):
            raise InvalidArgumentError(f"file URI with a host is not supported: {uri!r}")
        return LocalStorage(path)
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    if not parts.netloc and scheme != "memory":
        raise InvalidArgumentError(f"table URI {uri!r} has no bucket or host")
    if scheme in ATOMIC_PROTOCOLS:  # s3fs, gcsfs, adlfs: fsspec's DirCache takes this option
        # A cached folder listing makes s3fs answer FileNotFoundError for a commit written after it
        # (its `cat_file` asks the cache for the size first): a log must always be listed afresh.
        options.setdefault("use_listings_cache", False)
    try:
        fs, fs_root = _filesystem(f"{scheme}://{parts.netloc}{parts.path}", scheme, options)
    except InvalidArgumentError:
        raise
    except (ImportError, ValueError, TypeError) as exc:
        raise StorageError(f"cannot open storage for {uri!r}: {exc}") from exc
    except Exception as exc:  # a client failing to set up (e.g. a malformed key): named, not echoed
        raise StorageError(
            f"cannot open storage for {uri!r}: the store client failed to start "
            f"({type(exc).__name__}); check the credentials in storage_options"
        ) from exc
    if scheme == "memory":
        return MemoryStorage(uri, fs, fs_root)
    cls = S3Storage if scheme == "s3" and hasattr(fs, "call_s3") else FsspecStorage
    storage = cls(uri, fs, fs_root, atomic=scheme in ATOMIC_PROTOCOLS, single_writer=single_writer)
    storage.options = dict(storage_options or {})  # (what another process needs to open it again)
    return storage
