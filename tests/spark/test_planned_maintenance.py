"""Planned rewrites run on Spark (issue 41, item 1): `SparkTable.run_maintenance` takes an action of
`Table.plan_maintenance().to_dict()["actions"]`, Spark reads and writes the files, the engine commits
exactly the planned ones. Each test runs the same action through the engine on an identical copy of
the table and compares: rows (with their row ids), files, the result dict and the commit's metrics
(all but the bytes Spark's parquet writer chose)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import ConcurrentDeleteDeleteError, Table
from airflow_txnlog.engine.maintenance.curves import layout_keys
from airflow_txnlog.engine.spi import write_deletion_vectors
from airflow_txnlog.spark import SparkTable
from airflow_txnlog.spark.maintenance.planned import spark_writer

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.int64()), ("p", pa.string())])
TRACKED = {"delta.enableRowTracking": "true"}


def _rows(n: int, seed: int, start: int, part: str = "x") -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {"id": np.arange(start, start + n), "a": rng.permutation(n) + start, "b": rng.permutation(n),
         "p": [part] * n},
        schema=SCHEMA,
    )  # fmt: skip


def _twins(tmp_path: Path, build: Any) -> tuple[Table, Table]:
    """The same table twice (byte for byte): one for the engine, one for Spark."""
    build(str(tmp_path / "engine"))
    shutil.copytree(tmp_path / "engine", tmp_path / "spark")
    return Table.open(str(tmp_path / "engine")), Table.open(str(tmp_path / "spark"))


def _all(t: Table) -> list[tuple[Any, ...]]:
    data = t.snapshot().to_arrow(row_tracking=True)
    names = ["id", "a", "b", "p", "_row_id", "_row_commit_version"]
    return sorted(zip(*(data.column(c).to_pylist() for c in names), strict=True))


def _commit(t: Table, version: int) -> dict[str, Any]:
    log = Path(t.uri) / "_delta_log" / f"{version:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    return next(a["commitInfo"] for a in actions if "commitInfo" in a)


def _same_but_bytes(engine: dict[str, Any], spark: dict[str, Any]) -> None:
    """The two results agree on everything but the bytes written and the time taken."""

    def plain(r: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in r.items() if k not in ("seconds", "actual", "version")}
        out["actual"] = {k: v for k, v in r["actual"].items() if k != "bytes_after"}
        return out

    assert plain(spark) == plain(engine)
    assert spark["actual"]["bytes_after"] > 0


def _plan_action(t: Table, kind: str, **settings: Any) -> dict[str, Any]:
    plan = t.plan_maintenance(quiet_minutes=0, **settings).to_dict()
    return dict(next(a for a in plan["actions"] if a["kind"] == kind))


def test_a_planned_compaction_on_spark_equals_the_engine_run(spark: Any, tmp_path: Path) -> None:
    def build(uri: str) -> None:
        t = Table.create(uri, schema=SCHEMA, partition_by=["p"], properties=TRACKED)
        for i in range(6):
            t.write(_rows(300, i, 300 * i, "x" if i % 2 else "y"))

    engine, on_spark = _twins(tmp_path, build)
    rows, before = _all(engine), {f.path for f in engine.snapshot().files()}
    action = _plan_action(engine, "compact", min_input_files=2, min_files_removed=1)
    assert action == _plan_action(on_spark, "compact", min_input_files=2, min_files_removed=1)
    by_engine = engine.run_maintenance(action, dry_run=False)
    by_spark = SparkTable(spark, on_spark.uri).run_maintenance(action, dry_run=False)
    _same_but_bytes(by_engine, by_spark)
    assert _all(on_spark) == _all(engine) == rows  # (row ids and their commit versions kept)
    assert len(on_spark.snapshot().files()) == len(engine.snapshot().files())
    ours, theirs = _commit(on_spark, by_spark["version"]), _commit(engine, by_engine["version"])
    assert ours["operation"] == theirs["operation"] == "OPTIMIZE"
    assert ours["operationParameters"] == theirs["operationParameters"]
    keys = ("numRemovedFiles", "numAddedFiles", "numRemovedBytes")
    assert {k: ours["operationMetrics"][k] for k in keys} == {k: theirs["operationMetrics"][k] for k in keys}
    assert set(ours["operationMetrics"]) == set(theirs["operationMetrics"])
    new = [f for f in on_spark.snapshot().files() if f.path not in before]
    assert len(new) == 1 and not new[0].data_change and new[0].partition_values == action["partition"]
    assert sorted(DeltaTable(on_spark.uri).to_pyarrow_table().column("id").to_pylist()) == [
        r[0] for r in sorted(rows)
    ]


def test_a_planned_purge_on_spark_drops_the_deleted_rows_and_the_vector(spark: Any, tmp_path: Path) -> None:
    def build(uri: str) -> None:
        t = Table.create(uri, schema=SCHEMA, properties={"delta.enableDeletionVectors": "true"})
        t.write(_rows(2000, 1, 0))
        (f,) = t.snapshot().files()
        dv = write_deletion_vectors(t.storage, {f.path: range(0, 2000, 8)})  # 12.5 % deleted
        with t.transaction("DELETE", {"predicate": '["id % 8 = 0"]'}) as txn:
            txn.remove(f)
            txn.add(dataclasses.replace(f, deletion_vector=dv[f.path]))
            txn.commit()

    engine, on_spark = _twins(tmp_path, build)
    (f,) = engine.snapshot().files()
    action = _plan_action(engine, "purge_deletion_vectors", target_file_size=f.size)
    by_engine = engine.run_maintenance(action, dry_run=False)
    by_spark = SparkTable(spark, on_spark.uri).run_maintenance(action, dry_run=False)
    _same_but_bytes(by_engine, by_spark)
    (out,) = on_spark.snapshot().files()
    assert out.deletion_vector is None and out.num_records == 1750
    assert sorted(on_spark.snapshot().to_arrow().column("id").to_pylist()) == [
        i for i in range(2000) if i % 8
    ]


def _in_curve_order(path: Path, columns: list[str], curve: str) -> bool:
    data = pq.read_table(path)
    keys = layout_keys(data, columns, curve)
    return bool(np.all(np.diff(keys.astype(np.float64)) >= 0))


def test_a_planned_clustering_on_spark_writes_clustered_files_in_curve_order(
    spark: Any, tmp_path: Path
) -> None:
    def build(uri: str) -> None:
        t = Table.create(uri, schema=SCHEMA.remove(3), cluster_by=["a", "b"], properties=TRACKED)
        for i in range(5):
            t.write(_rows(400, i, 400 * i).drop(["p"]))

    engine, on_spark = _twins(tmp_path, build)
    before = sorted(engine.snapshot().to_arrow(row_tracking=True).to_pylist(), key=lambda r: r["id"])
    action = _plan_action(engine, "cluster")
    by_engine = engine.run_maintenance(action, dry_run=False)
    by_spark = SparkTable(spark, on_spark.uri).run_maintenance(action, dry_run=False)
    _same_but_bytes(by_engine, by_spark)
    after = sorted(on_spark.snapshot().to_arrow(row_tracking=True).to_pylist(), key=lambda r: r["id"])
    assert after == before
    files = on_spark.snapshot().files()
    assert {f.clustering_provider for f in files} == {"liquid"}
    assert all(_in_curve_order(Path(on_spark.uri) / f.path, ["a", "b"], "hilbert") for f in files)
    params = _commit(on_spark, by_spark["version"])["operationParameters"]
    assert params == _commit(engine, by_engine["version"])["operationParameters"]
    assert params["clusterBy"] == '["a", "b"]'


def test_a_zordered_tables_compaction_on_spark_keeps_the_engines_row_order(
    spark: Any, tmp_path: Path
) -> None:
    def build(uri: str) -> None:
        t = Table.create(uri, schema=SCHEMA)
        t.write(_rows(600, 0, 0))
        t.optimize(zorder_by=["a", "b"])
        for i in range(1, 4):
            t.write(_rows(50, i, 10_000 * i))  # three small files: a compaction keeping the Z-order

    engine, on_spark = _twins(tmp_path, build)
    before = {f.path for f in engine.snapshot().files()}
    action = _plan_action(engine, "compact", min_input_files=2, min_files_removed=1)
    assert action["layout"]["mode"] == "zorder"
    by_engine = engine.run_maintenance(action, dry_run=False)
    by_spark = SparkTable(spark, on_spark.uri).run_maintenance(action, dry_run=False)
    _same_but_bytes(by_engine, by_spark)

    def written(t: Table) -> list[tuple[int, int]]:
        (add,) = [f for f in t.snapshot().files() if f.path not in before]
        data = pq.read_table(Path(t.uri) / add.path)
        return list(zip(data.column("a").to_pylist(), data.column("b").to_pylist(), strict=True))

    # distinct values, cut points from all the rows on both sides: the same keys, so the same order
    assert written(on_spark) == written(engine)


def test_a_dry_run_on_spark_writes_nothing(spark: Any, tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    for i in range(4):
        t.write(_rows(100, i, 100 * i))
    action = _plan_action(t, "compact", min_input_files=2, min_files_removed=1)
    files = sorted(p.name for p in Path(t.uri).rglob("*.parquet"))
    done = SparkTable(spark, t.uri).run_maintenance(action)  # (dry_run=True by default)
    assert done["dry_run"] is True and done["version"] is None and done["bins_run"] == 1
    assert sorted(p.name for p in Path(t.uri).rglob("*.parquet")) == files and t.latest_version() == 4


def test_a_delete_between_the_spark_write_and_the_commit_is_a_conflict_and_the_files_go(
    spark: Any, tmp_path: Path
) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    for i in range(4):
        t.write(_rows(100, i, 100 * i))
    action = _plan_action(t, "compact", min_input_files=2, min_files_removed=1)
    files = sorted(p.name for p in Path(t.uri).rglob("*.parquet"))
    st = SparkTable(spark, t.uri)
    write = spark_writer(st._handle)

    def racing(snap: Any, work: Any) -> Any:
        adds = write(snap, work)
        with Table.open(t.uri).transaction("DELETE", {"predicate": "[]"}) as txn:
            txn.remove(work.files[0])  # a concurrent delete of an input, after Spark wrote
            txn.commit()
        return adds

    with pytest.raises(ConcurrentDeleteDeleteError):
        t.run_maintenance(action, dry_run=False, rewriter=racing)
    assert sorted(p.name for p in Path(t.uri).rglob("*.parquet")) == files  # Spark's output is gone
    assert len(Table.open(t.uri).snapshot().files()) == 3  # (the delete's commit stands)


def test_other_kinds_run_in_the_engine(spark: Any, tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(_rows(10, 0, 0))
    done = SparkTable(spark, t.uri).run_maintenance(
        {"kind": "checkpoint", "reason": None, "estimate": {}}, dry_run=False
    )
    assert done == {"kind": "checkpoint", "dry_run": False, "version": 1}
    assert (Path(t.uri) / "_delta_log" / f"{1:020d}.checkpoint.parquet").exists()


def test_a_bin_of_more_rows_than_max_rows_per_file_is_still_one_file(spark: Any, tmp_path: Path) -> None:
    """The data source writes a task's rows in files of `maxRowsPerFile` (1M) rows; a rewrite's task is
    one file whatever its rows (a 2.2 GB planned compaction once wrote 68 files for 3 bins)."""
    schema = pa.schema([("id", pa.int64())])
    t = Table.create(str(tmp_path / "t"), schema=schema)
    for i in range(3):
        t.write(pa.table({"id": np.arange(i * 400_000, (i + 1) * 400_000)}, schema=schema))
    action = _plan_action(t, "compact", min_input_files=2, min_files_removed=1)
    done = SparkTable(spark, t.uri).run_maintenance(action, dry_run=False)
    (out,) = t.snapshot().files()
    assert done["actual"]["files_after"] == 1 and out.num_records == 1_200_000
    meta = pq.ParquetFile(Path(t.uri) / out.path).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [1_048_576, 151_424]
    assert json.loads(out.stats or "")["maxValues"]["id"] == 1_199_999
