"""Identity columns numbered by Spark (issue 26, item 4): per-partition offsets past the high-water
mark, the mark raised in the same commit, GENERATED ALWAYS / BY DEFAULT, overflow, MERGE inserts,
and a write that loses the race to another identity writer numbering its rows again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import (
    ConstraintViolationError,
    IdentityColumn,
    InvalidArgumentError,
    SchemaMismatchError,
    Table,
    UnsupportedFeatureError,
)
from airflow_txnlog.spark import SparkTable, register, txnlog_errors
from airflow_txnlog.spark.features import identity

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _rows(path: Path) -> list[tuple[int, str]]:
    """(id, v) of every row, read back by delta-rs (by the engine when deletion vectors are on,
    which delta-rs's pyarrow reader refuses)."""
    dv = Table.open(str(path)).snapshot().properties.get("delta.enableDeletionVectors") == "true"
    t = Table.open(str(path)).snapshot().to_arrow() if dv else DeltaTable(str(path)).to_pyarrow_table()
    return sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist(), strict=True))


def _field(path: Path, name: str = "id") -> dict[str, Any]:
    meta = Table.open(str(path)).snapshot().metadata
    fields = json.loads(meta.schema_string)["fields"]
    return next(f["metadata"] for f in fields if f["name"] == name)


def _files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet")}


def _values(spark: Any, n: int, partitions: int) -> Any:
    return spark.range(0, n, 1, partitions).selectExpr("CONCAT('r', CAST(id AS STRING)) AS v")


@pytest.mark.parametrize(("start", "step"), [(1, 1), (100, 7), (-5, -3)])
def test_a_write_numbers_every_partition_past_the_mark(spark, tmp_path: Path, start: int, step: int) -> None:
    path = tmp_path / "t"
    st = SparkTable.create(spark, str(path), SCHEMA, identity_columns={"id": IdentityColumn(start, step)})
    st.write(_values(spark, 500, 7))  # 7 tasks, none of which numbers alone
    st.write(_values(spark, 300, 3).selectExpr("CONCAT('s', v) AS v"))
    rows = _rows(path)
    ids = [i for i, _ in rows]
    assert len(ids) == 800 == len(set(ids))  # every row has its own value
    assert all((i - start) % step == 0 and (i - start) // step >= 0 for i in ids)
    first = [i for i, v in rows if v.startswith("r")]
    second = [i for i, v in rows if v.startswith("s")]
    # the second write's values all lie past the first's mark, in the step's direction
    assert min(second, key=lambda i: i * step) * step > max(first, key=lambda i: i * step) * step
    mark = _field(path)["delta.identity.highWaterMark"]
    assert mark == max(ids, key=lambda i: i * step)
    assert min(ids, key=lambda i: i * step) == start  # the first value is START
    protocol = DeltaTable(str(path)).protocol()  # (legacy writer 6 implies identityColumns)
    assert protocol.min_writer_version == 6 or "identityColumns" in (protocol.writer_features or [])


def test_generated_always_refuses_explicit_values_and_by_default_keeps_them(spark, tmp_path: Path) -> None:
    always = SparkTable.create(spark, str(tmp_path / "a"), SCHEMA, identity_columns={"id": IdentityColumn()})
    explicit = spark.createDataFrame([(5, "x"), (None, "y")], "id long, v string").coalesce(1)
    with pytest.raises(ConstraintViolationError, match="GENERATED ALWAYS: 1 row"):
        always.write(explicit)
    assert always.version() == 0 and not _files(tmp_path / "a")
    with pytest.raises(SchemaMismatchError, match="identity column"):
        always.write(spark.createDataFrame([(5, "x")], "id int, v string"))

    spec = {"id": IdentityColumn(start=1, step=1, always=False)}
    by_default = SparkTable.create(spark, str(tmp_path / "d"), SCHEMA, identity_columns=spec)
    by_default.write(spark.createDataFrame([(1000, "x"), (None, "y"), (None, "z")], "id long, v string"))
    rows = dict((v, i) for i, v in _rows(tmp_path / "d"))
    assert rows["x"] == 1000  # kept
    assert {rows["y"], rows["z"]} <= {1, 2, 3} and rows["y"] != rows["z"]  # (gaps, never repeats)
    # an explicit value does not move the mark (as the engine's writer): it is the largest generated
    assert _field(tmp_path / "d")["delta.identity.highWaterMark"] == max(rows["y"], rows["z"])


def test_overflow_is_refused_before_anything_is_written(spark, tmp_path: Path) -> None:
    path = tmp_path / "o"
    spec = {"id": IdentityColumn(start=2**63 - 3, step=1)}
    st = SparkTable.create(spark, str(path), SCHEMA, identity_columns=spec)
    with pytest.raises(ConstraintViolationError, match="overflow BIGINT"):
        st.write(_values(spark, 5, 2))
    assert st.version() == 0 and not _files(path)
    st.write(_values(spark, 3, 2))  # exactly up to BIGINT's largest value
    assert [i for i, _ in _rows(path)] == [2**63 - 3, 2**63 - 2, 2**63 - 1]


def test_a_generated_column_reading_the_identity_column_is_filled(spark, tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("g", pa.int64())])
    path = tmp_path / "g"
    st = SparkTable.create(
        spark,
        str(path),
        schema,
        identity_columns={"id": IdentityColumn()},
        generated_columns={"g": "id * 10"},
    )
    st.write(_values(spark, 4, 2))
    t = DeltaTable(str(path)).to_pyarrow_table()
    assert sorted(zip(t.column("id").to_pylist(), t.column("g").to_pylist(), strict=True)) == [
        (1, 10),
        (2, 20),
        (3, 30),
        (4, 40),
    ]
    with pytest.raises(UnsupportedFeatureError, match="generated column 'g' reads identity column 'id'"):
        st.merge(_values(spark, 1, 1), "t.v = s.v").when_not_matched_insert_all().execute()


@pytest.mark.parametrize(
    "props", [{}, {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}]
)
def test_merge_numbers_inserted_rows_and_keeps_the_others(
    spark, tmp_path: Path, props: dict[str, str]
) -> None:
    path = tmp_path / "m"
    st = SparkTable.create(
        spark, str(path), SCHEMA, properties=props, identity_columns={"id": IdentityColumn(start=1, step=2)}
    )
    st.write(_values(spark, 6, 2))  # r0..r5
    before = {v: i for i, v in _rows(path)}
    source = spark.createDataFrame(
        [(v, f"{v}!") for v in ["r1", "r4", "n1", "n2", "n3"]], "v string, w string"
    )
    result = (
        st.merge(source.repartition(3), "t.v = s.v")
        .when_matched_update(set={"v": "s.w"})
        .when_not_matched_insert(values={"v": "s.v"})
        .execute()
    )
    assert result.metrics["numTargetRowsInserted"] == 3
    after = {v: i for i, v in _rows(path)}
    assert after["r1!"] == before["r1"] and after["r4!"] == before["r4"]  # updated rows keep their ids
    assert {after[v] for v in ["r0", "r2", "r3", "r5"]} == {before[v] for v in ["r0", "r2", "r3", "r5"]}
    new = [after[v] for v in ["n1", "n2", "n3"]]
    old_mark = max(before.values())
    assert len(set(after.values())) == 9 and all(i > old_mark and (i - 1) % 2 == 0 for i in new)
    assert _field(path)["delta.identity.highWaterMark"] == max(new)
    with pytest.raises(UnsupportedFeatureError, match="identity column 'id' cannot be updated"):
        st.merge(source, "t.v = s.v").when_matched_update(set={"id": "0"}).execute()
    if props:  # the change feed's inserted rows carry the values written
        feed = st.changes(st.version()).filter("_change_type = 'insert'").collect()
        assert sorted(r["id"] for r in feed) == sorted(new)


def test_update_and_the_data_source_refuse_clearly(spark, tmp_path: Path) -> None:
    path = tmp_path / "u"
    st = SparkTable.create(spark, str(path), SCHEMA, identity_columns={"id": IdentityColumn()})
    st.write(_values(spark, 3, 1))
    with pytest.raises(UnsupportedFeatureError, match="UPDATE: identity column 'id' cannot be updated"):
        st.update("v = 'r0'", {"id": "id + 100"})
    register(spark)
    with pytest.raises(UnsupportedFeatureError, match=r"SparkTable.*write"), txnlog_errors():
        _values(spark, 1, 1).write.format("txnlog").mode("append").save(str(path))
    st.update("v = 'r0'", {"v": "'A'"})
    st.delete("v = 'r1'")
    assert _rows(path) == [(1, "A"), (3, "r2")]


def test_a_write_that_loses_the_race_numbers_its_rows_again(spark, tmp_path: Path, monkeypatch) -> None:
    """Another identity writer commits between our numbering and our commit: the commit loses, and
    the write numbers its (materialized) rows again past the winner's mark and lands."""
    path = tmp_path / "r"
    st = SparkTable.create(spark, str(path), SCHEMA, identity_columns={"id": IdentityColumn()})
    other = Table.open(str(path))
    real = identity.number
    calls = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        calls.append(out[1])
        if len(calls) == 1:  # the other writer wins the race for the next version
            other.write(pa.table({"v": ["other1", "other2"]}))
        return out

    monkeypatch.setattr(identity, "number", racing)
    st.write(_values(spark, 5, 3))
    assert calls == [{"id": 5}, {"id": 7}]  # numbered again past the winner's mark (2)
    rows = _rows(path)
    assert [i for i, _ in rows] == [1, 2, 3, 4, 5, 6, 7]
    assert {v for i, v in rows if i <= 2} == {"other1", "other2"}
    assert st.version() == 2
    assert len(_files(path)) == 1 + 3  # the other's file and our 3 tasks' (the lost attempt's deleted)


_APPENDER = """
import sys
import pyarrow as pa
from airflow_txnlog.engine import Table
t = Table.open(sys.argv[1])
for n in range(int(sys.argv[2])):
    t.write(pa.table({"v": [f"p{n}-{k}" for k in range(3)]}))
"""


def test_concurrent_spark_and_engine_writers_never_share_an_id(spark, tmp_path: Path) -> None:
    """A process appends with the engine's writer while Spark appends: every row lands, no two share
    an id, and the mark is the largest id."""
    path = tmp_path / "c"
    st = SparkTable.create(spark, str(path), SCHEMA, identity_columns={"id": IdentityColumn()})
    proc = subprocess.Popen([sys.executable, "-c", _APPENDER, str(path), "15"])
    try:
        for n in range(4):
            st.write(_values(spark, 50, 2).selectExpr(f"CONCAT('s{n}-', v) AS v"))
    finally:
        assert proc.wait(timeout=300) == 0
    ids = [i for i, _ in _rows(path)]
    assert len(ids) == 4 * 50 + 15 * 3 == len(set(ids))
    assert _field(path)["delta.identity.highWaterMark"] == max(ids)


def test_a_rerun_of_the_same_idempotent_write_that_loses_the_race_commits_nothing(
    spark, tmp_path: Path, monkeypatch
) -> None:
    """Two runs of one txn=(app, version) (a zombie task and its retry): the one that loses sees
    the winner's app id, not only its new mark, and is skipped instead of numbering the batch again."""
    path = tmp_path / "z"
    st = SparkTable.create(spark, str(path), SCHEMA, identity_columns={"id": IdentityColumn()})
    other = Table.open(str(path))
    real = identity.number

    def racing(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        if other.snapshot().version == 0:  # the other run of the same job commits first
            other.write(pa.table({"v": ["r0", "r1"]}), txn=("job", 1))
        return out

    monkeypatch.setattr(identity, "number", racing)
    result = st.write(_values(spark, 2, 1), txn=("job", 1))
    assert result.skipped and result.version == 1
    assert _rows(path) == [(1, "r0"), (2, "r1")] and st.version() == 1
    assert len(_files(path)) == 1  # our lost attempt's file was deleted


def test_delete_and_update_rerun_after_losing_to_an_identity_append(
    spark, tmp_path: Path, monkeypatch
) -> None:
    """An identity append that commits while a DELETE / UPDATE runs changes only the mark: the DML
    runs again on the new version (nothing lost, the appended rows kept)."""
    from airflow_txnlog.spark.dml import delete as delete_module  # noqa: PLC0415
    from airflow_txnlog.spark.dml import update as update_module  # noqa: PLC0415

    path = tmp_path / "d"
    st = SparkTable.create(spark, str(path), SCHEMA, identity_columns={"id": IdentityColumn()})
    st.write(_values(spark, 4, 1))  # r0..r3: ids 1..4
    other = Table.open(str(path))
    attempts: dict[str, list[int]] = {}
    for module, tag in ((delete_module, "x"), (update_module, "y")):
        real, calls = module.read_candidates, attempts.setdefault(tag, [])

        def racing(*args: Any, _real: Any = real, _calls: list[int] = calls, _tag: str = tag) -> Any:
            _calls.append(1)
            if len(_calls) == 1:
                other.write(pa.table({"v": [_tag]}))
            return _real(*args)

        monkeypatch.setattr(module, "read_candidates", racing)
    st.delete("v = 'r1'")
    st.update("v = 'r2'", {"v": "'R2'"})
    assert _rows(path) == [(1, "r0"), (3, "R2"), (4, "r3"), (5, "x"), (6, "y")]
    assert attempts == {"x": [1, 1], "y": [1, 1]}  # each ran twice: lost once, then landed


def _foreign_field_change(path: Path, column: str, **metadata: Any) -> None:
    """A commit another engine made, giving `column` more field metadata."""
    t = Table.open(str(path))
    wire = t.snapshot().metadata.to_wire()["metaData"]
    schema = json.loads(wire["schemaString"])
    next(f for f in schema["fields"] if f["name"] == column)["metadata"].update(metadata)
    log = path / "_delta_log" / f"{t.latest_version() + 1:020d}.json"
    log.write_text(json.dumps({"metaData": {**wire, "schemaString": json.dumps(schema)}}) + "\n")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"delta.identity.step": 0}, r"identity column 'id' has step 0.*ILLEGAL_STEP"),
        ({"delta.generationExpression": "length(v)"}, "DELTA_IDENTITY_COLUMNS_WITH_GENERATED_EXPRESSION"),
    ],
)
def test_a_foreign_identity_column_delta_refuses_refuses_spark_writes_of_explicit_ids(
    spark, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    """Every row brings its own id (BY DEFAULT), so no value is generated: the write is refused
    all the same, before any job, as the engine's own writer refuses it."""
    path = tmp_path / "t"
    spec = {"id": IdentityColumn(always=False)}
    st = SparkTable.create(spark, str(path), SCHEMA, identity_columns=spec)
    _foreign_field_change(path, "id", **change)
    before = (st.version(), _files(path))
    with pytest.raises(InvalidArgumentError, match=message):
        st.write(spark.createDataFrame([(7, "x")], "id long, v string"))
    assert (st.version(), _files(path)) == before
