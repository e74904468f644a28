"""The engine suite on object stores: `s3://` against a loopback S3 server (moto, through s3fs) and
`abfs://` against Azurite (the Azure Storage emulator, through adlfs).

Covers what the log engine does on an object store: create, appends, overwrite, checkpoints
(every 10 commits and multi-part), time travel by version and timestamp, history, conflicts between
two handles, idempotent writes, the exclusive create behind every commit (also under racing
writers), and the FsspecStorage details that differ from a local disk (listing order, modification
times, bulk reads, missing files, `xb` mode). Each test runs on both stores (`store`), except the
ones about one client's behaviour (s3fs's StartAfter listing and caches, multipart uploads, Azure's
block uploads), which name their store.
"""

from __future__ import annotations

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest

from airflow_txnlog.engine import (
    AddFile,
    CommitOutcomeUnknownError,
    ConcurrentAppendError,
    ConcurrentDeleteReadError,
    InvalidArgumentError,
    StorageError,
    Table,
    TableExistsError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.storage import LOG_DIR, FsspecStorage
from tests.azurite import AzureContainer
from tests.conftest import SCHEMA, rows
from tests.gcs import GcsBucket
from tests.reliability._util import build_table, commit_versions, ids, log_names
from tests.reliability.conftest import S3Server

FS_CLASS = {"s3": "S3FileSystem", "azure": "AzureBlobFileSystem", "gcs": "GCSFileSystem"}


@pytest.fixture(params=["s3", "azure", "gcs"])
def store(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _test_name(request: pytest.FixtureRequest) -> str:
    return request.node.name.replace("[", "-").replace("]", "").replace("_", "-")


@pytest.fixture
def s3_uri(store: str, request: pytest.FixtureRequest) -> str:
    """A fresh table location on the test's store (the name is historical: S3 came first)."""
    if store == "azure":
        container: AzureContainer = request.getfixturevalue("azure_container")
        return container.uri(f"suite/{_test_name(request)}")
    if store == "gcs":
        return str(request.getfixturevalue("gcs_bucket").uri(f"suite/{_test_name(request)}"))
    server: S3Server = request.getfixturevalue("s3_server")
    return f"s3://{server.new_bucket()}/suite/{_test_name(request)}"  # own bucket: see conftest


@pytest.fixture
def s3_options(store: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    """The store's storage_options (overrides the S3-only fixture of the same name in conftest)."""
    if store in ("azure", "gcs"):
        fixture = "azure_container" if store == "azure" else "gcs_bucket"
        return dict(request.getfixturevalue(fixture).options)
    return dict(request.getfixturevalue("s3_server").options)


def test_storage_is_the_atomic_fsspec_backend(s3_uri: str, s3_options: dict[str, Any], store: str) -> None:
    t = Table.create(s3_uri, schema=SCHEMA, storage_options=s3_options)
    assert isinstance(t.storage, FsspecStorage) and t.storage.atomic
    assert type(t.storage.fs).__name__ == FS_CLASS[store]


def test_create_append_overwrite(s3_uri: str, s3_options: dict[str, Any]) -> None:
    t = Table.create(s3_uri, schema=SCHEMA, partition_by=["part"], storage_options=s3_options)
    assert t.write(rows([1, 2], "a")) == 1
    assert t.write(rows([3], "b")) == 2
    fresh = Table.open(s3_uri, storage_options=s3_options)
    assert ids(fresh.snapshot()) == [1, 2, 3]
    assert fresh.write(rows([9], "c"), mode="overwrite") == 3
    assert ids(t.snapshot()) == [9]
    assert ids(t.snapshot(version=2)) == [1, 2, 3]
    with pytest.raises(TableExistsError):
        Table.create(s3_uri, schema=SCHEMA, storage_options=s3_options)
    assert commit_versions(t) == [0, 1, 2, 3]


def test_checkpoints_every_ten_commits(s3_uri: str, s3_options: dict[str, Any]) -> None:
    t = build_table(s3_uri, 23, s3_options)
    names = set(log_names(t))
    assert {n for n in names if n.endswith(".checkpoint.parquet")} == {
        f"{10:020d}.checkpoint.parquet",
        f"{20:020d}.checkpoint.parquet",
    }
    hint = orjson.loads(t.storage.read(f"{LOG_DIR}/_last_checkpoint"))
    assert hint["version"] == 20 and hint["numOfAddFiles"] == 20
    fresh = Table.open(s3_uri, storage_options=s3_options)
    snap = fresh.snapshot()
    assert (snap.version, snap.checkpoint_version) == (23, 20)
    assert ids(snap) == list(range(23))


def test_multi_part_checkpoint(s3_uri: str, s3_options: dict[str, Any]) -> None:
    build_table(s3_uri, 7, s3_options)
    t = Table.open(s3_uri, storage_options=s3_options, checkpoint_part_size=3)
    t.checkpoint()
    parts = sorted(n for n in log_names(t) if ".checkpoint." in n)
    assert parts == [f"{7:020d}.checkpoint.{i:010d}.{3:010d}.parquet" for i in (1, 2, 3)]
    fresh = Table.open(s3_uri, storage_options=s3_options)
    assert fresh.snapshot().checkpoint_version == 7 and ids(fresh.snapshot()) == list(range(7))
    t.storage.delete(f"{LOG_DIR}/{parts[1]}")  # incomplete set: ignored, full replay
    again = Table.open(s3_uri, storage_options=s3_options)
    assert again.snapshot().checkpoint_version is None and ids(again.snapshot()) == list(range(7))


def test_time_travel_and_history(s3_uri: str, s3_options: dict[str, Any]) -> None:
    t = build_table(s3_uri, 12, s3_options)
    for v in range(13):
        assert ids(t.snapshot(version=v)) == list(range(v))
    history = t.history()
    assert [h["version"] for h in history] == list(range(12, -1, -1))
    assert [h["operation"] for h in history][-1] == "CREATE TABLE"
    stamps = [h["timestamp"] for h in reversed(history)]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)  # forced strictly increasing
    for h in history:  # S3 LastModified has 1 s resolution; the log still resolves every version
        assert t.snapshot(timestamp=h["timestamp"]).version == h["version"]
    assert t.snapshot(timestamp="2999-01-01T00:00:00Z").version == 12
    with pytest.raises(VersionNotFoundError):
        t.snapshot(timestamp=dt.datetime(2000, 1, 1))
    with pytest.raises(VersionNotFoundError):
        t.snapshot(version=13)
    assert len(t.history(limit=3)) == 3


def test_listing_sizes_and_mtimes_come_from_s3(s3_uri: str, s3_options: dict[str, Any]) -> None:
    t = build_table(s3_uri, 2, s3_options)
    listed = {f.name: f for f in t.storage.list_log()}
    for name in (f"{v:020d}.json" for v in range(3)):
        assert listed[name].size == len(t.storage.read(f"{LOG_DIR}/{name}"))
        assert abs(listed[name].mtime_ms - dt.datetime.now(dt.UTC).timestamp() * 1000) < 600_000
    # (each commit of the engine has its version checksum beside it)
    assert [f.name for f in t.storage.list_log(f"{1:020d}.json")] == [f"{2:020d}.crc", f"{2:020d}.json"]


@pytest.mark.parametrize("store", ["s3"])  # s3fs behaviour
def test_listing_after_a_version_is_filtered_by_the_server(
    s3_uri: str, s3_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`list_log(start_after)` sends StartAfter: S3 returns only the newer keys (not the whole log), the
    result equals the full listing filtered here, and subfolders (`.tmp/`) never appear."""
    t = build_table(s3_uri, 12, s3_options)  # 13 commits + a checkpoint + _last_checkpoint
    t.storage.write(f"{LOG_DIR}/sub/x.json", b"{}")
    returned: list[int] = []
    real = t.storage.fs.call_s3

    def spy(method: str, *a: Any, **kw: Any) -> Any:
        page = real(method, *a, **kw)
        if method == "list_objects_v2":
            assert kw["StartAfter"].endswith(f"{LOG_DIR}/{9:020d}.json")
            returned.append(len(page.get("Contents", [])))
        return page

    monkeypatch.setattr(t.storage.fs, "call_s3", spy)  # s3fs caches the instance: undo afterwards
    after = t.storage.list_log(f"{9:020d}.json")
    monkeypatch.undo()
    full = [f for f in t.storage.list_log() if f.name > f"{9:020d}.json"]
    commits = [f"{v:020d}.{ext}" for v in (10, 11, 12) for ext in ("crc", "json")]  # (with checksums)
    newer = [f"{10:020d}.checkpoint.parquet", *commits, "_last_checkpoint"]
    assert [f.name for f in after] == newer
    assert after == full and returned == [8]


@pytest.mark.parametrize("store", ["s3"])  # s3fs behaviour
@pytest.mark.parametrize("cache", [None, True], ids=["default", "listings_cache_on"])
def test_a_commit_written_after_a_full_listing_is_readable(
    s3_uri: str, s3_options: dict[str, Any], cache: bool | None
) -> None:
    """Regression: s3fs's `cat_file` asks its folder-listing cache for the size first, so a commit
    written after a cached listing of `_delta_log/` read as FileNotFoundError (a writer's conflict
    check died on it). Listings are never cached by default, and a StartAfter listing drops the cache
    when the user turned it on."""
    options = s3_options if cache is None else {**s3_options, "use_listings_cache": cache}
    t = build_table(s3_uri, 1, options)
    t.storage.list_log()  # a full listing, which s3fs would cache
    other = {**options, "skip_instance_cache": True}  # another process's s3fs: our cache is not told
    Table.open(s3_uri, storage_options=other).write(rows([5], "p0"))  # version 2
    new = t.storage.list_log(f"{1:020d}.json")
    assert [f.name for f in new] == [f"{2:020d}.crc", f"{2:020d}.json"]
    assert b'"add"' in t.storage.read(f"{LOG_DIR}/{new[1].name}")
    assert t.snapshot().version == 2


def test_bulk_read_of_many_commits(s3_uri: str, s3_options: dict[str, Any]) -> None:
    t = build_table(s3_uri, 3, s3_options)
    keys = [f"{LOG_DIR}/{v:020d}.json" for v in range(4)]
    assert t.storage.read_many(keys) == [t.storage.read(k) for k in keys]
    assert t.storage.read_many(keys[:1]) == [t.storage.read(keys[0])]
    with pytest.raises(FileNotFoundError):
        t.storage.read_many([*keys, f"{LOG_DIR}/{99:020d}.json"])


def test_second_put_if_absent_raises_and_keeps_the_first(s3_uri: str, s3_options: dict[str, Any]) -> None:
    t = Table.create(s3_uri, schema=SCHEMA, storage_options=s3_options)
    key = f"{LOG_DIR}/{1:020d}.json"
    t.storage.put_if_absent(key, b'{"commitInfo":{}}\n')
    with pytest.raises(FileExistsError):
        t.storage.put_if_absent(key, b'{"commitInfo":{"other":1}}\n')
    assert t.storage.read(key) == b'{"commitInfo":{}}\n'
    with pytest.raises(FileExistsError):  # version 0 too: a second create cannot replace a table
        t.storage.put_if_absent(f"{LOG_DIR}/{0:020d}.json", b"x\n")


# A block size each client takes, below the commit's size: s3fs (multipart upload) and adlfs (blocks).
BLOCK_OPTION = {"s3": {"default_block_size": 5 * 2**20}, "azure": {"blocksize": 4 * 2**20}, "gcs": {}}


# adlfs hands aiohttp each block as bytes, and aiohttp warns about large bodies (harmless; not ours).
@pytest.mark.filterwarnings("ignore:Sending a large body directly:ResourceWarning")
def test_large_commit_is_uploaded_in_parts_and_stays_exclusive(
    s3_uri: str, s3_options: dict[str, Any], store: str
) -> None:
    """Commits above the client's block size are multipart uploads (S3) or staged blocks (Azure);
    the condition (`If-None-Match: *`) is on the completion / block-list commit that makes the
    object, so a second writer's parts never become it. On GCS every commit is one multipart upload
    with `ifGenerationMatch=0`, also above gcsfs's 50 MiB resumable threshold."""
    t = Table.create(s3_uri, schema=SCHEMA, storage_options={**s3_options, **BLOCK_OPTION[store]})
    key = f"{LOG_DIR}/{1:020d}.json"
    # gcsfs's pipe_file turns to a resumable upload at 50 MiB, whose precondition fake-gcs-server
    # ignores: a GCS commit above that must still be one multipart upload.
    size = 51 * 2**20 if store == "gcs" else 11 * 2**20
    big = b'{"commitInfo":{"pad":"' + b"x" * size + b'"}}\n'
    t.storage.put_if_absent(key, big)
    with pytest.raises(FileExistsError):
        t.storage.put_if_absent(key, big.replace(b"x", b"y"))
    assert t.storage.read(key) == big


def test_empty_commit_object_is_refused_and_never_written(s3_uri: str, s3_options: dict[str, Any]) -> None:
    t = Table.create(s3_uri, schema=SCHEMA, storage_options=s3_options)
    before = log_names(t)
    with pytest.raises(StorageError, match="empty"):
        t.storage.put_if_absent(f"{LOG_DIR}/{1:020d}.json", b"")
    assert log_names(t) == before
    assert not t.storage.exists(f"{LOG_DIR}/{1:020d}.json")


@pytest.mark.parametrize("store", ["s3"])  # s3fs behaviour
def test_zero_byte_exclusive_create_trap_is_real_here(
    s3_server: S3Server, s3_options: dict[str, Any]
) -> None:
    """Why the engine refuses empty commits: s3fs's zero-byte "xb" create is not exclusive.

    If this starts failing, s3fs made zero-byte exclusive creates exclusive; the engine's refusal
    stays correct either way.
    """
    import s3fs  # noqa: PLC0415

    fs = s3fs.S3FileSystem(**s3_options)
    path = f"{s3_server.bucket}/trap/zero-{id(fs)}"
    with fs.open(path, "xb"):
        pass
    with fs.open(path, "xb"):  # a second exclusive create of the same key: no FileExistsError
        pass
    with fs.open(path + "-data", "xb") as f:
        f.write(b"1")
    with pytest.raises(FileExistsError), fs.open(path + "-data", "xb") as f:
        f.write(b"2")


def test_conflicts_between_two_handles(s3_uri: str, s3_options: dict[str, Any]) -> None:
    a = build_table(s3_uri, 3, s3_options)
    b = Table.open(s3_uri, storage_options=s3_options)
    # A reads partition p0 and appends to it; B appends to p0 first -> ConcurrentAppendError.
    txn = a.transaction("MERGE")
    txn.read_files("part = 'p0'")
    b.write(rows([100], "p0"))
    txn.add(_extra_file(a, "p0"))
    before = commit_versions(a)
    with pytest.raises(ConcurrentAppendError, match="Help:"):
        txn.commit()
    assert commit_versions(a) == before
    # A reads p1 only; B appends to p0 -> no conflict, A lands after B.
    txn = a.transaction("MERGE")
    txn.read_files("part = 'p1'")
    b.write(rows([101], "p0"))
    txn.add(_extra_file(a, "p1"))
    assert txn.commit() == 6
    # Both delete the same file: the loser read it -> ConcurrentDeleteReadError.
    ta, tb = a.transaction("DELETE"), b.transaction("DELETE")
    fa, fb = ta.read_files("part = 'p2'"), tb.read_files("part = 'p2'")
    for f in fb:
        tb.remove(f)
    assert tb.commit() == 7
    for f in fa:
        ta.remove(f)
    with pytest.raises(ConcurrentDeleteReadError):
        ta.commit()
    # Two blind appends never conflict.
    assert {a.write(rows([200], "p0")), b.write(rows([201], "p1"))} == {8, 9}
    assert commit_versions(a) == list(range(10))
    assert 2 not in ids(a.snapshot()) and {100, 101, 200, 201} <= set(ids(a.snapshot()))


def _extra_file(t: Table, part: str) -> AddFile:
    """Write one data file through the engine's writer and return its (uncommitted) add."""
    from airflow_txnlog.engine.write.writer import conform_to_schema, write_data_files  # noqa: PLC0415

    snap = t.snapshot()
    data = conform_to_schema(rows([999], part), snap.schema)
    (add,) = write_data_files(t.storage, data, ["part"], {}, max_rows_per_file=10)
    return add


def test_idempotent_writes_across_handles(s3_uri: str, s3_options: dict[str, Any]) -> None:
    a = Table.create(s3_uri, schema=SCHEMA, partition_by=["part"], storage_options=s3_options)
    b = Table.open(s3_uri, storage_options=s3_options)
    v = a.write(rows([1]), txn=("ingest", 7))
    assert b.write(rows([1]), txn=("ingest", 7)) == v  # retried task: skipped, same version
    assert b.write(rows([1]), txn=("ingest", 6)) == v
    assert a.write(rows([2]), txn=("ingest", 8)) == v + 1
    assert ids(Table.open(s3_uri, storage_options=s3_options).snapshot()) == [1, 2]
    assert commit_versions(a) == [0, 1, 2]


def test_bulk_read_glob_characters(s3_uri: str, s3_options: dict[str, Any]) -> None:
    """Keys may contain `[`/`]` (legal keys); the bulk read must not treat them as a glob pattern."""
    uri = f"{s3_uri}/tbl[1]"
    build_table(uri, 2, s3_options)  # today: LogCorruptedError "a commit file disappeared"
    assert ids(Table.open(uri, storage_options=s3_options).snapshot()) == [0, 1]


def test_query_or_fragment_in_uri_is_not_silently_dropped(s3_uri: str, s3_options: dict[str, Any]) -> None:
    base = f"{s3_uri}/t"
    Table.create(base, schema=SCHEMA, storage_options=s3_options)
    # A different location must either be refused or be a different (empty) location.
    try:
        other = Table.create(base + "?v=2", schema=SCHEMA, storage_options=s3_options)
    except TableExistsError:
        pytest.fail("s3://.../t?v=2 resolved to the existing table s3://.../t")
    except (StorageError, InvalidArgumentError):
        return  # refused: the engine rejects URIs with a query or fragment
    assert other.storage.fs_root != Table.open(base, storage_options=s3_options).storage.fs_root


def test_create_in_a_missing_bucket_is_a_txnlog_error(s3_options: dict[str, Any], store: str) -> None:
    from airflow_txnlog.engine import TxnLogError  # noqa: PLC0415

    uri = {
        "s3": "s3://no-such-bucket-txnlog/t",
        "azure": "abfs://no-such-container-txnlog/t",
        "gcs": "gs://no-such-bucket-txnlog/t",
    }[store]
    with pytest.raises(TxnLogError):
        Table.create(uri, schema=SCHEMA, storage_options=s3_options)


def test_racing_exclusive_creates_have_one_winner_per_key(s3_uri: str, s3_options: dict[str, Any]) -> None:
    """8 threads race to create each of 25 keys at once: exactly one create per key succeeds, the
    others get FileExistsError, and the object holds the winner's bytes."""
    t = Table.create(s3_uri, schema=SCHEMA, storage_options=s3_options)
    writers, keys = 8, [f"{LOG_DIR}/race/{k:020d}.json" for k in range(25)]
    barrier = threading.Barrier(writers)

    def race(w: int) -> list[str]:
        won = []
        for key in keys:
            barrier.wait()
            try:
                t.storage.put_if_absent(key, f'{{"writer":{w}}}\n'.encode())
                won.append(key)
            except FileExistsError:
                pass
        return won

    with ThreadPoolExecutor(writers) as pool:
        wins = list(pool.map(race, range(writers)))
    winners = {key: w for w, won in enumerate(wins) for key in won}
    assert sorted(k for won in wins for k in won) == keys  # one winner per key, none twice
    for key, w in winners.items():
        assert orjson.loads(t.storage.read(key)) == {"writer": w}


def test_missing_files_and_listing_order(s3_uri: str, s3_options: dict[str, Any]) -> None:
    """A missing object reads as FileNotFoundError and `exists` is False; a folder lists in name
    order whatever the order of the writes; a missing folder is FileNotFoundError (as on a local
    disk; `list_log` turns it into an empty log); deleting twice is fine."""
    t = Table.create(s3_uri, schema=SCHEMA, storage_options=s3_options)
    with pytest.raises(FileNotFoundError):
        t.storage.read(f"{LOG_DIR}/{7:020d}.json")
    assert not t.storage.exists(f"{LOG_DIR}/{7:020d}.json")
    for v in (3, 1, 12, 2):
        t.storage.write(f"x/{v:020d}.json", b"{}")
    assert [f.name for f in t.storage.list_dir("x")] == [f"{v:020d}.json" for v in (1, 2, 3, 12)]
    with pytest.raises(FileNotFoundError):
        t.storage.list_dir("no-such-folder")
    assert Table.open(s3_uri, storage_options=s3_options).storage.list_log()  # the log itself lists
    t.storage.delete(f"x/{1:020d}.json")
    t.storage.delete(f"x/{1:020d}.json")
    assert [f.name for f in t.storage.list_dir("x", f"{2:020d}.json")] == [f"{v:020d}.json" for v in (3, 12)]


@pytest.mark.parametrize("store", ["azure"])  # adlfs behaviour
def test_a_failed_azure_upload_is_an_unknown_commit_outcome(
    s3_uri: str, s3_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """adlfs wraps a failed upload in RuntimeError (the Azure SDK error as its cause). The storage
    makes it an OSError, so a commit whose PUT failed is CommitOutcomeUnknownError (the caller must
    check, not blindly retry), while an error of our own making still surfaces as it is."""
    import adlfs.spec  # noqa: PLC0415
    from azure.core.exceptions import ServiceRequestError  # noqa: PLC0415

    t = Table.create(s3_uri, schema=SCHEMA, partition_by=["part"], storage_options=s3_options)
    t.write(rows([1], "a"))

    def reset(self: Any, final: bool = False) -> None:
        try:
            raise ServiceRequestError("connection reset by peer")
        except ServiceRequestError as exc:
            raise RuntimeError(f"Failed to upload block: {exc}!") from exc

    real_upload = adlfs.spec.AzureBlobFile._upload_chunk
    monkeypatch.setattr(adlfs.spec.AzureBlobFile, "_upload_chunk", reset)
    with pytest.raises(StorageError, match="connection reset"):  # a data file: nothing committed
        t.write(rows([2], "a"))
    txn = t.transaction("WRITE")
    monkeypatch.setattr(adlfs.spec.AzureBlobFile, "_upload_chunk", real_upload)
    txn.add(_extra_file(t, "a"))  # written before the failure starts
    monkeypatch.setattr(adlfs.spec.AzureBlobFile, "_upload_chunk", reset)
    with pytest.raises(CommitOutcomeUnknownError) as err:
        txn.commit()
    assert isinstance(err.value.__cause__, OSError) and "connection reset" in str(err.value.__cause__)
    monkeypatch.undo()
    assert ids(Table.open(s3_uri, storage_options=s3_options).snapshot()) == [1]
    with pytest.raises(RuntimeError, match="ours"):  # not from a store client: not translated
        t.storage.put_if_absent(f"{LOG_DIR}/{2:020d}.json", _Ours())  # type: ignore[arg-type]


class _Ours(bytes):
    """Data whose use raises a plain RuntimeError, as a bug in our code would."""

    def __len__(self) -> int:
        raise RuntimeError("ours")


def _deltars_options(store: str, request: pytest.FixtureRequest) -> dict[str, str]:
    if store == "azure":
        return dict(request.getfixturevalue("azurite").deltars_options)
    server: S3Server = request.getfixturevalue("s3_server")
    opts = server.options
    return {
        "AWS_ENDPOINT_URL": server.endpoint,
        "AWS_ACCESS_KEY_ID": opts["key"],
        "AWS_SECRET_ACCESS_KEY": opts["secret"],
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",  # delta-rs's own S3 commits: one writer in this test
    }


# Not on GCS: delta-rs's object_store lists GCS with the XML API (GET /bucket?list-type=2), which
# fake-gcs-server answers with 404 (its JSON API lists); test_deltars_reads_a_table_copied_out_of_fake_gcs
# has delta-rs read our GCS table instead.
@pytest.mark.parametrize("store", ["s3", "azure"], indirect=True)
def test_deltars_reads_our_tables_and_we_read_its_commits(
    s3_uri: str, s3_options: dict[str, Any], store: str, request: pytest.FixtureRequest
) -> None:
    """On the store itself: delta-rs reads what we wrote (partitions, a delete, a checkpoint at 10
    and commits after it), then appends and deletes through its own object-store client; we read
    every version it made, and the rows match at each one."""
    deltalake = pytest.importorskip("deltalake")
    ours = build_table(s3_uri, 12, s3_options)  # 13 commits: one row each, partitions p0..p2
    txn = ours.transaction("DELETE")
    for f in txn.read_files("part = 'p1'"):
        txn.remove(f)
    txn.commit()
    expected = ids(ours.snapshot())
    dl_opts = _deltars_options(store, request)
    theirs = deltalake.DeltaTable(s3_uri, storage_options=dl_opts)
    assert theirs.version() == 13
    assert sorted(theirs.to_pyarrow_table().column("id").to_pylist()) == expected
    deltalake.write_deltalake(s3_uri, rows([500, 501], "p9"), mode="append", storage_options=dl_opts)
    theirs = deltalake.DeltaTable(s3_uri, storage_options=dl_opts)
    theirs.delete("id = 500")
    again = Table.open(s3_uri, storage_options=s3_options)
    assert again.snapshot().version == 15
    for v in (13, 14, 15):
        theirs.load_as_version(v)
        want = sorted(theirs.to_pyarrow_table().column("id").to_pylist())
        assert ids(again.snapshot(version=v)) == want
    assert ids(again.snapshot()) == [*expected, 501]
    assert again.write(rows([600], "p0")) == 16  # and we go on committing after delta-rs
    assert deltalake.DeltaTable(s3_uri, storage_options=dl_opts).version() == 16


def test_deltars_reads_a_table_copied_out_of_fake_gcs(
    gcs_bucket: GcsBucket, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """delta-rs cannot list the emulator (see above), so the table we wrote there is copied out
    object by object, bytes as stored, and delta-rs reads the copy: what our GCS commits, checkpoint
    and data files hold is a table delta-rs reads, at every version."""
    deltalake = pytest.importorskip("deltalake")
    uri = gcs_bucket.uri(f"suite/{_test_name(request)}")
    ours = build_table(uri, 12, gcs_bucket.options)  # 13 commits, a checkpoint at 10
    fs = gcs_bucket.server.fs()
    root = ours.storage.fs_root
    for path in fs.find(root):
        target = tmp_path / path[len(root) :].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fs.cat_file(path))
    theirs = deltalake.DeltaTable(str(tmp_path))
    assert theirs.version() == ours.snapshot().version == 12
    for v in (0, 5, 10, 12):
        theirs.load_as_version(v)
        assert sorted(theirs.to_pyarrow_table().column("id").to_pylist()) == ids(ours.snapshot(version=v))


def test_the_probe_catches_the_gcs_upload_the_emulator_does_not_check(
    gcs_bucket: GcsBucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fake-gcs-server checks `ifGenerationMatch=0` on multipart uploads (what the engine sends) but
    not on media uploads (what gcsfs's `open("xb")` sends for small objects): a store whose exclusive
    create went that way is refused by the probe before any commit, nothing written."""
    from airflow_txnlog.engine import storage as storage_mod  # noqa: PLC0415

    def media_upload(self: FsspecStorage, path: str, data: bytes) -> None:
        with self.fs.open(path, "xb") as f:
            f.write(data)

    monkeypatch.setattr(storage_mod, "_PROBED", {})
    monkeypatch.setattr(FsspecStorage, "_create_exclusive", media_upload)
    uri = gcs_bucket.uri("suite/probe-media")
    with pytest.raises(StorageError, match="ignores conditional writes"):
        Table.create(uri, schema=SCHEMA, storage_options=gcs_bucket.options)
    fs = gcs_bucket.server.fs()
    assert not fs.exists(f"{gcs_bucket.name}/suite/probe-media/{LOG_DIR}/{0:020d}.json")
    assert fs.find(f"{gcs_bucket.name}/suite/probe-media/{LOG_DIR}/_txnlog_probe") == []
    monkeypatch.undo()  # the engine's own upload: probed and accepted
    monkeypatch.setattr(storage_mod, "_PROBED", {})
    assert Table.create(uri, schema=SCHEMA, storage_options=gcs_bucket.options).latest_version() == 0


def test_a_probe_object_found_on_its_first_create_passes_the_probe(
    gcs_bucket: GcsBucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client retry can fail the probe's first create on the probe's own object (a fresh name exists
    only because our create landed): the store refused a second create, so it checks, and that must
    not reach the caller as the FileExistsError of its commit key (a lost race)."""
    from airflow_txnlog.engine import storage as storage_mod  # noqa: PLC0415

    real = FsspecStorage._create_exclusive
    probes: list[str] = []

    def retried_first(self: FsspecStorage, path: str, data: bytes) -> None:
        real(self, path, data)
        if "_txnlog_probe" in path:
            probes.append(path)
            raise FileExistsError(path)

    monkeypatch.setattr(storage_mod, "_PROBED", {})
    monkeypatch.setattr(FsspecStorage, "_create_exclusive", retried_first)
    t = Table.create(gcs_bucket.uri("suite/probe-retried"), schema=SCHEMA, storage_options=gcs_bucket.options)
    assert t.latest_version() == 0 and len(probes) == 1
    assert t.write(rows([1])) == 1


def test_an_endpoint_gets_gcsfs_plain_filesystem(gcs_bucket: GcsBucket) -> None:
    """gcsfs's default (extended) filesystem asks a gRPC control plane for a bucket's type first, which
    an emulator or private endpoint does not serve (60 s per bucket); with `endpoint_url` the engine
    uses the plain one."""
    from gcsfs.core import GCSFileSystem  # noqa: PLC0415

    t = Table.create(gcs_bucket.uri("suite/plain-fs"), schema=SCHEMA, storage_options=gcs_bucket.options)
    assert type(t.storage.fs) is GCSFileSystem
