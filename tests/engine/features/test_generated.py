"""Generated columns through the engine (issue 26, item 3): created as Delta stores them, filled
when the data leaves them out, checked when it does not, gated by the protocol as in Delta."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import DeltaError

from airflow_txnlog.engine import (
    ConstraintViolationError,
    InvalidArgumentError,
    PredicateError,
    SchemaMismatchError,
    Table,
    UnsupportedExpressionError,
)
from airflow_txnlog.engine.spi import rewrite_columns

UTC = dt.UTC
SCHEMA = pa.schema(
    [("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("d", pa.date32()), ("y", pa.int32())]
)
GENERATED = {"d": "CAST(ts AS DATE)", "y": "YEAR(ts)"}
GOLDEN = Path(__file__).parents[2] / "compat" / "golden" / "delta-spark-features"


def _ts(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=UTC)


def _create(tmp_path: Path, **kwargs: object) -> Table:
    return Table.create(
        str(tmp_path / "t"), schema=SCHEMA, partition_by=["d"], generated_columns=GENERATED, **kwargs
    )  # type: ignore[arg-type]


def _events(ids: list[int], stamps: list[dt.datetime]) -> pa.Table:
    return pa.table({"id": ids, "ts": stamps}, schema=pa.schema([SCHEMA.field("id"), SCHEMA.field("ts")]))


def test_create_stores_the_expressions_and_the_legacy_protocol_delta_sets(tmp_path: Path) -> None:
    _create(tmp_path)
    lines = (tmp_path / "t" / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    actions = {k: v for a in map(json.loads, lines) for k, v in a.items()}
    assert actions["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 4}
    fields = {f["name"]: f for f in json.loads(actions["metaData"]["schemaString"])["fields"]}
    assert fields["d"]["metadata"] == {"delta.generationExpression": "CAST(ts AS DATE)"}
    assert fields["y"]["metadata"] == {"delta.generationExpression": "YEAR(ts)"}


def test_missing_generated_columns_are_filled_and_partition_the_files(tmp_path: Path) -> None:
    t = _create(tmp_path)
    t.write(_events([1, 2, 3], [_ts(2024, 1, 1, 23, 59), _ts(2024, 1, 2, 0, 0), _ts(2023, 12, 31, 12)]))
    rows = sorted(t.snapshot().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["d"], r["y"]) for r in rows] == [
        (dt.date(2024, 1, 1), 2024),
        (dt.date(2024, 1, 2), 2024),
        (dt.date(2023, 12, 31), 2023),
    ]
    assert sorted({f.partition_values["d"] for f in t.snapshot().files()}) == [
        "2023-12-31",
        "2024-01-01",
        "2024-01-02",
    ]
    back = DeltaTable(str(tmp_path / "t")).to_pyarrow_table().sort_by("id")
    assert back.column("d").to_pylist() == [r["d"] for r in rows]  # delta-rs reads what we filled


def test_a_supplied_value_must_equal_the_expression(tmp_path: Path) -> None:
    t = _create(tmp_path)
    ok = _events([1], [_ts(2024, 5, 6, 7)]).append_column("d", pa.array([dt.date(2024, 5, 6)]))
    assert t.write(ok) == 1
    bad = _events([2], [_ts(2024, 5, 6, 7)]).append_column("d", pa.array([dt.date(2024, 5, 7)]))
    with pytest.raises(
        ConstraintViolationError, match=r"generated column d = CAST\(ts AS DATE\) is violated"
    ):
        t.write(bad)
    null = _events([3], [_ts(2024, 5, 6, 7)]).append_column("d", pa.array([None], pa.date32()))
    with pytest.raises(ConstraintViolationError):
        t.write(null)  # (d <=> expression) is FALSE for a NULL value next to a non-NULL result
    assert t.latest_version() == 1


def test_a_null_source_gives_a_null_column(tmp_path: Path) -> None:
    t = _create(tmp_path)
    t.write(_events([1], [None]))  # type: ignore[list-item]
    [row] = t.snapshot().to_arrow().to_pylist()
    assert (row["d"], row["y"]) == (None, None)


@pytest.mark.parametrize(
    ("generated", "error", "message"),
    [
        ({"d": "CAST(nope AS DATE)"}, PredicateError, "names column 'nope', which the table lacks"),
        ({"d": "CAST(ts AS"}, PredicateError, "does not parse"),
        ({"d": "CAST(y AS DATE)", "y": "YEAR(ts)"}, PredicateError, "names generated column 'y'"),
        ({"d": "d"}, PredicateError, "names generated column 'd'"),
        ({"d": "YEAR(ts)"}, SchemaMismatchError, "gives int32, the column is date32"),
        ({"missing": "1"}, InvalidArgumentError, "column 'missing' is not in the schema"),
        ({"d": "max(ts)"}, PredicateError, "must be a row expression"),
    ],
)
def test_bad_generation_expressions_create_nothing(
    tmp_path: Path, generated: dict[str, str], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Table.create(str(tmp_path / "t"), schema=SCHEMA, generated_columns=generated)
    assert not (tmp_path / "t").exists()


def test_delta_rs_fills_our_generated_columns_the_same_way(tmp_path: Path) -> None:
    """(delta-rs's SQL engine, DataFusion, has no YEAR(): that expression stays ours alone.)"""
    schema = pa.schema([SCHEMA.field("id"), SCHEMA.field("ts"), SCHEMA.field("d")])
    t = Table.create(str(tmp_path / "t"), schema=schema, generated_columns={"d": "CAST(ts AS DATE)"})
    stamps = [_ts(2024, 2, 29, 23, 30), _ts(2024, 3, 1, 0, 0)]
    t.write(_events([1, 2], stamps))
    write_deltalake(str(tmp_path / "t"), _events([3, 4], stamps), mode="append")
    rows = sorted(Table.open(str(tmp_path / "t")).snapshot().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["d"] for r in rows] == [dt.date(2024, 2, 29), dt.date(2024, 3, 1)] * 2
    wrong = _events([5], [stamps[0]]).append_column("d", pa.array([dt.date(2000, 1, 1)]))
    with pytest.raises(DeltaError, match="failed validation check"):  # delta-rs enforces ours too
        write_deltalake(str(tmp_path / "t"), wrong, mode="append")


def test_the_databricks_8_1_table_is_written_with_its_rule_held(tmp_path: Path) -> None:
    """c2 = c1 + 1, written by Databricks Runtime 8.1 (writer version 4)."""
    path = tmp_path / "g"
    shutil.copytree(GOLDEN / "dbr_8_1_generated_columns", path)
    t = Table.open(str(path))
    schema = pa.schema([("c1", pa.int32())])
    assert t.write(pa.table({"c1": [1, 41]}, schema=schema)) == 1
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["c1"]) == [
        {"c1": 1, "c2": 2},
        {"c1": 41, "c2": 42},
    ]
    wrong = pa.table({"c1": [5], "c2": [5]}, schema=pa.schema([("c1", pa.int32()), ("c2", pa.int32())]))
    with pytest.raises(ConstraintViolationError, match=r"generated column c2 = c1 \+ 1"):
        t.write(wrong)


def test_the_databricks_8_0_twin_treats_the_metadata_as_a_plain_column(tmp_path: Path) -> None:
    """Writer version 2 lacks generatedColumns: Delta ignores the expression, so do we."""
    path = tmp_path / "g"
    shutil.copytree(GOLDEN / "dbr_8_0_non_generated_columns", path)
    t = Table.open(str(path))
    schema = pa.schema([("c1", pa.int32()), ("c2", pa.int32())])
    assert t.write(pa.table({"c1": [5], "c2": [99]}, schema=schema)) == 1
    assert t.write(pa.table({"c1": [6]}, schema=pa.schema([("c1", pa.int32())]))) == 2
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["c1"]) == [
        {"c1": 5, "c2": 99},
        {"c1": 6, "c2": None},
    ]


def test_rewriting_a_generation_expression_for_update_and_merge() -> None:
    """What spark.generated hands Spark: each column replaced by its new value, a nested field read
    from the new struct, string literals untouched."""
    assert rewrite_columns("CAST(ts AS DATE)", {"ts": "`t`.`ts`"}) == "CAST((`t`.`ts`) AS DATE)"
    assert rewrite_columns("s.a + 1", {"s": "named_struct('a', x * 2)"}) == "(STRUCT(x * 2 AS a)).a + 1"
    assert rewrite_columns("concat(name, 'name')", {"name": "upper(n)"}) == "CONCAT((UPPER(n)), 'name')"


def test_an_expression_the_engine_cannot_compute_is_refused_at_create(tmp_path: Path) -> None:
    """Issue 39: refused when declared, naming the function, never accepted and then refused on
    every write; a table made for Spark's writes (SparkTable.create passes spark_expressions) keeps it."""
    schema = pa.schema([("s", pa.string()), ("g", pa.string())])
    with pytest.raises(UnsupportedExpressionError, match=r"generated column .g.*PAD.*SparkTable.create"):
        Table.create(str(tmp_path / "t"), schema=schema, generated_columns={"g": "lpad(s, 5, 'x')"})
    assert not (tmp_path / "t").exists()
    t = Table.create(
        str(tmp_path / "s"), schema=schema, generated_columns={"g": "lpad(s, 5, 'x')"}, spark_expressions=True
    )
    assert t.snapshot().schema.field("g").metadata[b"delta.generationExpression"] == b"\"lpad(s, 5, 'x')\""
