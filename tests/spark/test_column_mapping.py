"""Spark reads of column-mapped tables (Spark-written reference tables): the files hold physical
names, users see logical ones; and Spark DML on tables created with column mapping writes the
physical names and field ids (delta-rs reads the result). Expected rows: the engine's read, itself
checked against Delta's expected answers in tests/compat/test_golden.py, Delta Kernel's answer for
dv-with-columnmapping, and for our DML the rows the test wrote and changed."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable
from tests.deltars import deltars_rows

pytestmark = [pytest.mark.spark]

GOLDEN = Path(__file__).parents[1] / "compat" / "golden"


def _naive_utc(v: object) -> object:
    """Spark (session zone UTC) gives timestamps as naive UTC datetimes."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC).replace(tzinfo=None)
    return v


def _copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(GOLDEN / name, root, ignore=shutil.ignore_patterns("*.crc"))
    return root


@pytest.mark.parametrize(
    "name",
    [
        "table-with-columnmapping-mode-name",
        "table-with-columnmapping-mode-id",
        "data-reader-timestamp_ntz-name-mode",
    ],
)
def test_to_df_uses_logical_names(spark, tmp_path: Path, name: str) -> None:
    root = _copy(tmp_path, name)
    df = SparkTable(spark, str(root)).to_df()
    engine = Table.open(str(root)).snapshot().to_arrow()
    assert df.columns == engine.column_names
    key = engine.column_names[0] if name.startswith("data-reader") else "IntegerType"
    simple = [f.name for f in engine.schema if not pa.types.is_nested(f.type)]
    # (PySpark cannot collect a map whose keys are arrays: compare the other columns)
    got = sorted((tuple(r[c] for c in simple) for r in df.select(*simple).collect()), key=repr)
    want = sorted((tuple(_naive_utc(r[c]) for c in simple) for r in engine.to_pylist()), key=repr)
    assert got == want and any(v is not None for row in got for v in row)
    if name.startswith("table-with"):
        nested = {
            r[key]: r["nested_struct"]
            for r in df.select(key, "nested_struct").collect()
            if r[key] is not None
        }
        assert nested[3].asDict(recursive=True) == {"aa": "3", "ac": {"aca": 3}}


def test_deletion_vectors_and_column_mapping(spark, tmp_path: Path) -> None:
    # Kernel: the rows of dv-partitioned-with-checkpoint, read through column mapping mode name
    root = _copy(tmp_path, "dv-with-columnmapping")
    rows = SparkTable(spark, str(root)).to_df().collect()
    assert sorted((r["part"], r["col1"], r["col2"]) for r in rows) == sorted(
        (x % 10, x, f"foo{x % 5}") for x in range(50) if not (x % 2 == 0 and x < 30)
    )


_SPARK_SCHEMA = "id long, s struct<x:int,y:string>, p string"


@pytest.mark.parametrize(("mode", "dvs"), [("name", "false"), ("id", "true")])
def test_dml_on_a_mapped_table_writes_physical_names(spark, tmp_path: Path, mode: str, dvs: str) -> None:
    """Append, DELETE, UPDATE, MERGE and a schema-evolving append on a table created with column
    mapping: every file Spark writes has the physical names and field ids, the new column gets a
    fresh id and name, and we, Spark and delta-rs read the same rows."""
    root = str(tmp_path / "t")
    schema = pa.schema(
        [("id", pa.int64()), ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])), ("p", pa.string())]
    )
    props = {"delta.columnMapping.mode": mode, "delta.enableDeletionVectors": dvs}
    st = SparkTable.create(spark, root, schema, partition_by=["p"], properties=props)
    st.write(spark.createDataFrame([(i, (i, f"y{i}"), "ab"[i % 2]) for i in range(8)], _SPARK_SCHEMA))
    st.delete("id = 3")
    st.update("s.x = 4", {"s": "named_struct('x', 40, 'y', 'forty')"})
    source = spark.createDataFrame([(5, (50, "fifty"), "b"), (20, (20, "y20"), "c")], _SPARK_SCHEMA)
    st.merge(source, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    extra = spark.createDataFrame([(30, (30, "y30"), "a", 1.5)], _SPARK_SCHEMA + ", extra double")
    st.write(extra, merge_schema=True)

    want = [
        {"id": i, "s": {"x": x, "y": y}, "p": p, "extra": e}
        for i, x, y, p, e in [
            (0, 0, "y0", "a", None), (1, 1, "y1", "b", None), (2, 2, "y2", "a", None),
            (4, 40, "forty", "a", None), (5, 50, "fifty", "b", None), (6, 6, "y6", "a", None),
            (7, 7, "y7", "b", None), (20, 20, "y20", "c", None), (30, 30, "y30", "a", 1.5),
        ]
    ]  # fmt: skip
    snap = Table.open(root).snapshot()
    assert sorted(snap.to_arrow().to_pylist(), key=repr) == sorted(want, key=repr)
    assert sorted((r.asDict(recursive=True) for r in st.to_df().collect()), key=repr) == sorted(
        want, key=repr
    )
    assert deltars_rows(root) == sorted(want, key=repr)

    names = snap.column_names
    assert names is not None and snap.metadata.configuration["delta.columnMapping.maxColumnId"] == "6"
    new = names.field("extra")
    assert new.name.startswith("col-") and json.loads(new.metadata[b"delta.columnMapping.id"]) == 6
    for add in snap.files():
        file_schema = pq.read_schema(f"{root}/{add.path}")
        assert set(add.partition_values) == {names.physical_of("p")}
        assert set(file_schema.names) <= {names.physical_of(c) for c in ("id", "s", "extra")}
        ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in file_schema}
        assert ids[names.physical_of("id")] == 1 and ids[names.physical_of("s")] == 2
        assert set(json.loads(add.stats or "")["nullCount"]) <= set(file_schema.names)


def _ids_depth_first(t: pa.DataType, key: bytes) -> list[int]:
    out: list[int] = []
    if pa.types.is_struct(t):
        for f in t:
            raw = (f.metadata or {}).get(key)
            out.append(int(json.loads(raw)) if raw is not None else -1)
            out += _ids_depth_first(f.type, key)
    elif pa.types.is_list(t):
        out += _ids_depth_first(t.value_type, key)
    elif pa.types.is_map(t):
        out += _ids_depth_first(t.item_type, key)
    return out


def test_spark_files_carry_every_nested_id_and_copies_get_fresh_ones(spark, tmp_path: Path) -> None:
    """Structs in lists and maps get their field ids in Spark's files; a DataFrame read from the table
    shows no mapping metadata, so a copied column added by merge_schema gets new ids and names."""
    root = str(tmp_path / "t")
    spark_schema = "id long, s struct<x:int>, l array<struct<z:int>>, m map<string,struct<a:int>>"
    df = spark.createDataFrame([(1, (1,), [(2,)], {"k": (3,)})], spark_schema)
    st = SparkTable.create(spark, root, df, properties={"delta.columnMapping.mode": "id"})
    st.write(df)
    read = st.to_df()
    assert "delta.columnMapping" not in read.schema.json()
    st.write(read.withColumn("s2", read["s"]), merge_schema=True)
    snap = Table.open(root).snapshot()
    table_ids = _ids_depth_first(pa.struct(list(snap.schema)), b"delta.columnMapping.id")
    assert sorted(table_ids) == list(range(1, 10))  # s2 and s2.x: 8 and 9, none reused
    assert snap.metadata.configuration["delta.columnMapping.maxColumnId"] == "9"
    for add in snap.files():
        file_schema = pq.read_schema(f"{root}/{add.path}")
        want = _ids_depth_first(
            pa.struct([f for f in snap.schema if snap.column_names.physical_of(f.name) in file_schema.names]),
            b"delta.columnMapping.id",
        )  # type: ignore[union-attr]
        assert _ids_depth_first(pa.struct(list(file_schema)), b"PARQUET:field_id") == want
    rows = [{"id": 1, "s": {"x": 1}, "l": [{"z": 2}], "m": [("k", {"a": 3})]}]
    assert deltars_rows(root) == sorted([{**rows[0], "s2": None}, {**rows[0], "s2": {"x": 1}}], key=repr)
