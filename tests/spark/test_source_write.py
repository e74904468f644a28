"""`df.write.format("txnlog")`: executors write the files, one engine commit per job.

Expected rows are the rows the test writes (and, after replaceWhere / mergeSchema, what Delta's
semantics leave); delta-rs reads every table written here, row for row."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.spark import register
from airflow_txnlog.spark.source.options import WriteOptions
from tests.deltars import deltars_rows

pytestmark = [pytest.mark.spark]


def _rows(n: int, start: int = 0) -> list[tuple[int, str, float]]:
    return [(i, "abc"[i % 3], i * 0.5) for i in range(start, start + n)]


def _df(spark, rows: list[tuple[int, str, float]]):
    return spark.createDataFrame(rows, "id long, part string, v double")


def _save(df, path: Path, mode: str = "append", **options: object) -> None:
    register(df.sparkSession)
    w = df.write.format("txnlog").mode(mode)
    for k, v in options.items():
        w = w.option(k, str(v))
    w.save(str(path))


def _ours(path: Path) -> list[dict[str, object]]:
    return sorted(Table.open(str(path)).snapshot().to_arrow().to_pylist(), key=repr)


def _data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def _as_dicts(rows: list[tuple[int, str, float]], **extra: object) -> list[dict[str, object]]:
    return sorted(({"id": i, "part": p, "v": v, **extra} for i, p, v in rows), key=repr)


def test_append_creates_then_appends_one_commit_each(spark, tmp_path: Path) -> None:
    """A first write to a new path is one commit, version 0 (protocol, metaData and the adds), as
    Delta writes it: no empty version for a sensor or a reader to see."""
    path = tmp_path / "t"
    _save(_df(spark, _rows(300)), path, partitionBy="part")
    table = Table.open(str(path))
    assert table.latest_version() == 0 and table.snapshot().partition_columns == ["part"]
    lines = (path / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    kinds = [next(iter(json.loads(line))) for line in lines]
    assert kinds[:3] == ["commitInfo", "protocol", "metaData"] and set(kinds[3:]) == {"add"}
    _save(_df(spark, _rows(50, start=300)), path)
    assert Table.open(str(path)).latest_version() == 1
    assert _ours(path) == _as_dicts(_rows(350)) == deltars_rows(path)
    assert all(
        f.partition_values["part"] in "abc" and f.stats for f in Table.open(str(path)).snapshot().files()
    )


def test_overwrite_replace_where_and_merge_schema(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    _save(_df(spark, _rows(90)), path, partitionBy="part")
    _save(_df(spark, _rows(30, start=1000)), path, mode="overwrite")
    assert Table.open(str(path)).latest_version() == 1 and _ours(path) == _as_dicts(_rows(30, start=1000))
    new_b = [(i, "b", 1.0) for i in range(5000, 5003)]
    _save(_df(spark, new_b), path, mode="overwrite", replaceWhere="part = 'b'")
    kept = [r for r in _rows(30, start=1000) if r[1] != "b"]
    assert Table.open(str(path)).latest_version() == 2 and _ours(path) == _as_dicts(kept + new_b)
    extra = spark.createDataFrame([(7000, "a", 0.0, "x")], "id long, part string, v double, note string")
    _save(extra, path, mergeSchema="true")
    snap = Table.open(str(path)).snapshot()
    assert snap.version == 3 and snap.schema.names == ["id", "part", "v", "note"]
    want = sorted(
        [*_as_dicts(kept + new_b, note=None), {"id": 7000, "part": "a", "v": 0.0, "note": "x"}], key=repr
    )
    assert _ours(path) == want == deltars_rows(path)
    for version in (0, 1, 2, 3):
        ops = [
            json.loads(line)
            for line in (path / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
        ]
        assert sum("commitInfo" in a for a in ops) == 1  # one commit per job


def test_a_retried_write_with_the_same_txn_version_commits_nothing(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    df = _df(spark, _rows(40))
    for _ in range(3):
        _save(df, path, txnAppId="ingest", txnVersion=7)
    _save(df, path, txnAppId="ingest", txnVersion=6)  # older than what the table holds: no-op too
    table = Table.open(str(path))
    assert table.latest_version() == 0 and len(_ours(path)) == 40  # (version 0 holds the txn id too)
    files = _data_files(path)
    _save(df, path, txnAppId="ingest", txnVersion=8)
    assert Table.open(str(path)).latest_version() == 1 and len(_data_files(path)) > len(files)


def test_a_failing_job_leaves_no_commit_and_no_new_files(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    _save(_df(spark, _rows(60)), path, partitionBy="part")
    before, files = Table.open(str(path)).latest_version(), _data_files(path)
    bad = _df(spark, [(1, "a", 0.0), (2, "b", 0.0)]).repartition(2)
    with pytest.raises(Exception, match="does not satisfy replaceWhere"):  # a task fails
        _save(bad, path, mode="overwrite", replaceWhere="part = 'a'")
    failing = (
        _df(spark, _rows(500))
        .selectExpr("id", "part", "if(id = 499, raise_error('boom'), v) as v")
        .repartition(4)
    )
    with pytest.raises(Exception, match="boom"):
        _save(failing, path)
    assert Table.open(str(path)).latest_version() == before
    assert _data_files(path) == files  # what the successful tasks wrote was deleted by abort()


def test_mapped_table_through_the_source(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("part", pa.string()), ("v", pa.float64())])
    Table.create(
        str(path), schema=schema, partition_by=["part"], properties={"delta.columnMapping.mode": "name"}
    )
    _save(_df(spark, _rows(20)), path)
    snap = Table.open(str(path)).snapshot()
    assert all(k.startswith("col-") for f in snap.files() for k in f.partition_values)
    assert _ours(path) == _as_dicts(_rows(20)) == deltars_rows(path)
    register(spark)
    assert sorted(r["id"] for r in spark.read.format("txnlog").load(str(path)).collect()) == list(range(20))


@pytest.mark.parametrize(
    ("mode", "options", "match"),
    [
        ("overwrite", {"replaceWhere": "id > 3"}, "names data columns \\['id'\\]"),
        ("append", {"replaceWhere": "part = 'a'"}, 'replaceWhere needs mode\\("overwrite"\\)'),
        ("append", {"overwriteSchema": "true"}, "overwriteSchema needs mode"),
        ("append", {"partitionBy": "v"}, "partitioning cannot change"),
        ("append", {"mergeSchema": "yes"}, "mergeSchema must be true or false"),
        ("append", {"txnAppId": "x"}, "txnAppId and txnVersion go together"),
        ("append", {"compression": "zstd"}, "unknown write options \\['compression'\\]"),
    ],
)
def test_bad_writes_are_refused_before_any_job(
    spark, tmp_path: Path, mode: str, options: dict[str, str], match: str
) -> None:
    path = tmp_path / "t"
    _save(_df(spark, _rows(9)), path, partitionBy="part")
    with pytest.raises(Exception, match=match):
        _save(_df(spark, _rows(3)), path, mode=mode, **options)
    assert Table.open(str(path)).latest_version() == 0 and len(_ours(path)) == 9


def test_write_options_parse() -> None:
    parsed = WriteOptions.parse(
        {"path": "/t", "partitionBy": '["a", "b"]', "txnAppId": "j", "txnVersion": "3"}
    )
    assert parsed.partition_by == ("a", "b") and parsed.txn == ("j", 3)
    assert WriteOptions.parse({"path": "/t", "partitionBy": "a, b"}).partition_by == ("a", "b")
    with pytest.raises(InvalidArgumentError, match="txnVersion must be an integer >= 0"):
        WriteOptions.parse({"path": "/t", "txnAppId": "j", "txnVersion": "-1"})


def test_a_writer_feature_we_do_not_honor_is_refused_before_any_job(spark, tmp_path: Path) -> None:
    """A table whose protocol lists `liquid` (Databricks' clustering preview, never written) is refused
    before any Spark job; nothing is added to its folder."""
    root = tmp_path / "dm"
    Table.create(str(root), schema=pa.schema([("id", pa.int64())]))
    protocol = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["domainMetadata", "liquid"],
    }
    info = {"timestamp": 1700000000000, "operation": "UPGRADE PROTOCOL", "engineInfo": "hand"}
    lines = [json.dumps({"commitInfo": info}), json.dumps({"protocol": protocol})]
    (root / "_delta_log" / f"{1:020d}.json").write_text("\n".join(lines) + "\n")
    before = sorted(p.name for p in root.rglob("*"))
    with pytest.raises(Exception, match="liquid"):
        _save(spark.createDataFrame([(1,)], "id long"), root)
    assert sorted(p.name for p in root.rglob("*")) == before
