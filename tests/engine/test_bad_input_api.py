"""Bad input to the engine's public API: modes, policies, mappings, flags and numbers.

Each case asserts the error type (an `InvalidArgumentError`, or `UnsupportedFeatureError` for a table
property value the engine cannot honour), that the message names what is accepted, and that nothing
was written: every file under the table root is the same before and after (the `guard` fixture), or,
for `Table.create`, nothing exists at the URI. Runs on the local and the in-memory backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, get_args

import pyarrow as pa
import pytest

from airflow_txnlog.engine import (
    ForeignCommitsPolicy,
    InvalidArgumentError,
    IsolationLevel,
    Table,
    TxnLogError,
    UnsupportedFeatureError,
    WriteMode,
)
from airflow_txnlog.engine.storage import storage_for
from tests.conftest import SCHEMA, rows


def _files(uri: str) -> dict[str, int]:
    """Every file under the table root with its size (local and memory:// alike)."""
    storage = storage_for(uri)
    if not storage.fs.exists(storage.fs_root):
        return {}
    found = storage.fs.find(storage.fs_root, detail=True, withdirs=False)
    return {str(path): int(info.get("size") or 0) for path, info in found.items()}


@pytest.fixture
def guard(table_uri: str) -> Iterator[Table]:
    """A table with three versions (0 create, 1 and 2 appends); after the test, nothing was written."""
    t = Table.create(table_uri, schema=SCHEMA, partition_by=["part"])
    t.write(rows([1, 2], "a"))
    t.write(rows([3], "b"))
    before = _files(table_uri)
    yield t
    assert _files(table_uri) == before
    assert Table.open(table_uri).latest_version() == 2


def _refused(call: Callable[[], object], *named: str, error: type[TxnLogError] = InvalidArgumentError) -> str:
    """Run `call`, expect `error`, and check the message names each of `named`."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for word in named:
        assert word in message, (word, message)
    return message


def _literal_words(alias: Any) -> tuple[str, ...]:
    return tuple(repr(v) for v in get_args(alias))


# ---------------------------------------------------------------------- modes and policies
@pytest.mark.parametrize("mode", ["upsert", "Append", "", None, 1, ["append"]])
def test_write_mode(guard: Table, mode: Any) -> None:
    _refused(lambda: guard.write(rows([9]), mode=mode), "mode", *_literal_words(WriteMode))


@pytest.mark.parametrize("level", ["serializable", "SnapshotIsolation", "snapshot", None, 3])
def test_isolation_level(guard: Table, level: Any) -> None:
    _refused(
        lambda: guard.transaction(isolation_level=level), "isolation_level", *_literal_words(IsolationLevel)
    )


@pytest.mark.parametrize("policy", ["ignore", "FAIL", True, None])
def test_restore_policy_writes_no_pin_and_no_commit(guard: Table, policy: Any) -> None:
    """Checked before a version target is pinned: a bad policy leaves no savepoint, even briefly."""
    accepted = _literal_words(ForeignCommitsPolicy)
    _refused(lambda: guard.restore(version=1, on_foreign_commits=policy), "on_foreign_commits", *accepted)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"owner": 5}, ("owner", "string")),
        ({"owner": ""}, ("owner", "non-empty string")),
        ({"dry_run": "false"}, ("dry_run", "True or False")),
    ],
)
def test_restore_options(guard: Table, kwargs: dict[str, Any], named: tuple[str, ...]) -> None:
    _refused(lambda: guard.restore(version=1, **kwargs), *named)


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda t: t.vacuum(dry_run=0), ("dry_run", "True or False")),
        (lambda t: t.vacuum(dry_run=False, enforce_retention="no"), ("enforce_retention", "True or False")),
        (lambda t: t.vacuum(retention_hours="24"), ("retention_hours", "at least 0", "None")),
        (lambda t: t.vacuum(retention_hours=-1), ("retention_hours", "at least 0")),
        (lambda t: t.vacuum(retention_hours=math.nan, dry_run=False), ("retention_hours", "at least 0")),
        (lambda t: t.cleanup_log(retention_hours=True), ("retention_hours", "at least 0")),
        (lambda t: t.cleanup_log(dry_run="yes"), ("dry_run", "True or False")),
        (lambda t: t.health(small_file_bytes="1"), ("small_file_bytes", "at least 0")),
        (lambda t: t.history(limit="5"), ("limit", "at least 0", "integer")),
        (lambda t: t.history(limit=1.5), ("limit", "integer")),
        (lambda t: t.txn_commit_version(5, 0), ("app_id", "non-empty string")),
        (lambda t: t.txn_commit_version("app", "1"), ("version", "integer")),
        (lambda t: t.create_savepoint("sp", reason=5), ("reason", "string")),
        (lambda t: t.create_savepoint("sp", created_by=["me"]), ("created_by", "string")),
        (lambda t: t.write(rows([9]), txn="app"), ("txn", "app id")),
        (lambda t: t.write(rows([9]), txn=("app", True)), ("txn", "version >= 0")),
        (lambda t: t.snapshot().to_arrow(columns="id"), ("columns", "list of column names")),
    ],
)
def test_maintenance_and_read_options(
    guard: Table, call: Callable[[Table], object], named: tuple[str, ...]
) -> None:
    _refused(lambda: call(guard), *named)


# ---------------------------------------------------------------------- mappings
NOT_A_MAPPING = ["owner=me", [("owner", "me")], 5]
NOT_STR_TO_STR = [{"owner": 1}, {1: "me"}, {"owner": None}]


@pytest.mark.parametrize("tags", NOT_A_MAPPING + NOT_STR_TO_STR)
def test_write_tags(guard: Table, tags: Any) -> None:
    _refused(lambda: guard.write(rows([9]), tags=tags), "tags", "str to str")


@pytest.mark.parametrize("tags", NOT_A_MAPPING + NOT_STR_TO_STR)
def test_transaction_tags(guard: Table, tags: Any) -> None:
    _refused(lambda: guard.transaction(tags=tags), "tags", "str")


def test_default_tags_must_be_str_to_str(guard: Table) -> None:
    guard.default_tags = {"owner": 7}  # type: ignore[dict-item]
    _refused(lambda: guard.write(rows([9])), "tags", "str to str")


@pytest.mark.parametrize("parameters", ["x", [("a", "b")], {1: "a"}, {"a": object()}, {"a": {2: "b"}}])
def test_transaction_parameters(guard: Table, parameters: Any) -> None:
    _refused(lambda: guard.transaction("DELETE", parameters), "parameters")


@pytest.mark.parametrize("operation", ["", "  ", None, 5])
def test_transaction_operation(guard: Table, operation: Any) -> None:
    _refused(lambda: guard.transaction(operation), "operation", "non-empty string")


@pytest.mark.parametrize(
    ("commit_kwargs", "named"),
    [
        ({"metrics": "numFiles=1"}, ("metrics", "mapping")),
        ({"metrics": {"numFiles": object()}}, ("metrics", "JSON")),
        ({"extra": [("a", 1)]}, ("extra", "mapping")),
        ({"extra": {"tags": {"owner": 1}}}, ("extra['tags']", "str to str")),
        ({"extra": {"tags": "owner"}}, ("extra['tags']", "mapping")),
        ({"user_metadata": 5}, ("user_metadata", "string")),
    ],
)
def test_commit_options(guard: Table, commit_kwargs: dict[str, Any], named: tuple[str, ...]) -> None:
    txn = guard.transaction("WRITE")
    _refused(lambda: txn.commit(**commit_kwargs), *named)
    assert txn.attempts == 0 and txn.committed_version is None


def test_transaction_on_another_tables_snapshot(guard: Table, tmp_path: Any) -> None:
    other = Table.create(str(tmp_path / "other"), schema=SCHEMA)
    _refused(lambda: guard.transaction(snapshot=other.snapshot()), "snapshot", "Snapshot of")
    _refused(lambda: guard.transaction(snapshot="latest"), "snapshot", "Snapshot of")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"storage_options": "anon=true"}, ("storage_options", "mapping")),
        ({"storage_options": [("anon", True)]}, ("storage_options", "mapping")),
        ({"storage_options": {1: True}}, ("storage_options", "str")),
        ({"single_writer": "true"}, ("single_writer", "True or False")),
        ({"max_commit_attempts": "3"}, ("max_commit_attempts", "at least 1", "integer")),
        ({"max_commit_attempts": True}, ("max_commit_attempts", "at least 1")),
        ({"checkpoint_part_size": 1.5}, ("checkpoint_part_size", "integer")),
        ({"max_commit_bytes": "1"}, ("max_commit_bytes", "at least 1", "None")),
    ],
)
def test_open_options(guard: Table, kwargs: dict[str, Any], named: tuple[str, ...]) -> None:
    _refused(lambda: Table.open(guard.uri, **kwargs), *named)


# ---------------------------------------------------------------------- Table.create
@pytest.fixture
def new_uri(table_uri: str) -> Iterator[str]:
    yield table_uri
    assert _files(table_uri) == {}  # nothing at all was created


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"properties": "delta.appendOnly=true"}, ("properties", "mapping", "str to str")),
        ({"properties": [("delta.appendOnly", "true")]}, ("properties", "mapping")),
        ({"properties": {"delta.appendOnly": True}}, ("properties", "str to str", "bool")),
        ({"properties": {"delta.checkpointInterval": 10}}, ("properties", "int")),
        ({"properties": {5: "x"}}, ("properties", "str to str")),
        ({"partition_by": "part"}, ("partition_by", "list or tuple of column names")),
        ({"partition_by": [1]}, ("partition_by", "column names")),
        ({"partition_by": None}, ("partition_by", "list or tuple")),
        ({"storage_options": "anon"}, ("storage_options", "mapping")),
        ({"name": 5}, ("name", "string")),
        ({"description": ["x"]}, ("description", "string")),
        ({"single_writer": 1}, ("single_writer", "True or False")),
    ],
)
def test_create_arguments(new_uri: str, kwargs: dict[str, Any], named: tuple[str, ...]) -> None:
    _refused(lambda: Table.create(new_uri, schema=SCHEMA, **kwargs), *named)


@pytest.mark.parametrize(
    ("prop", "value", "named"),
    [
        ("delta.targetFileSize", "big", ("delta.targetFileSize", "positive integer")),
        ("delta.targetFileSize", "-1", ("delta.targetFileSize", "positive integer")),
        ("delta.dataSkippingNumIndexedCols", "-2", ("dataSkippingNumIndexedCols", ">= -1", "every column")),
        ("delta.dataSkippingNumIndexedCols", "1.5", ("dataSkippingNumIndexedCols", "integer")),
        ("delta.columnMapping.mode", "names", ("columnMapping.mode", "'none'", "'name'", "'id'")),
        ("delta.checkpointInterval", "-3", ("checkpointInterval", "positive integer")),
        ("delta.appendOnly", "TRUE!", ("appendOnly", "'true' or 'false'")),
        ("delta.logRetentionDuration", "30", ("logRetentionDuration", "interval 7 days")),
    ],
)
def test_create_property_values(new_uri: str, prop: str, value: str, named: tuple[str, ...]) -> None:
    _refused(lambda: Table.create(new_uri, schema=SCHEMA, properties={prop: value}), *named)


def test_create_with_a_column_mapping_property_and_a_mapped_schema_is_refused(new_uri: str) -> None:
    """A schema that already carries mapping metadata is not the user's to give: ids and physical
    names are assigned by the engine (a clash would corrupt the table)."""
    meta = {b"delta.columnMapping.physicalName": b'"x"'}
    deep = pa.list_(pa.struct([pa.field("z", pa.int32(), metadata={b"delta.columnMapping.id": b"1"})]))
    for schema, named in [
        (pa.schema([pa.field("id", pa.int64(), metadata=meta)]), "id"),
        (pa.schema([("id", pa.int64()), ("l", deep)]), "l.element.z"),  # inside a list too
    ]:
        call = lambda s=schema: Table.create(new_uri, schema=s, properties={"delta.columnMapping.mode": "id"})  # noqa: E731
        _refused(call, "columnMapping", named, error=UnsupportedFeatureError)


def test_valid_values_still_accepted(table_uri: str) -> None:
    """The checks refuse only what is wrong: the documented forms still work."""
    t = Table.create(
        table_uri,
        schema=SCHEMA,
        partition_by=("part",),
        properties={"delta.dataSkippingNumIndexedCols": "-1", "delta.columnMapping.mode": "none"},
        storage_options={},
    )
    assert t.write(rows([1]), mode="overwrite", tags={"owner": "run"}) == 1
    with t.transaction("DELETE", {"predicate": ["x"]}, isolation_level="WriteSerializable") as txn:
        txn.remove(txn.read_files()[0])
        assert txn.commit(metrics={"numRemovedFiles": 1}, extra={"tags": {"k": "v"}}) == 2
    assert [h["tags"] for h in t.history(limit=2)] == [{"k": "v"}, {"owner": "run"}]
    assert t.restore(version=1, on_foreign_commits="force", dry_run=True).dry_run


def test_create_with_a_bad_handle_option_writes_nothing(tmp_path: Any) -> None:
    """The handle's options (and unknown keywords) are checked before version 0 is written: they were
    checked after, so a bad `checkpoint_part_size` left a table behind (found moving `create`)."""
    uri = str(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match="checkpoint_part_size"):
        Table.create(uri, schema=SCHEMA, checkpoint_part_size=0)
    with pytest.raises(TypeError, match="bogus"):
        Table.create(uri, schema=SCHEMA, bogus=1)
    assert not (tmp_path / "t" / "_delta_log").exists()
    assert Table.create(uri, schema=SCHEMA).latest_version() == 0


def test_cluster_by_an_empty_list_is_refused_not_taken_for_none(table_uri: str) -> None:
    """Issue 38: `cluster_by([])` silently removed the keys; create refuses an empty list, so does this.
    CLUSTER BY NONE stays `cluster_by(None)`."""
    t = Table.create(table_uri, schema=SCHEMA, cluster_by=["id"])
    t.write(rows([1, 2], "a"))
    before = _files(table_uri)
    _refused(lambda: t.cluster_by([]), "columns is empty", "cluster_by(None)")
    assert _files(table_uri) == before
    assert Table.open(table_uri).snapshot().clustering_columns() == ["id"]
    t.cluster_by(None)
    assert Table.open(table_uri).snapshot().clustering_columns() == []
