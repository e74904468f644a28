"""CHECK constraints across engines (issue 26): a constraint we add is enforced by delta-rs, and one
delta-rs adds (`DeltaTable.alter.add_constraint`, which keeps the name's case) is enforced by ours."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import DeltaError

from airflow_txnlog.engine import ConstraintViolationError, InvalidArgumentError, Table

pytestmark = [pytest.mark.compat]

SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64())])


def _rows(ids: list[int], amounts: list[float | None]) -> pa.Table:
    return pa.table({"id": ids, "amount": amounts}, schema=SCHEMA)


def test_a_constraint_we_add_is_enforced_by_delta_rs(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    t = Table.create(uri, schema=SCHEMA)
    t.write(_rows([1, 2], [1.0, 2.0]))
    t.add_constraint("positive", "amount > 0")
    with pytest.raises(DeltaError, match="failed validation check"):
        write_deltalake(uri, _rows([3], [-3.0]), mode="append")
    with pytest.raises(DeltaError, match="failed validation check"):
        write_deltalake(uri, _rows([4], [None]), mode="append")  # NULL breaks it there too
    write_deltalake(uri, _rows([5], [5.0]), mode="append")
    assert sorted(Table.open(uri).snapshot().to_arrow().column("id").to_pylist()) == [1, 2, 5]
    assert DeltaTable(uri).protocol().min_writer_version == 3


def test_a_constraint_delta_rs_adds_is_enforced_by_ours_and_dropped_by_name(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _rows([1], [1.0]))
    DeltaTable(uri).alter.add_constraint({"Pos_Amount": "amount > 0"})
    t = Table.open(uri)
    assert t.constraints() == {"Pos_Amount": "amount > 0"}
    with pytest.raises(ConstraintViolationError, match=r"CHECK constraint Pos_Amount \(amount > 0\)"):
        t.write(_rows([2], [-2.0]))
    assert t.latest_version() == 1
    assert t.write(_rows([3], [3.0])) == 2
    assert t.drop_constraint("pos_amount") == 3  # names match case-insensitively, as in Delta
    write_deltalake(uri, _rows([4], [-4.0]), mode="append")  # delta-rs sees it gone
    assert sorted(DeltaTable(uri).to_pyarrow_table().column("id").to_pylist()) == [1, 3, 4]


def test_adding_a_constraint_delta_rs_already_has_is_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _rows([1], [1.0]))
    DeltaTable(uri).alter.add_constraint({"Pos_Amount": "amount > 0"})
    with pytest.raises(InvalidArgumentError, match="already exists"):
        Table.open(uri).add_constraint("pos_amount", "amount > 1")


def test_an_invariant_is_written_as_the_protocol_spells_it_and_enforced_by_delta_rs(tmp_path: Path) -> None:
    """PROTOCOL.md: the field metadata `delta.invariants` is a JSON *string* (Delta on Spark reads it
    with getString). Given as a JSON object in Arrow metadata, the engine still writes the string."""
    import json  # noqa: PLC0415

    uri = str(tmp_path / "t")
    rule = {"expression": {"expression": "amount > 0"}}
    field = pa.field("amount", pa.float64(), metadata={"delta.invariants": json.dumps(rule)})
    Table.create(uri, schema=pa.schema([("id", pa.int64()), field]))
    log = json.loads((tmp_path / "t" / "_delta_log" / f"{0:020d}.json").read_text().splitlines()[2])
    stored = json.loads(log["metaData"]["schemaString"])["fields"][1]["metadata"]["delta.invariants"]
    assert isinstance(stored, str) and json.loads(stored) == rule
    with pytest.raises(DeltaError, match="failed validation check"):
        write_deltalake(uri, _rows([3], [-3.0]), mode="append")
    with pytest.raises(ConstraintViolationError):
        Table.open(uri).write(_rows([3], [-3.0]))
    Table.open(uri).write(_rows([4], [4.0]))
    assert Table.open(uri).snapshot().to_arrow().column("id").to_pylist() == [4]
