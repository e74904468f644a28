"""Bad input catalogue for the engine API: each case raises a clear TxnLogError subclass and writes
nothing (the test compares every file under the table root before and after).

Cases that today escape as a non-TxnLogError, or are accepted, are marked xfail(strict=True) with the
engine bug they show. Vacuum / savepoint / restore inputs are added here when those modules land.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from airflow_txnlog.engine import (
    AddFile,
    AppendOnlyViolationError,
    CommitTooLargeError,
    ConstraintViolationError,
    InvalidArgumentError,
    PredicateError,
    Protocol,
    SchemaMismatchError,
    StorageError,
    Table,
    TableExistsError,
    TableNotFoundError,
    TxnLogError,
    UnsupportedExpressionError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from airflow_txnlog.engine.storage import LOG_DIR
from tests.conftest import SCHEMA, rows


def tree(root: str | Path) -> dict[str, int]:
    """Every file under `root` with its size (empty temp folders do not count as writes)."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = Path(d) / f
            out[str(p.relative_to(root))] = p.stat().st_size
    return out


class Guard:
    """A table with two commits; `unchanged()` asserts nothing was written since it was made."""

    def __init__(self, root: Path, **create: Any) -> None:
        self.root = root
        self.t = Table.create(str(root), schema=create.pop("schema", SCHEMA), partition_by=["part"], **create)
        if "schema" not in create:
            self.t.write(rows([1, 2], "a"))
            self.t.write(rows([3], "b"))
        self.before = tree(root)

    def unchanged(self) -> None:
        assert tree(self.root) == self.before
        assert Table.open(str(self.root)).latest_version() == self.t.latest_version()


@pytest.fixture
def g(tmp_path: Path) -> Iterator[Guard]:
    guard = Guard(tmp_path / "t")
    yield guard
    guard.unchanged()  # every test in this module: nothing written


def _file(path: str, part: str = "a") -> AddFile:
    return AddFile(path=path, partition_values={"part": part}, size=10, modification_time=0)


def _commit_add(t: Table, add: AddFile) -> None:
    txn = t.transaction()
    txn.add(add)
    txn.commit()


def _raw_commit(t: Table, actions: list[dict[str, Any]]) -> None:
    v = t.latest_version() + 1
    t.storage.put_if_absent(f"{LOG_DIR}/{v:020d}.json", b"\n".join(map(orjson.dumps, actions)) + b"\n")


# ---------------------------------------------------------------------- URIs and opening
@pytest.mark.parametrize("uri", ["", "   ", "s3://", "file://otherhost/data/t"])
def test_invalid_uri(uri: str) -> None:
    with pytest.raises(InvalidArgumentError):
        Table.open(uri)


def test_non_string_uri() -> None:
    with pytest.raises(InvalidArgumentError):
        Table.open(42)  # type: ignore[arg-type]


def test_unknown_scheme() -> None:
    with pytest.raises(StorageError, match="nosuchproto"):
        Table.open("nosuchproto://bucket/t")


def test_open_missing_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        Table.open(str(tmp_path / "nothing"))
    assert not (tmp_path / "nothing").exists()


def test_create_over_existing_table(g: Guard) -> None:
    with pytest.raises(TableExistsError):
        Table.create(str(g.root), schema=SCHEMA)


def test_create_below_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(TxnLogError):
        Table.create(str(tmp_path / "file" / "t"), schema=SCHEMA)


def test_unknown_storage_option() -> None:
    pytest.importorskip("s3fs")
    with pytest.raises(TxnLogError):
        Table.open("s3://bucket/t", storage_options={"endpoint_url": "http://127.0.0.1:9", "bogus": 1})


# ---------------------------------------------------------------------- schema and properties
@pytest.mark.parametrize(
    ("schema", "partition_by"),
    [
        (pa.schema([]), []),
        (pa.schema([("id", pa.int64()), ("ID", pa.int64())]), []),
        (SCHEMA, ["nope"]),
        (pa.schema([("part", pa.string())]), ["part"]),
        (pa.schema([("id", pa.int64()), ("s", pa.struct([("x", pa.int32())]))]), ["s"]),
        (SCHEMA, ["part", "part"]),
    ],
    ids=[
        "empty",
        "duplicate-case-insensitive",
        "unknown-partition",
        "all-partition",
        "nested-partition",
        "repeat",
    ],
)
def test_invalid_schema_or_partitioning(tmp_path: Path, schema: pa.Schema, partition_by: list[str]) -> None:
    with pytest.raises(InvalidArgumentError):
        Table.create(str(tmp_path / "t"), schema=schema, partition_by=partition_by)
    assert tree(tmp_path) == {}


@pytest.mark.parametrize(
    "props",
    [
        {"delta.checkpointInterval": "0"},
        {"delta.checkpointInterval": "ten"},
        {"delta.appendOnly": "yes"},
        {"delta.deletedFileRetentionDuration": "7 fortnights"},
        {"delta.logRetentionDuration": "forever"},
        {"delta.dataSkippingNumIndexedCols": "many"},
        {"delta.enableInCommitTimestamps": "1"},
    ],
)
def test_bad_table_property(tmp_path: Path, props: dict[str, str]) -> None:
    with pytest.raises(InvalidArgumentError):
        Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=props)
    assert tree(tmp_path) == {}


# ---------------------------------------------------------------------- versions and timestamps
@pytest.mark.parametrize("version", [-1, 1.5, "1"])
def test_invalid_version(g: Guard, version: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        Table.open(str(g.root)).snapshot(version=version)


def test_future_version(g: Guard) -> None:
    with pytest.raises(VersionNotFoundError, match="latest version is 2"):
        g.t.snapshot(version=3)


def test_bool_version(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(rows([1]))
    assert t.snapshot().version == 1  # the handle now caches version 1
    with pytest.raises(InvalidArgumentError):
        t.snapshot(version=True)  # type: ignore[arg-type]


def test_version_and_timestamp_together(g: Guard) -> None:
    with pytest.raises(InvalidArgumentError):
        g.t.snapshot(version=1, timestamp=0)


def test_timestamp_before_first_commit(g: Guard) -> None:
    with pytest.raises(VersionNotFoundError, match="before the earliest commit"):
        g.t.snapshot(timestamp="2001-01-01T00:00:00Z")


@pytest.mark.parametrize("ts", ["yesterday", True, [1], 1.5, "2024-13-45"])
def test_invalid_timestamp(g: Guard, ts: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        g.t.snapshot(timestamp=ts)


def test_negative_history_limit(g: Guard) -> None:
    with pytest.raises(InvalidArgumentError):
        g.t.history(limit=-1)


def test_checkpoint_of_future_version(g: Guard) -> None:
    with pytest.raises(VersionNotFoundError):
        g.t.checkpoint(version=9)


# ---------------------------------------------------------------------- predicates and projections
@pytest.mark.parametrize(
    ("predicate", "error", "message"),
    [
        ("id >", PredicateError, "does not parse"),
        ("", PredicateError, "non-empty"),
        ("nope = 1", PredicateError, "column 'nope' is unknown"),
        ("part = 'a' AND Nope IS NULL", PredicateError, "column 'Nope' is unknown"),
        # Spark casts 'abc' to BIGINT under ANSI and fails; the engine refuses what it cannot reproduce
        ("id = 'abc'", UnsupportedExpressionError, "BIGINT, STRING"),
        ("id IN (SELECT 1)", PredicateError, "not one scalar expression"),
        ("foo(id) = 1", UnsupportedExpressionError, "function foo()"),
        ("id = 1; DROP TABLE x", PredicateError, "not one scalar expression"),
    ],
)
def test_bad_predicate(g: Guard, predicate: str, error: type[TxnLogError], message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        g.t.snapshot().to_arrow(filter=predicate)


def test_predicate_is_never_evaluated_as_code(g: Guard, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(TxnLogError):
        g.t.snapshot().files(f"__import__('os').system('touch {marker}') = 0")
    with pytest.raises(TxnLogError):
        g.t.transaction().read_files(f"id = __import__('pathlib').Path('{marker}').touch()")
    assert not marker.exists()


def test_unknown_column_in_projection(g: Guard) -> None:
    with pytest.raises(SchemaMismatchError, match="nope"):
        g.t.snapshot().to_arrow(columns=["id", "nope"])


# ---------------------------------------------------------------------- writes
@pytest.mark.parametrize(
    "data",
    [
        pa.table({"id": ["x"], "value": [1.0], "part": ["a"]}),
        pa.table({"id": [1], "value": [1.0], "part": ["a"], "extra": [1]}),
        pa.table({"id": [1], "value": ["1.0"], "part": ["a"]}),
    ],
    ids=["wrong-type", "extra-column", "string-for-double"],
)
def test_write_schema_mismatch(g: Guard, data: pa.Table) -> None:
    with pytest.raises(SchemaMismatchError):
        g.t.write(data)


def test_write_null_into_non_nullable(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("part", pa.string())])
    t = Table.create(str(tmp_path / "t"), schema=schema, partition_by=["part"])
    before = tree(tmp_path / "t")
    with pytest.raises(SchemaMismatchError, match="non-nullable"):
        t.write(pa.table({"id": pa.array([None], pa.int64()), "part": ["a"]}))
    assert tree(tmp_path / "t") == before


@pytest.mark.parametrize("data", [{"id": [1]}, None, [1, 2]])
def test_write_not_a_table(g: Guard, data: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        g.t.write(data)


def test_write_unknown_mode(g: Guard) -> None:
    with pytest.raises(InvalidArgumentError, match="mode"):
        g.t.write(rows([9]), mode="upsert")


@pytest.mark.parametrize("txn", [("", 1), ("app", -1), ("app", "1")])
def test_write_bad_txn(g: Guard, txn: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        g.t.write(rows([9]), txn=txn)


def test_overwrite_of_append_only_table(tmp_path: Path) -> None:
    g = Guard(tmp_path / "t", properties={"delta.appendOnly": "true"})
    with pytest.raises(AppendOnlyViolationError):
        g.t.write(rows([9]), mode="overwrite")
    g.unchanged()  # the data files written before the refused commit are deleted again


# ---------------------------------------------------------------------- add paths
@pytest.mark.parametrize(
    "path",
    [
        "../x.parquet",
        "a/../../x.parquet",
        "..",
        "..\\x.parquet",
        "",
        "/etc/passwd",
        "s3://elsewhere/x.parquet",
    ],
)
def test_add_path_escaping_the_root(g: Guard, path: str) -> None:
    with pytest.raises(InvalidArgumentError):
        _commit_add(g.t, _file(path))


def test_add_path_in_a_sibling_folder(g: Guard) -> None:
    with pytest.raises(InvalidArgumentError):
        _commit_add(g.t, _file(f"{g.root}-sibling/x.parquet"))


def test_percent_encoded_escape_is_decoded_before_the_check(g: Guard) -> None:
    add = AddFile.from_wire({"path": "%2E%2E/x.parquet", "partitionValues": {"part": "a"}, "size": 1})
    assert add.path == "../x.parquet"
    with pytest.raises(InvalidArgumentError):
        _commit_add(g.t, add)


@pytest.mark.parametrize("form", ["plain", "file-uri"])
def test_absolute_path_with_dotdot_escaping_the_root(g: Guard, form: str) -> None:
    path = f"{g.root}/../outside.parquet"
    with pytest.raises(InvalidArgumentError):
        _commit_add(g.t, _file(path if form == "plain" else f"file://{path}"))


# ---------------------------------------------------------------------- transactions and options
def test_same_file_added_twice(g: Guard) -> None:
    txn = g.t.transaction()
    txn.add(_file("a.parquet"))
    with pytest.raises(InvalidArgumentError, match="twice"):
        txn.add(_file("a.parquet"))


def test_same_file_added_and_removed(g: Guard) -> None:
    txn = g.t.transaction()
    live = txn.read_files()[0]
    txn.remove(live)
    txn.add(_file(live.path))
    with pytest.raises(InvalidArgumentError, match="both added and removed"):
        txn.commit()


def test_commit_twice(g: Guard) -> None:
    txn = g.t.transaction()
    txn.remove(txn.read_files("part = 'b'")[0])
    txn.commit()
    g.before = tree(g.root)
    with pytest.raises(InvalidArgumentError, match="already been committed"):
        txn.commit()


def test_protocol_downgrade(g: Guard) -> None:
    with pytest.raises(InvalidArgumentError, match="downgraded"):
        g.t.transaction().update_protocol(Protocol(1, 1))


def test_max_commit_attempts_zero(g: Guard) -> None:
    with pytest.raises(InvalidArgumentError, match="max_commit_attempts"):
        Table.open(str(g.root), max_commit_attempts=0)


def test_checkpoint_part_size_zero(g: Guard) -> None:
    with pytest.raises(InvalidArgumentError):
        Table.open(str(g.root), checkpoint_part_size=0).checkpoint()


# ---------------------------------------------------------------------- protocol features
@pytest.mark.parametrize(
    ("protocol", "feature"),
    [
        ({"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["liquid"]}, "liquid"),
        ({"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["futureThing"]}, "futureThing"),
        ({"minReaderVersion": 1, "minWriterVersion": 8}, "writerVersion8"),
    ],
)
def test_unknown_writer_feature_refuses_writes(
    tmp_path: Path, protocol: dict[str, Any], feature: str
) -> None:
    g = Guard(tmp_path / "t")
    _raw_commit(g.t, [{"protocol": protocol}])
    g.before = tree(g.root)
    with pytest.raises(UnsupportedFeatureError) as err:
        Table.open(str(g.root)).write(rows([9]))
    assert err.value.feature == feature
    g.unchanged()


@pytest.mark.parametrize(
    ("protocol", "feature"),
    [
        (
            {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["futureThing"],
                "writerFeatures": [],
            },
            "futureThing",
        ),
        ({"minReaderVersion": 4, "minWriterVersion": 7}, "readerVersion4"),
    ],
)
def test_unknown_reader_feature_refuses_reads(tmp_path: Path, protocol: dict[str, Any], feature: str) -> None:
    g = Guard(tmp_path / "t")
    _raw_commit(g.t, [{"protocol": protocol}])
    g.before = tree(g.root)
    with pytest.raises(UnsupportedFeatureError) as err:
        Table.open(str(g.root)).snapshot()
    assert err.value.feature == feature
    g.unchanged()


def test_check_constraint_table_refuses_violating_writes(tmp_path: Path) -> None:
    """A constraint another writer committed (here by hand, with the legacy writer version 3 it
    needs) is enforced: a breaking row writes nothing."""
    g = Guard(tmp_path / "t")
    meta = g.t.snapshot().metadata.to_wire()["metaData"]
    meta["configuration"] = {"delta.constraints.small": "id < 5"}
    _raw_commit(g.t, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 3}}, {"metaData": meta}])
    g.before = tree(g.root)
    with pytest.raises(ConstraintViolationError, match=r"small \(id < 5\) is violated by 1 row"):
        Table.open(str(g.root)).write(rows([9]))
    g.unchanged()


# ---------------------------------------------------------------------- huge commits
def test_huge_commit_over_the_limit_writes_nothing(g: Guard) -> None:
    """A commit over `max_commit_bytes` (50,000 adds, about 6 MB, over a 1 MiB limit) is refused before the
    put: the log is unchanged (the fixture compares every file)."""
    t = Table.open(str(g.root), max_commit_bytes=1024 * 1024)
    txn = t.transaction("WRITE")
    for i in range(50_000):
        txn.add(_file(f"part=a/f-{i:06d}.parquet"))
    with pytest.raises(
        CommitTooLargeError, match=r"50,000 actions\), over the limit of 1,048,576 bytes"
    ) as e:
        txn.commit()
    assert e.value.size > 5 * 1024 * 1024 and txn.attempts == 0


def test_huge_write_over_the_limit_leaves_no_data_files(g: Guard) -> None:
    """`Table.write` under a tiny limit: refused, and the data files it wrote are deleted again."""
    t = Table.open(str(g.root), max_commit_bytes=100)
    with pytest.raises(CommitTooLargeError, match="Nothing was written"):
        t.write(rows(list(range(10)), "c"))


@pytest.mark.parametrize("limit", [0, -5])
def test_max_commit_bytes_must_be_positive(g: Guard, limit: int) -> None:
    with pytest.raises(InvalidArgumentError, match="max_commit_bytes must be at least 1"):
        Table.open(str(g.root), max_commit_bytes=limit)


def test_huge_commit_under_the_default_limit(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Under the default limit (256 MiB) a 20,000-add commit is written atomically, replayed,
    checkpointed and read back."""
    from tests.reliability.conftest import report_figures  # noqa: PLC0415

    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["part"])
    txn = t.transaction("WRITE")
    n = 20_000
    for i in range(n):
        txn.add(_file(f"part=a/f-{i:06d}.parquet"))
    assert txn.commit() == 1
    size = (tmp_path / "t" / LOG_DIR / f"{1:020d}.json").stat().st_size
    fresh = Table.open(str(tmp_path / "t"))
    assert fresh.snapshot().num_files == n
    fresh.checkpoint()
    assert Table.open(str(tmp_path / "t")).snapshot().checkpoint_version == 1
    assert len(Table.open(str(tmp_path / "t")).snapshot().file_paths()) == n
    report_figures(request, "huge commit", {"adds": n, "commit_bytes": size})
