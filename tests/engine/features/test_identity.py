"""Identity columns through the engine's writer (issue 26, item 4): values past the high-water mark in
the step's direction, the mark raised in the same commit, overflow refused, GENERATED ALWAYS / BY
DEFAULT as Delta defines them, and concurrent writers that all land with no duplicate id."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import (
    ConcurrentTransactionError,
    ConstraintViolationError,
    IdentityColumn,
    InvalidArgumentError,
    Table,
)
from airflow_txnlog.engine.spi import write_data_files
from tests.processes import ROOT

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
GOLDEN = Path(__file__).parents[2] / "compat" / "golden" / "delta-spark-features"


def _names(*names: str) -> pa.Table:
    return pa.table({"name": list(names)}, schema=pa.schema([("name", pa.string())]))


def _field_metadata(path: Path, column: str = "id") -> dict[str, object]:
    snap = Table.open(str(path)).snapshot()
    fields = {f["name"]: f for f in json.loads(snap.metadata.schema_string)["fields"]}
    return dict(fields[column]["metadata"])


def _ids(path: Path) -> list[int]:
    return sorted(Table.open(str(path)).snapshot().to_arrow().column("id").to_pylist())


def test_create_stores_identity_as_delta_does(tmp_path: Path) -> None:
    t = Table.create(
        str(tmp_path / "t"), schema=SCHEMA, identity_columns={"id": IdentityColumn(start=10, step=5)}
    )
    p = t.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version) == (1, 6)
    assert _field_metadata(tmp_path / "t") == {
        "delta.identity.start": 10,
        "delta.identity.step": 5,
        "delta.identity.allowExplicitInsert": False,
    }


def test_values_follow_the_mark_in_the_steps_direction(tmp_path: Path) -> None:
    up = Table.create(
        str(tmp_path / "up"), schema=SCHEMA, identity_columns={"id": IdentityColumn(start=10, step=5)}
    )
    assert up.write(_names("a", "b", "c")) == 1
    assert _ids(tmp_path / "up") == [10, 15, 20]
    assert _field_metadata(tmp_path / "up")["delta.identity.highWaterMark"] == 20
    up.write(_names("d"))
    assert _ids(tmp_path / "up") == [10, 15, 20, 25]
    down = Table.create(
        str(tmp_path / "dn"), schema=SCHEMA, identity_columns={"id": IdentityColumn(start=0, step=-2)}
    )
    down.write(_names("a", "b"))
    down.write(_names("c"))
    assert _ids(tmp_path / "dn") == [-4, -2, 0]
    assert _field_metadata(tmp_path / "dn")["delta.identity.highWaterMark"] == -4
    assert sorted(DeltaTable(str(tmp_path / "dn")).to_pyarrow_table().column("id").to_pylist()) == [-4, -2, 0]


def test_generated_always_refuses_explicit_values(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, identity_columns={"id": IdentityColumn()})
    explicit = pa.table({"id": [7, None], "name": ["x", "y"]}, schema=SCHEMA)
    with pytest.raises(ConstraintViolationError, match="GENERATED ALWAYS: 1 row"):
        t.write(explicit)
    assert t.latest_version() == 0 and not list((tmp_path / "t").glob("*.parquet"))


def test_by_default_keeps_explicit_values_and_they_do_not_move_the_mark(tmp_path: Path) -> None:
    t = Table.create(
        str(tmp_path / "t"), schema=SCHEMA, identity_columns={"id": IdentityColumn(always=False)}
    )
    t.write(pa.table({"id": [100, None, None], "name": ["x", "y", "z"]}, schema=SCHEMA))
    assert _ids(tmp_path / "t") == [1, 2, 100]
    assert _field_metadata(tmp_path / "t")["delta.identity.highWaterMark"] == 2


def test_overflow_is_refused(tmp_path: Path) -> None:
    t = Table.create(
        str(tmp_path / "t"), schema=SCHEMA, identity_columns={"id": IdentityColumn(start=2**63 - 2, step=1)}
    )
    t.write(_names("a", "b"))
    with pytest.raises(ConstraintViolationError, match="would overflow BIGINT"):
        t.write(_names("c"))
    assert _ids(tmp_path / "t") == [2**63 - 2, 2**63 - 1]


@pytest.mark.parametrize(
    ("schema", "spec", "partition_by", "message"),
    [
        (pa.schema([("id", pa.int32())]), IdentityColumn(), [], "is int32; identity columns are BIGINT"),
        (SCHEMA, IdentityColumn(step=0), [], "step cannot be 0"),
        (SCHEMA, IdentityColumn(start=True), [], "start must be a BIGINT"),  # type: ignore[arg-type]
        (SCHEMA, IdentityColumn(), ["id"], "cannot be a partition column"),
        (SCHEMA, {"start": 1}, [], "must be an IdentityColumn"),
    ],
)
def test_bad_identity_columns_create_nothing(
    tmp_path: Path, schema: pa.Schema, spec: object, partition_by: list[str], message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        Table.create(
            str(tmp_path / "t"), schema=schema, partition_by=partition_by, identity_columns={"id": spec}
        )  # type: ignore[dict-item]
    assert not (tmp_path / "t").exists()


def test_a_raw_transaction_adding_rows_is_refused(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, identity_columns={"id": IdentityColumn()})
    snap = t.snapshot()
    rows = pa.table({"id": [1], "name": ["x"]}, schema=SCHEMA)
    txn = t.transaction("WRITE")
    for a in write_data_files(t.storage, rows, [], snap.properties, max_rows_per_file=10):
        txn.add(a)
    with pytest.raises(InvalidArgumentError, match="identity column id"):
        txn.commit()


def test_the_golden_identity_table_is_written_past_its_mark(tmp_path: Path) -> None:
    """Written by Delta (ids 1, 2, 4; highWaterMark 4; writer version 2): new rows get 5 and 6, the
    mark becomes 6 and the protocol names identity columns (writer 6)."""
    path = tmp_path / "g"
    shutil.copytree(GOLDEN / "identity_test_written_by_version_5", path)
    t = Table.open(str(path))
    rows = pa.table(
        {"part": [9, 9], "value": ["five", "six"]},
        schema=pa.schema([("part", pa.int32()), ("value", pa.string())]),
    )
    t.write(rows)
    back = sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["value"]) for r in back] == [
        (1, "one"),
        (2, "two"),
        (4, "three"),
        (5, "five"),
        (6, "six"),
    ]
    assert _field_metadata(path)["delta.identity.highWaterMark"] == 6
    assert Table.open(str(path)).snapshot().protocol.min_writer_version == 6


WRITER = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    from airflow_txnlog.engine import Table
    t = Table.open(sys.argv[1])
    for i in range(int(sys.argv[3])):
        t.write(pa.table({"name": [f"{sys.argv[2]}-{i}-{j}" for j in range(50)]}))
    """
)


def test_concurrent_identity_writers_all_land_with_no_duplicate_id(tmp_path: Path) -> None:
    """Three processes append 8 batches of 50 rows each at once. Delta on Spark fails the loser of
    such a race; here it numbers its rows again past the winner's mark and retries."""
    path = tmp_path / "t"
    Table.create(str(path), schema=SCHEMA, identity_columns={"id": IdentityColumn()})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"w{w}", "8"], env=env, stderr=subprocess.PIPE
        )
        for w in range(3)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
    ids = _ids(path)
    assert len(ids) == 3 * 8 * 50 and len(set(ids)) == len(ids)
    assert _field_metadata(path)["delta.identity.highWaterMark"] == max(ids)
    assert Table.open(str(path)).latest_version() == 24


def test_restore_never_moves_a_high_water_mark_back(tmp_path) -> None:
    """As Delta (copySchemaWithMergedHighWaterMarks): restoring to a version with a lower mark keeps
    the current one, so no value is generated a second time."""
    t = Table.create(
        str(tmp_path / "r"),
        schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
        identity_columns={"id": IdentityColumn()},
    )
    t.write(pa.table({"v": ["a", "b"]}))  # ids 1, 2 (v1)
    t.write(pa.table({"v": ["c", "d"]}))  # ids 3, 4 (v2)
    t.restore(version=1)
    t.write(pa.table({"v": ["e"]}))
    rows = sorted((r["id"], r["v"]) for r in t.snapshot().to_arrow().to_pylist())
    assert rows == [(1, "a"), (2, "b"), (5, "e")]


def test_two_runs_of_one_idempotent_identity_write_commit_once(tmp_path) -> None:
    """The loser of a race between two runs of the same txn=(app, version) sees the winner's app id
    (not only its new mark) and commits nothing, instead of numbering the batch again."""
    path = str(tmp_path / "i")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = Table.create(path, schema=schema, identity_columns={"id": IdentityColumn()})
    loser = Table.open(path)
    t.write(pa.table({"v": ["x"]}), txn=("job", 7))
    txn = loser.transaction("WRITE", snapshot=loser.snapshot(version=0))
    txn.set_app_transaction("job", 7)
    txn.update_metadata(txn.snapshot.metadata)
    with pytest.raises(ConcurrentTransactionError):
        txn.commit()
    assert loser.write(pa.table({"v": ["x"]}), txn=("job", 7)) == 1
    assert [r["v"] for r in Table.open(path).snapshot().to_arrow().to_pylist()] == ["x"]
