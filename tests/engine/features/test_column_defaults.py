"""allowColumnDefaults (PROTOCOL.md "Default Columns") in the engine: defaults declared at create or
with `set_column_default`, filled by `Table.write` where the data lacks the column (an explicit NULL
kept), read back by delta-rs; a default the engine cannot evaluate, or whose value does not fit, is
refused when declared and nothing is written; the key means nothing without the feature."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import InvalidArgumentError, PredicateError, Table

KEY = "CURRENT_DEFAULT"


def _schema(default: str | None = "42", *, nullable: bool = True) -> pa.Schema:
    meta = {KEY: json.dumps(default)} if default is not None else None
    n = pa.field("n", pa.int64(), nullable=nullable, metadata=meta)
    return pa.schema([pa.field("id", pa.int64()), n])


def _rows(root: Path) -> list[tuple[int, int | None]]:
    t = Table.open(str(root)).snapshot().to_arrow()
    return sorted(zip(t.column("id").to_pylist(), t.column("n").to_pylist(), strict=True))


def _theirs(root: Path) -> list[tuple[int, int | None]]:
    t = DeltaTable(str(root)).to_pyarrow_table()
    return sorted(zip(t.column("id").to_pylist(), t.column("n").to_pylist(), strict=True))


def test_a_default_declared_at_create_fills_a_missing_column_not_a_null(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=_schema("40 + 2", nullable=False))
    assert "allowColumnDefaults" in (t.snapshot().protocol.writer_features or ())
    t.write(pa.table({"id": [1, 2]}))
    t.write(pa.table({"id": [3], "n": [7]}))
    assert _rows(root) == [(1, 42), (2, 42), (3, 7)] == _theirs(root)
    nullable = Table.create(str(tmp_path / "u"), schema=_schema("42"))
    nullable.write(pa.table({"id": [1], "n": pa.array([None], pa.int64())}))  # (an explicit NULL stays)
    assert _rows(tmp_path / "u") == [(1, None)]


def test_set_and_drop_a_default_on_an_existing_table(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=_schema(None))
    t.write(pa.table({"id": [1]}))
    v = t.set_column_default("N", "-5")  # (the column's own name is found case-insensitively)
    assert "allowColumnDefaults" in (t.snapshot().protocol.writer_features or ())
    assert t.history(limit=1)[0]["operation"] == "CHANGE COLUMN" and v == 2
    t.write(pa.table({"id": [2]}))
    assert t.set_column_default("n", None) == 4
    assert t.set_column_default("n", None) is None  # (nothing to drop: no commit)
    t.write(pa.table({"id": [3]}))
    assert _rows(root) == [(1, None), (2, -5), (3, None)] == _theirs(root)
    assert t.latest_version() == 5


@pytest.mark.parametrize(
    ("column", "expression", "match"),
    [
        ("n", "id + 1", "names a column"),
        ("n", "current_date()", "not deterministic"),
        ("n", "'abc'", "does not fit"),
        ("n", "1.5", "does not fit"),
        ("n", "", "must be a SQL expression"),
        ("nope", "1", "no top-level column"),
        ("n", "1 +", "default"),
    ],
)
def test_a_default_that_cannot_be_one_is_refused_and_nothing_is_written(
    tmp_path: Path, column: str, expression: str, match: str
) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=_schema(None))
    with pytest.raises((InvalidArgumentError, PredicateError), match=match):
        t.set_column_default(column, expression)
    assert t.latest_version() == 0
    bad = _schema(expression or " ") if column == "n" else _bad_nested()
    with pytest.raises((InvalidArgumentError, PredicateError), match=match if column == "n" else "nested"):
        Table.create(str(tmp_path / "c"), schema=bad)
    assert not (tmp_path / "c").exists()


def _bad_nested() -> pa.Schema:
    inner = pa.struct([pa.field("x", pa.int64(), metadata={KEY: json.dumps("1")})])
    return pa.schema([pa.field("id", pa.int64()), pa.field("s", inner)])


def test_not_null_columns_refuse_a_null_default_and_variants_any_other(tmp_path: Path) -> None:
    root = tmp_path / "t"
    with pytest.raises(InvalidArgumentError, match="NULL for a NOT NULL column"):
        Table.create(str(root), schema=_schema("NULL", nullable=False))
    assert not root.exists()


def test_a_databricks_style_table_is_filled_and_the_key_alone_means_nothing(tmp_path: Path) -> None:
    """Delta's form built by hand: protocol (1, 7) listing allowColumnDefaults and the key in the
    field metadata: our writes fill it. The same key on a table without the feature is ignored."""
    root = tmp_path / "t"
    Table.create(str(root), schema=_schema(None)).write(pa.table({"id": [1]}))
    snap = Table.open(str(root)).snapshot()
    tree = json.loads(snap.metadata.schema_string)
    tree["fields"][1]["metadata"] = {KEY: "9"}
    meta = snap.metadata.to_wire()["metaData"] | {"schemaString": json.dumps(tree)}
    ignored = [{"commitInfo": {"operation": "CHANGE COLUMN"}}, {"metaData": meta}]
    (root / "_delta_log" / f"{2:020d}.json").write_text("\n".join(json.dumps(a) for a in ignored) + "\n")
    Table.open(str(root)).write(pa.table({"id": [2]}))  # version 3: the key alone means nothing
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["allowColumnDefaults"]}
    honored = [{"commitInfo": {"operation": "SET TBLPROPERTIES"}}, {"protocol": protocol}]
    (root / "_delta_log" / f"{4:020d}.json").write_text("\n".join(json.dumps(a) for a in honored) + "\n")
    Table.open(str(root)).write(pa.table({"id": [3]}))
    assert _rows(root) == [(1, None), (2, None), (3, 9)] == _theirs(root)


def test_a_column_mapped_table_keeps_its_physical_names(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), schema=_schema(None), properties={"delta.columnMapping.mode": "name"})
    t.set_column_default("n", "3")
    field = json.loads(t.snapshot().metadata.schema_string)["fields"][1]
    assert field["metadata"][KEY] == "3" and "delta.columnMapping.physicalName" in field["metadata"]
    t.write(pa.table({"id": [1]}))
    assert _rows(root) == [(1, 3)]
