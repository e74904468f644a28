"""CHECK constraints on every Spark write path (issue 26, item 2).

Each path gets a row that breaks the table's constraint and must fail with the engine's
ConstraintViolationError (one class whichever path found the row), naming the constraint, its
expression and the row, with no commit and no data file left behind. Rows that keep the rules land.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from airflow_txnlog.engine import ConstraintViolationError, PredicateError, Table, UnsupportedExpressionError
from airflow_txnlog.engine.spi import char_varchar_rewrites, conform_rows
from airflow_txnlog.spark import SparkTable, txnlog_errors
from airflow_txnlog.spark.schemas import to_spark_schema

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("part", pa.string())])


def _files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def _table(spark: Any, path: Path) -> SparkTable:
    st = SparkTable.create(spark, str(path), SCHEMA, partition_by=["part"])
    st.write(
        spark.createDataFrame(
            [(1, 1.0, "a"), (2, 2.0, "b"), (3, 3.0, "a")], "id long, value double, part string"
        )
    )
    assert st.add_constraint("non_negative", "value >= 0") == 2
    return st


def _df(spark: Any, rows: list[tuple[int, float | None, str]]) -> Any:
    # One partition, so one task: when a task fails, Spark may drop the commit message of another task
    # that finished in the meantime, and that task's file stays behind as an unreferenced orphan (for
    # vacuum). The checks of "no file left" below are about the failing task's own files.
    return spark.createDataFrame(rows, "id long, value double, part string").coalesce(1)


def _refused(path: Path, st: SparkTable, run: Callable[[], object], row_id: int) -> ConstraintViolationError:
    before_files, before_version = _files(path), st.version()
    with pytest.raises(ConstraintViolationError) as err:
        run()
    e = err.value
    assert "CHECK constraint non_negative (value >= 0) is violated by a row" in str(e)
    assert e.constraint == "non_negative" and e.expression == "value >= 0"
    assert e.row is not None and e.row.get("id") == row_id, e.row
    assert st.version() == before_version
    assert _files(path) == before_files, "a refused write left a data file behind"
    assert not (path / "_txnlog_staging").exists()
    return e


def test_add_constraint_checks_existing_rows_with_spark(spark, tmp_path: Path) -> None:
    st = _table(spark, tmp_path / "t")
    st.write(_df(spark, [(4, 4.0, "b")]))
    with pytest.raises(ConstraintViolationError) as err:
        st.add_constraint("small", "value < 3")
    assert err.value.count == 2 and err.value.row is not None and err.value.row["value"] in (3.0, 4.0)
    assert "2 existing rows break it" in str(err.value)
    # an expression the engine's Arrow evaluator cannot compute is fine for Spark
    assert st.add_constraint("short", "levenshtein(part, 'a') < 2") == 4
    assert Table.open(str(tmp_path / "t")).constraints() == {
        "non_negative": "value >= 0",
        "short": "levenshtein(part, 'a') < 2",
    }


def test_append_overwrite_and_schema_evolution_are_checked(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    st = _table(spark, path)
    _refused(path, st, lambda: st.write(_df(spark, [(5, 1.0, "a"), (6, -1.0, "b")])), 6)
    _refused(path, st, lambda: st.write(_df(spark, [(7, None, "a")]), mode="overwrite"), 7)  # NULL breaks it
    evolved = _df(spark, [(8, -8.0, "a")]).withColumn("extra", F.lit("x"))
    _refused(path, st, lambda: st.write(evolved, merge_schema=True), 8)
    assert "extra" not in Table.open(str(path)).snapshot().schema.names
    assert st.write(_df(spark, [(9, 9.0, "c")])).version == 3


def test_replace_where_is_checked(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    st = _table(spark, path)
    _refused(
        path,
        st,
        lambda: st.write(_df(spark, [(10, -1.0, "a")]), mode="overwrite", replace_where="part = 'a'"),
        10,
    )


def test_update_and_merge_are_checked(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    st = _table(spark, path)
    _refused(path, st, lambda: st.update("id = 2", {"value": "-value"}), 2)
    source = _df(spark, [(1, -5.0, "a"), (40, 4.0, "c")])
    merge = (
        st.merge(source, "t.id = s.id")
        .when_matched_update(set={"value": "s.value"})
        .when_not_matched_insert_all()
    )
    _refused(path, st, merge.execute, 1)
    inserted = _df(spark, [(41, -4.0, "c")])
    merge_insert = st.merge(inserted, "t.id = s.id").when_not_matched_insert_all()
    _refused(path, st, merge_insert.execute, 41)
    assert st.update("id = 2", {"value": "value * 10"}).version == 3


def test_the_data_source_checks_on_the_executors(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    st = _table(spark, path)

    def save() -> None:
        with txnlog_errors():
            _df(spark, [(20, 1.0, "a"), (21, -21.0, "a")]).write.format("txnlog").mode("append").save(
                str(path)
            )

    before = _files(path)
    with pytest.raises(ConstraintViolationError, match=r"non_negative \(value >= 0\) is violated by 1 row"):
        save()
    assert st.version() == 2 and _files(path) == before


def test_a_stream_is_checked(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    st = _table(spark, path)
    src = tmp_path / "src"
    SparkTable.create(spark, str(src), SCHEMA).write(_df(spark, [(30, 3.0, "a"), (31, -31.0, "b")]))
    before = _files(path)
    query = (
        spark.readStream.format("txnlog").load(str(src)).writeStream.format("txnlog")
        .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(str(path))
    )  # fmt: skip
    with (
        pytest.raises(ConstraintViolationError, match=r"non_negative .* one of them: id=31"),
        txnlog_errors(),
    ):
        query.awaitTermination()
    assert st.version() == 2 and _files(path) == before


def test_a_rule_only_spark_can_evaluate_refuses_the_data_source_before_any_job(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    st = _table(spark, path)
    st.add_constraint("near_a", "levenshtein(part, 'a') < 2")
    with pytest.raises(UnsupportedExpressionError, match=r"SparkTable\.write"), txnlog_errors():
        _df(spark, [(50, 5.0, "a")]).write.format("txnlog").mode("append").save(str(path))
    _refused_near = st.write(_df(spark, [(51, 5.0, "a")]))  # SparkTable evaluates it with Spark SQL
    assert _refused_near.version == 4
    with pytest.raises(ConstraintViolationError, match="near_a"):
        st.write(_df(spark, [(52, 5.0, "zzz")]))


def test_bad_constraints_are_refused_by_spark_too(spark, tmp_path: Path) -> None:
    st = _table(spark, tmp_path / "t")
    with pytest.raises(PredicateError):
        st.add_constraint("p", "missing > 0")
    with pytest.raises(PredicateError, match="does not resolve as a boolean"):
        st.add_constraint("p", "value + 1")
    assert st.version() == 2


def _typed(name: str, t: pa.DataType, declared: str) -> pa.Field:
    return pa.field(name, t, metadata={b"__CHAR_VARCHAR_TYPE_STRING": json.dumps(declared).encode()})


CHAR_VARCHAR = pa.schema(
    [
        pa.field("id", pa.int64()),
        _typed("v", pa.string(), "varchar(3)"),
        _typed("c", pa.string(), "char(4)"),
        _typed("tags", pa.list_(pa.string()), "array<char(2)>"),
        _typed("s", pa.struct([("a b", pa.string()), ("n", pa.int32())]), "struct<`a b`:varchar(2),n:int>"),
        _typed("kv", pa.map_(pa.string(), pa.string()), "map<varchar(2),char(3)>"),
    ]
)


def test_spark_keeps_char_and_varchar_values_as_the_engine_does(spark) -> None:
    """The rewrites Spark applies before the rules give, value for value, what the engine's writer
    keeps (trailing spaces past n trimmed, CHAR padded, NULL kept at every depth)."""
    rows = pa.table(
        {
            "id": [1, 2, 3, 4],
            "v": ["ab", "abc   ", "é🙂x ", None],
            "c": ["x", "abcd  ", "", None],
            "tags": [["a", None, "ab  "], [], None, ["  "]],
            "s": [{"a b": "x", "n": 1}, {"a b": "ab  ", "n": 2}, None, {"a b": None, "n": 3}],
            "kv": [[("k", "v  ")], [("ab ", "w")], None, [("z", None)]],
        },
        schema=CHAR_VARCHAR,
    )
    expected = conform_rows(rows, CHAR_VARCHAR, {}).to_pylist()
    given = [{**r, "kv": None if r["kv"] is None else dict(r["kv"])} for r in rows.to_pylist()]
    df = spark.createDataFrame(given, to_spark_schema(CHAR_VARCHAR))
    kept = df.withColumns({c: F.expr(sql) for c, sql in char_varchar_rewrites(CHAR_VARCHAR).items()})
    got = [r.asDict(recursive=True) for r in kept.orderBy("id").collect()]
    for row in got:
        row["kv"] = None if row["kv"] is None else sorted(row["kv"].items())
    for row in expected:
        row["kv"] = None if row["kv"] is None else sorted(row["kv"])
    assert got == expected
    assert expected[0]["c"] == "x   " and expected[1]["v"] == "abc"


def test_a_check_on_a_char_column_sees_the_padded_value(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    st = SparkTable.create(spark, str(path), CHAR_VARCHAR)
    st.add_constraint("padded", "c IS NULL OR length(c) = 4")
    st.write(spark.createDataFrame([(1, "a", "x")], "id long, v string, c string"))  # 'x' is 'x   '
    assert Table.open(str(path)).snapshot().to_arrow().column("c").to_pylist() == ["x   "]
    before = (_files(path), st.version())
    with pytest.raises(
        ConstraintViolationError, match=r"column v is VARCHAR\(3\).*EXCEED_LIMIT_LENGTH"
    ) as caught:
        st.write(spark.createDataFrame([(2, "long", "y")], "id long, v string, c string").coalesce(1))
    # (raised on an executor by the data source: its fields come back with it, spark.errors.carry)
    assert caught.value.constraint == "__CHAR_VARCHAR_STRING_LENGTH_CHECK__"
    assert (_files(path), st.version()) == before
