"""SparkTable.create / write / to_df: files, partition values, schema rules, idempotency, failures."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import functions as F

from airflow_txnlog.engine import InvalidArgumentError, SchemaMismatchError, Table, TableExistsError
from airflow_txnlog.spark import ConstraintViolationError, SparkJobError, SparkTable
from tests.spark.conftest import SCHEMA, make_rows
from tests.spark.helpers import assert_same_as_deltalake, deltalake_rows, engine_rows, spark_rows

pytestmark = [pytest.mark.spark]


def _staging_is_empty(path: Path) -> bool:
    staging = path / "_txnlog_staging"
    return not staging.exists() or not any(staging.iterdir())


def test_create_from_dataframe_and_write_special_partition_values(spark, tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    values = ["a%b c+d", "x/y=z", None, "é:?*"]
    rows = pa.table({"id": list(range(8)), "p": [values[i % 4] for i in range(8)]}, schema=schema)
    df = spark.createDataFrame(rows)
    st = SparkTable.create(spark, str(tmp_path / "t"), df, partition_by=["p"])
    result = st.write(df)
    assert (result.version, result.num_rows) == (1, 8)
    assert result.num_files == len(Table.open(str(tmp_path / "t")).snapshot().files())
    snap = Table.open(str(tmp_path / "t")).snapshot()
    assert {f.partition_values["p"] for f in snap.files()} == set(values)
    want = sorted(rows.to_pylist(), key=lambda r: r["id"])
    assert sorted(snap.to_arrow().to_pylist(), key=lambda r: r["id"]) == want
    got = DeltaTable(str(tmp_path / "t")).to_pyarrow_table().select(["id", "p"]).to_pylist()
    assert sorted(got, key=lambda r: r["id"]) == want
    assert sorted(st.to_df().collect(), key=lambda r: r["id"]) == [tuple(r.values()) for r in want]
    assert not (tmp_path / "t" / "_txnlog_staging").exists()  # no empty folder left behind (issue 30)
    with pytest.raises(TableExistsError):
        SparkTable.create(spark, str(tmp_path / "t"), df)


def test_to_df_equals_the_engine(spark, templates) -> None:
    for path in templates.values():
        st = SparkTable(spark, str(path))
        assert spark_rows(st.to_df()) == engine_rows(path)
        assert st.to_df().columns == SCHEMA.names


def test_overwrite_and_replace_where(spark, pair) -> None:
    ours, theirs = pair(True)
    st = SparkTable(spark, str(ours))
    new_b = make_rows(range(5000, 5050), part="b")
    r = st.write(spark.createDataFrame(new_b), mode="overwrite", replace_where="part = 'b'")
    write_deltalake(str(theirs), new_b, mode="overwrite", predicate="part = 'b'")
    assert r.metrics["numRemovedFiles"] == 6 and r.metrics["numFiles"] >= 1
    assert_same_as_deltalake(ours, theirs)
    # A data predicate: only files holding rows with id < 100 are rewritten without them.
    low = make_rows(range(6000, 6010), part="a").set_column(0, "id", pa.array(range(10), pa.int64()))
    r = st.write(spark.createDataFrame(low), mode="overwrite", replace_where="id < 10")
    write_deltalake(str(theirs), low, mode="overwrite", predicate="id < 10")
    assert r.metrics["numDeletedRows"] == 7 and r.metrics["numRemovedFiles"] == 3  # part b was replaced
    assert_same_as_deltalake(ours, theirs)
    everything = make_rows(range(100, 120))
    st.write(spark.createDataFrame(everything), mode="overwrite")
    write_deltalake(str(theirs), everything, mode="overwrite")
    assert_same_as_deltalake(ours, theirs)


def test_replace_where_rejects_rows_outside_the_predicate(spark, copy_table) -> None:
    path = copy_table(True, "t")
    st = SparkTable(spark, str(path))
    before = st.version()
    rows = spark.createDataFrame(make_rows(range(10)))  # parts a..d, not only 'a'
    with pytest.raises(ConstraintViolationError, match="replace_where"):
        st.write(rows, mode="overwrite", replace_where="part = 'a'")
    assert st.version() == before and _staging_is_empty(path)
    with pytest.raises(InvalidArgumentError):
        st.write(rows, replace_where="part = 'a'")  # needs overwrite


def test_schema_enforcement_and_evolution(spark, copy_table) -> None:
    path = copy_table(False, "t")
    st = SparkTable(spark, str(path))
    df = spark.createDataFrame(make_rows(range(3000, 3010)))
    with pytest.raises(SchemaMismatchError, match="merge_schema"):
        st.write(df.withColumn("extra", F.lit(1)))
    with pytest.raises(SchemaMismatchError, match="has type int"):
        st.write(df.withColumn("id", F.col("id").cast("int")))
    with pytest.raises(InvalidArgumentError, match="partition"):
        st.write(df, partition_by=["part"])
    # Missing nullable columns are NULL; column names match case-insensitively.
    st.write(df.select(F.col("id").alias("ID"), "part"))
    assert [r["value"] for r in engine_rows(path) if r["id"] >= 3000] == [None] * 10
    r = st.write(df.withColumn("extra", F.lit("x")), merge_schema=True)
    snap = Table.open(str(path)).snapshot()
    assert snap.schema.names[-1] == "extra" and snap.version == r.version
    got = Table.open(str(path)).snapshot().to_arrow(columns=["id", "extra"]).to_pylist()
    assert sum(1 for g in got if g["extra"] == "x") == 10
    assert sum(1 for g in got if g["extra"] is None) == 2410
    assert len(deltalake_rows(path)) == 2420


def test_not_null_columns_are_checked_in_the_job(spark, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    st = SparkTable.create(spark, str(tmp_path / "t"), schema)
    with pytest.raises(ConstraintViolationError, match="NOT NULL"):
        st.write(spark.createDataFrame([(1, "a"), (None, "b")], "id long, v string"))
    assert st.version() == 0 and _staging_is_empty(tmp_path / "t")


def test_idempotent_writes(spark, copy_table) -> None:
    path = copy_table(False, "t")
    st = SparkTable(spark, str(path))
    df = spark.createDataFrame(make_rows(range(3000, 3010)))
    first = st.write(df, txn=("dag.task", 7))
    again = st.write(df, txn=("dag.task", 7))
    older = st.write(df, txn=("dag.task", 3))
    assert not first.skipped and again.skipped and older.skipped
    assert again.version == older.version == first.version == st.version()
    assert len(engine_rows(path)) == 2410
    assert st.write(df, txn=("dag.task", 8)).version == first.version + 1
    with pytest.raises(InvalidArgumentError):
        st.write(df, txn=("", 1))


def test_a_failing_spark_job_leaves_the_table_unchanged(spark, copy_table) -> None:
    path = copy_table(True, "t")
    st = SparkTable(spark, str(path))
    before, rows = st.version(), engine_rows(path)
    bad = spark.createDataFrame(make_rows(range(3000, 4000))).withColumn(
        "value", F.when(F.col("id") == 3900, F.raise_error(F.lit("boom"))).otherwise(F.col("value"))
    )
    with pytest.raises(SparkJobError, match="table is unchanged"):
        st.write(bad.repartition(4))
    with pytest.raises(SparkJobError):
        st.update("id < 100", {"value": "CASE WHEN id = 50 THEN raise_error('boom') ELSE value END"})
    assert st.version() == before and engine_rows(path) == rows and _staging_is_empty(path)


def test_empty_append_commits_nothing(spark, tmp_path: Path) -> None:
    st = SparkTable.create(spark, str(tmp_path / "t"), SCHEMA)
    r = st.write(spark.createDataFrame(make_rows([])))
    assert r.version is None and st.version() == 0


def test_spark_unreachable_uris_are_refused(spark) -> None:
    with pytest.raises(InvalidArgumentError):
        SparkTable.create(spark, "memory://nowhere/t", SCHEMA)
    assert dt  # keep the import for readers of the timestamps above


def test_a_deferred_create_and_its_first_write_are_one_commit(spark, tmp_path: Path) -> None:
    """`SparkTable.create(defer=True)` then `write`: version 0 holds protocol, metaData and the rows
    (Delta's first write to a new path), readable by delta-rs; nothing exists before the write."""
    path = tmp_path / "t"
    df = spark.createDataFrame(make_rows(range(40)))
    st = SparkTable.create(spark, str(path), df, partition_by=["part"], defer=True)
    assert not (path / "_delta_log").exists() and st.version() == -1
    result = st.write(df, txn=("ingest", 1))
    assert (result.version, result.num_rows) == (0, 40) and st.version() == 0
    assert Table.open(str(path)).snapshot().txn_version("ingest") == 1
    assert sorted(r["id"] for r in deltalake_rows(path)) == list(range(40))
    assert st.write(df, txn=("ingest", 1)).skipped  # then an ordinary table
    assert st.write(df.limit(3)).version == 1
    empty = SparkTable.create(spark, str(tmp_path / "e"), df, defer=True)
    assert empty.write(df.limit(0)).version == 0  # the table is created, without files, as Delta does
    assert Table.open(str(tmp_path / "e")).snapshot().files() == []
