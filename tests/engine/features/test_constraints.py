"""CHECK constraints and invariants through the engine (issue 26, item 2): ADD / DROP CONSTRAINT,
enforcement by `Table.write`, raw transactions, bad input. Every refusal leaves the log and the
table folder as they were."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.engine import (
    ConcurrentAppendError,
    ConstraintViolationError,
    InvalidArgumentError,
    MetadataChangedError,
    PredicateError,
    Table,
    UnsupportedExpressionError,
)
from airflow_txnlog.engine.spi import write_data_files
from tests.cli_support import run, run_json

SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("name", pa.string())])


def _rows(ids: list[int], amounts: list[float | None], names: list[str | None] | None = None) -> pa.Table:
    return pa.table({"id": ids, "amount": amounts, "name": names or ["x"] * len(ids)}, schema=SCHEMA)


def _table(tmp_path: Path, **kwargs: object) -> Table:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, **kwargs)  # type: ignore[arg-type]
    if not t.constraints():
        t.write(_rows([1, 2], [10.0, 20.0]))
    return t


def _data_files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "t").rglob("*.parquet") if "_delta_log" not in p.parts)


def _files_for(t: Table, rows: pa.Table) -> list[Any]:
    """Data files holding `rows`, written outside any transaction (as a raw writer would)."""
    snap = t.snapshot()
    return write_data_files(t.storage, rows, snap.partition_columns, snap.properties, max_rows_per_file=100)


def _commit(tmp_path: Path, version: int) -> dict[str, dict[str, object]]:
    lines = (tmp_path / "t" / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return {k: v for a in map(json.loads, lines) for k, v in a.items()}


def test_add_constraint_stores_it_as_delta_does_and_raises_a_legacy_protocol_to_writer_3(
    tmp_path: Path,
) -> None:
    t = _table(tmp_path)
    assert (t.snapshot().protocol.min_reader_version, t.snapshot().protocol.min_writer_version) == (1, 2)
    assert t.add_constraint("Positive_Amount", "amount > 0") == 2
    commit = _commit(tmp_path, 2)
    assert commit["commitInfo"]["operation"] == "ADD CONSTRAINT"
    assert commit["commitInfo"]["operationParameters"] == {"name": "Positive_Amount", "expr": "amount > 0"}
    assert commit["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 3}
    assert commit["metaData"]["configuration"]["delta.constraints.positive_amount"] == "amount > 0"
    assert t.constraints() == {"positive_amount": "amount > 0"}


def test_a_table_features_protocol_lists_check_constraints(tmp_path: Path) -> None:
    t = _table(tmp_path, properties={"delta.enableDeletionVectors": "true"})
    t.add_constraint("positive", "amount > 0")
    protocol = t.snapshot().protocol
    assert protocol.min_writer_version == 7
    assert "checkConstraints" in (protocol.writer_features or ())


def test_a_write_breaking_a_constraint_is_refused_naming_it_and_a_row(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.add_constraint("positive", "amount > 0")
    before = _data_files(tmp_path)
    with pytest.raises(ConstraintViolationError) as err:
        t.write(_rows([3, 4, 5], [1.0, -2.0, -3.0]))
    e = err.value
    assert (e.constraint, e.expression, e.count) == ("positive", "amount > 0", 2)
    assert e.row == {"id": 4, "amount": -2.0, "name": "x"}
    assert str(e) == (
        "CHECK constraint positive (amount > 0) is violated by 2 rows; one of them: id=4, amount=-2.0, "
        "name='x'. Nothing was committed"
    )
    assert t.latest_version() == 2 and _data_files(tmp_path) == before


def test_null_breaks_a_constraint_as_in_delta_on_spark(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.add_constraint("positive", "amount > 0")
    with pytest.raises(ConstraintViolationError, match="violated by 1 row; one of them: id=3, amount=NULL"):
        t.write(_rows([3], [None]))
    assert t.write(_rows([3], [0.5])) == 3


def test_every_constraint_is_enforced_and_overwrite_too(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.add_constraint("positive", "amount > 0")
    t.add_constraint("short_name", "length(name) <= 3")
    with pytest.raises(ConstraintViolationError, match="short_name"):
        t.write(_rows([3], [1.0], ["abcd"]), mode="overwrite")
    assert t.write(_rows([3], [1.0], ["abc"]), mode="overwrite") == 4
    assert t.snapshot().to_arrow().column("id").to_pylist() == [3]


def test_adding_a_constraint_that_existing_rows_break_counts_them_and_writes_nothing(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.write(_rows([3, 4], [-1.0, None]))
    with pytest.raises(ConstraintViolationError) as err:
        t.add_constraint("positive", "amount > 0")
    assert err.value.count == 2
    assert str(err.value).startswith(
        "cannot add CHECK constraint positive (amount > 0): 2 existing rows break it"
    )
    assert t.latest_version() == 2 and t.constraints() == {}


def test_drop_constraint_lets_rows_in_again(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.add_constraint("positive", "amount > 0")
    assert t.drop_constraint("POSITIVE") == 3
    assert _commit(tmp_path, 3)["commitInfo"]["operationParameters"] == {
        "name": "POSITIVE",
        "expr": "amount > 0",
    }
    assert t.write(_rows([3], [-1.0])) == 4
    assert t.drop_constraint("positive", if_exists=True) is None
    with pytest.raises(InvalidArgumentError, match="no constraint 'positive'"):
        t.drop_constraint("positive")
    assert t.latest_version() == 4


@pytest.mark.parametrize(
    ("name", "expression", "error", "message"),
    [
        ("p", "amount >", PredicateError, "does not parse as Spark SQL"),
        ("p", "", PredicateError, "non-empty SQL string"),
        ("p", "missing > 0", PredicateError, "names column 'missing', which the table lacks"),
        ("p", "sum(amount) > 0", PredicateError, "no query, aggregate"),
        ("p", "amount + 1", PredicateError, "not a boolean expression"),
        ("", "amount > 0", InvalidArgumentError, "must be a non-empty string"),
        ("__CHAR_VARCHAR_STRING_LENGTH_CHECK__", "amount > 0", InvalidArgumentError, "is reserved"),
        ("p", "my_udf(amount) > 0", UnsupportedExpressionError, "SparkTable.add_constraint"),
    ],
)
def test_bad_constraints_are_refused_and_nothing_is_written(
    tmp_path: Path, name: str, expression: str, error: type[Exception], message: str
) -> None:
    t = _table(tmp_path)
    with pytest.raises(error, match=message):
        t.add_constraint(name, expression)
    assert t.latest_version() == 1


def test_a_name_that_exists_is_refused_whatever_its_case(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.add_constraint("positive", "amount > 0")
    with pytest.raises(InvalidArgumentError, match="constraint 'Positive' already exists"):
        t.add_constraint("Positive", "amount > 1")
    assert t.latest_version() == 2


def test_a_constraint_the_engine_cannot_evaluate_refuses_engine_writes_never_skips(tmp_path: Path) -> None:
    """A constraint another engine added (here: set by hand) that the Arrow evaluator cannot compute."""
    t = _table(tmp_path, properties={"delta.constraints.odd": "my_udf(id)"})
    before = _data_files(tmp_path)
    refused = r"CHECK constraint odd \(my_udf\(id\)\) cannot be checked by the engine"
    with pytest.raises(UnsupportedExpressionError, match=refused):
        t.write(_rows([3], [1.0]))
    assert _data_files(tmp_path) == before


def test_a_column_invariant_is_enforced(tmp_path: Path) -> None:
    field = pa.field(
        "amount",
        pa.float64(),
        metadata={"delta.invariants": '{"expression": {"expression": "amount < 100"}}'},
    )
    schema = pa.schema([pa.field("id", pa.int64()), field])
    t = Table.create(str(tmp_path / "t"), schema=schema)
    assert t.write(pa.table({"id": [1], "amount": [99.0]}, schema=schema)) == 1
    with pytest.raises(ConstraintViolationError, match=r"invariant on column amount \(amount < 100\)"):
        t.write(pa.table({"id": [2], "amount": [100.0]}, schema=schema))


def test_a_raw_transaction_adding_unchecked_files_to_a_constrained_table_is_refused(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.add_constraint("positive", "amount > 0")
    adds = _files_for(t, _rows([9], [-9.0]))
    txn = t.transaction("WRITE")
    for a in adds:
        txn.add(a)
    with pytest.raises(InvalidArgumentError, match="adds data files the engine did not check"):
        txn.commit()
    assert t.latest_version() == 2


def test_a_raw_transaction_may_vouch_for_its_rows(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.add_constraint("positive", "amount > 0")
    adds = _files_for(t, _rows([9], [9.0]))
    txn = t.transaction("WRITE")
    for a in adds:
        txn.add(a)
    txn.rows_checked()
    assert txn.commit() == 3


def test_a_concurrent_append_while_existing_rows_are_checked_fails_the_add(tmp_path: Path) -> None:
    """Rows appended after the check read its version were never checked: the add must not commit."""
    t = _table(tmp_path)
    other = Table.open(str(tmp_path / "t"))

    def check_then_someone_appends(snap: object, rule: object) -> tuple[int, None]:
        other.write(_rows([3], [-7.0]))
        return 0, None

    with pytest.raises(ConcurrentAppendError):
        t.add_constraint("positive", "amount > 0", check=check_then_someone_appends)
    assert Table.open(str(tmp_path / "t")).constraints() == {}


def test_a_constraint_added_concurrently_fails_a_write_checked_without_it(tmp_path: Path) -> None:
    t = _table(tmp_path)
    txn = t.transaction("WRITE")  # reads version 1, without the constraint
    Table.open(str(tmp_path / "t")).add_constraint("positive", "amount > 0")
    for a in _files_for(t, _rows([3], [-1.0])):
        txn.add(a)
    txn.rows_checked()
    with pytest.raises(MetadataChangedError):
        txn.commit()


def test_a_constraint_is_not_a_property_to_set_but_may_come_with_a_new_table(tmp_path: Path) -> None:
    t = _table(tmp_path)
    with pytest.raises(InvalidArgumentError, match="is added with add_constraint"):
        t.set_properties({"delta.constraints.positive": "amount > 0"})
    assert t.latest_version() == 1
    created = Table.create(
        str(tmp_path / "new"), schema=SCHEMA, properties={"delta.constraints.p": "amount > 0"}
    )
    protocol = created.snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 3)
    with pytest.raises(ConstraintViolationError):
        created.write(_rows([1], [0.0]))
    with pytest.raises(PredicateError, match="names column 'nope'"):
        Table.create(str(tmp_path / "bad"), schema=SCHEMA, properties={"delta.constraints.p": "nope > 0"})
    assert not (tmp_path / "bad").exists()


def test_the_cli_adds_and_drops_constraints(tmp_path: Path) -> None:
    t = _table(tmp_path)
    uri = str(tmp_path / "t")
    assert run_json("add-constraint", uri, "positive", "amount > 0") == {"version": 2}
    refused = run("add-constraint", uri, "small", "amount < 15")
    assert refused.exit_code == 1
    assert "cannot add CHECK constraint small (amount < 15): 1 existing row break" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert run("add-constraint", uri, "bad", "amount >").exit_code == 1
    assert t.constraints() == {"positive": "amount > 0"}
    assert run_json("drop-constraint", uri, "positive") == {"version": 3}
    assert run_json("drop-constraint", uri, "positive", "--if-exists") == {"version": None}
    missing = run("drop-constraint", uri, "positive")
    assert missing.exit_code == 1 and "no constraint 'positive'" in missing.stderr
    assert t.latest_version() == 3


# ------------------------------------------------------------------ review findings (issue 26)
def test_a_constraint_naming_no_column_still_checks_every_row(tmp_path: Path) -> None:
    t = _table(tmp_path)
    with pytest.raises(ConstraintViolationError, match="2 existing rows break it"):
        t.add_constraint("never", "1 = 2")
    with pytest.raises(PredicateError, match="not a boolean expression"):
        t.add_constraint("null", "NULL")
    with pytest.raises(PredicateError, match="without ';'"):
        t.add_constraint("semi", "amount > 0;")
    assert t.latest_version() == 1


def test_a_rule_added_by_a_raw_metadata_change_is_refused(tmp_path: Path) -> None:
    """Only add_constraint (which checks the rows already there) may add a rule to a table with rows."""
    t = _table(tmp_path)
    t.add_constraint("positive", "amount > 0")  # the protocol now names checkConstraints
    txn = t.transaction("SET TBLPROPERTIES")
    meta = txn.snapshot.metadata
    txn.update_metadata(
        dataclasses.replace(
            meta, configuration={**meta.configuration, "delta.constraints.big": "amount > 100"}
        )
    )
    with pytest.raises(
        InvalidArgumentError,
        match=r"adds the row rule CHECK constraint big \(amount > 100\) without checking",
    ):
        txn.commit()
    assert t.constraints() == {"positive": "amount > 0"}


def test_files_added_as_a_rearrangement_are_checked_too(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.add_constraint("positive", "amount > 0")
    adds = _files_for(t, _rows([9], [-9.0]))
    txn = t.transaction("OPTIMIZE")
    for a in adds:
        txn.add(dataclasses.replace(a, data_change=False))
    with pytest.raises(InvalidArgumentError, match="did not check"):
        txn.commit()


def test_columns_a_rule_uses_cannot_be_renamed_or_dropped(tmp_path: Path) -> None:
    t = _table(tmp_path, properties={"delta.columnMapping.mode": "name"})
    t.write(_rows([1], [1.0]))
    t.add_constraint("positive", "amount > 0")
    with pytest.raises(InvalidArgumentError, match="uses column 'amount'"):
        t.rename_column("amount", "value")
    with pytest.raises(InvalidArgumentError, match="uses column 'amount'"):
        t.drop_columns(["amount"])
    t.drop_columns(["name"])  # a column no rule uses
