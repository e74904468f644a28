"""Liquid clustering and Z-order (issue 28, items 3-4), engine side: the clustering domain and
protocol as PROTOCOL.md "Clustered Table" says, OPTIMIZE clustering along a Hilbert curve with
clusteringProvider, Z-order, bad input refused with nothing written, and other readers (delta-rs,
polars-deltalake on delta-kernel-rs) reading what we write; we read what delta-rs z-orders."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_txnlog.engine import InvalidArgumentError, Table, UnsupportedFeatureError
from airflow_txnlog.engine.errors import CommitRetriesExceededError
from airflow_txnlog.engine.features.table_features import with_writer_feature
from airflow_txnlog.engine.log.actions import DomainMetadata
from airflow_txnlog.engine.maintenance.layout import optimize_layout

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("s", pa.string()), ("l", pa.list_(pa.int64()))])
QUERY = "a >= 100 AND a <= 199 AND b >= 300 AND b <= 399"  # 1 % of a 1000 x 1000 square


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 1000, n), rng.integers(0, 1000, n)
    return pa.table({"a": a, "b": b, "s": [f"k{v}" for v in a], "l": [[int(v)] for v in b]}, schema=SCHEMA)


def _filled(t: Table, files: int = 10, rows: int = 4000) -> Table:
    for i in range(files):
        t.write(_rows(rows, i))
    return t


def _commit(t: Table, version: int) -> list[dict[str, object]]:
    log = Path(t.uri) / "_delta_log" / f"{version:020d}.json"
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


def _sorted_rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("a", "b", "s")), strict=True))


def test_create_cluster_by_writes_the_domain_and_features_the_protocol_names(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a", "B"])
    actions = _commit(t, 0)
    protocol = next(a["protocol"] for a in actions if "protocol" in a)
    assert protocol["minWriterVersion"] == 7
    assert {"clustering", "domainMetadata"} <= set(protocol["writerFeatures"])  # type: ignore[index]
    domain = next(a["domainMetadata"] for a in actions if "domainMetadata" in a)
    assert domain == {
        "domain": "delta.clustering",
        "configuration": '{"clusteringColumns":[["a"],["b"]]}',
        "removed": False,
    }
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert orjson.loads(info["operationParameters"]["clusterBy"]) == ["a", "b"]  # (as the schema spells them)  # type: ignore[index]
    assert t.snapshot().clustering_columns() == ["a", "b"]


def test_column_mapped_tables_keep_physical_names_in_the_domain(tmp_path: Path) -> None:
    props = {"delta.columnMapping.mode": "name"}
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["b"], properties=props)
    config = orjson.loads(t.snapshot().domain_metadata()["delta.clustering"])
    (physical,) = config["clusteringColumns"]
    assert physical[0].startswith("col-")
    t.rename_column("b", "bee")
    assert t.snapshot().clustering_columns() == ["bee"]


def test_changing_and_removing_keys_and_what_is_refused(tmp_path: Path) -> None:
    t = _filled(Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a"]), files=1)
    v = t.cluster_by(["s", "b"])
    info = _commit(t, v)[0]["commitInfo"]
    assert info["operation"] == "CLUSTER BY"  # type: ignore[index]
    assert info["operationParameters"] == {"oldClusteringColumns": "a", "newClusteringColumns": "s,b"}  # type: ignore[index]
    assert t.snapshot().clustering_columns() == ["s", "b"]
    with pytest.raises(InvalidArgumentError, match="clustering columns"):
        t.set_properties({"delta.dataSkippingNumIndexedCols": "1"})  # b and s would lose their stats
    t.cluster_by(None)  # CLUSTER BY NONE: the domain stays, with no keys
    assert t.snapshot().clustering_columns() == []
    assert t.snapshot().domain_metadata()["delta.clustering"] == '{"clusteringColumns":[]}'
    with pytest.raises(InvalidArgumentError, match="clustered by naming its keys"):
        t.set_properties({"delta.feature.clustering": "supported"})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cluster_by": ["nope"]}, "no column 'nope'"),
        ({"cluster_by": ["l"]}, "has type list"),
        ({"cluster_by": ["a"], "partition_by": ["s"]}, "cannot be used together"),
        ({"cluster_by": ["a", "b", "s", "a"]}, "named twice"),
        ({"cluster_by": ["a", "b", "s", "a", "b"]}, "at most 4"),
        ({"cluster_by": "a"}, "non-empty list"),
        (
            {"cluster_by": ["s"], "properties": {"delta.dataSkippingNumIndexedCols": "2"}},
            "gets no statistics",
        ),
    ],
)
def test_bad_cluster_by_is_refused_and_nothing_is_written(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        Table.create(str(tmp_path / "t"), schema=SCHEMA, **kwargs)
    assert not (tmp_path / "t").exists()


def test_cluster_by_on_a_partitioned_table_is_refused(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, partition_by=["s"])
    with pytest.raises(InvalidArgumentError, match="partitioned"):
        t.cluster_by(["a"])
    assert t.latest_version() == 0


def test_optimize_clusters_along_a_hilbert_curve_and_marks_the_files(tmp_path: Path) -> None:
    t = _filled(Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a", "b"]))
    before = t.to_arrow() if hasattr(t, "to_arrow") else t.snapshot().to_arrow()
    size = sum(f.size for f in t.snapshot().files())
    assert len(t.snapshot().files(QUERY)) == 10  # random files: every one may hold the square
    result = t.optimize(target_file_size=size // 20)
    snap = t.snapshot()
    assert (result.mode, result.curve, result.files_removed) == ("cluster", "hilbert", 10)
    assert {f.clustering_provider for f in snap.files()} == {"liquid"}
    assert {f.data_change for f in snap.files()} == {False}
    assert len(snap.files(QUERY)) <= 0.25 * len(snap.files())
    assert _sorted_rows(snap.to_arrow()) == _sorted_rows(before)
    info = _commit(t, result.version or -1)[0]["commitInfo"]
    assert info["operation"] == "OPTIMIZE"  # type: ignore[index]
    assert info["operationParameters"] == {  # type: ignore[index]
        "predicate": "[]", "zOrderBy": "[]", "clusterBy": '["a", "b"]', "auto": "false", "isFull": "false",
    }  # fmt: skip
    assert info["isolationLevel"] == "SnapshotIsolation"  # type: ignore[index]


def test_optimize_reclusters_only_unclustered_files_or_with_full_its_own(tmp_path: Path) -> None:
    t = _filled(Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a"]), files=3)
    t.optimize()
    clustered = {f.path for f in t.snapshot().files()}
    t.write(_rows(100, 99))  # a new, unclustered file
    foreign = next(f for f in t.snapshot().files() if f.path not in clustered)
    assert t.optimize().files_removed == 1  # only the new file: the clustered ones stay
    assert clustered <= {f.path for f in t.snapshot().files()}
    assert t.optimize().version is None  # nothing unclustered left
    assert foreign.clustering_provider is None  # (the new file, before its OPTIMIZE)
    assert {f.clustering_provider for f in t.snapshot().files()} == {"liquid"}  # clustered since
    live = len(t.snapshot().files())
    assert t.optimize(full=True).files_removed == live  # full: its own clustered files too


def test_another_providers_files_are_never_reclustered(tmp_path: Path) -> None:
    t = _filled(Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a"]), files=2)
    snap = t.snapshot()
    with t.transaction("OPTIMIZE", {}) as txn:  # another implementation's clustered file
        other = snap.files()[0]
        copy = f"other-{other.path}"
        shutil.copy(Path(t.uri) / other.path, Path(t.uri) / copy)
        txn.remove(other, data_change=False)
        txn.add(dataclasses.replace(other, path=copy, data_change=False, clustering_provider="zcube-x"))
        txn.rows_checked()
        txn.commit()
    t.optimize(full=True)
    assert "zcube-x" in {f.clustering_provider for f in t.snapshot().files()}


def test_zorder_orders_each_partition_and_records_zorderby(tmp_path: Path) -> None:
    schema = pa.schema([*SCHEMA, pa.field("p", pa.string())])
    t = Table.create(str(tmp_path / "t"), schema=schema, partition_by=["p"])
    for i in range(8):
        rows = _rows(4000, i)
        t.write(rows.append_column("p", pa.array(["x" if i % 2 else "y"] * rows.num_rows)))
    before = _sorted_rows(t.snapshot().to_arrow())
    size = sum(f.size for f in t.snapshot().files())
    result = t.optimize(zorder_by=["a", "b"], where="p = 'x'", target_file_size=size // 40)
    assert (result.mode, result.partitions, result.files_removed) == ("zorder", 1, 4)
    snap = t.snapshot()
    xs = snap.files("p = 'x'")
    assert len(snap.files(f"p = 'x' AND {QUERY}")) <= 0.3 * len(xs)
    assert len(snap.files("p = 'y'")) == 4  # the other partition is untouched
    assert {f.clustering_provider for f in snap.files()} == {None}
    assert _sorted_rows(snap.to_arrow()) == before
    params = _commit(t, result.version or -1)[0]["commitInfo"]["operationParameters"]  # type: ignore[index]
    assert params["zOrderBy"] == '["a", "b"]' and params["predicate"] == "[\"p = 'x'\"]"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"zorder_by": ["p"]}, "is a partition column"),
        ({"zorder_by": ["missing"]}, "no column 'missing'"),
        ({"zorder_by": ["l"]}, "has type list"),
        ({"zorder_by": ["a"], "where": "a > 3"}, "partition columns only"),
        ({"zorder_by": []}, "non-empty list"),
        ({"target_file_size": 0}, "target_file_size"),
    ],
)
def test_bad_zorder_is_refused_and_nothing_is_written(tmp_path: Path, kwargs: dict, message: str) -> None:
    schema = pa.schema([*SCHEMA, pa.field("p", pa.string())])
    t = Table.create(str(tmp_path / "t"), schema=schema, partition_by=["p"])
    rows = _rows(10, 0)
    t.write(rows.append_column("p", pa.array(["x"] * 10)))
    files = sorted(p.name for p in (tmp_path / "t").rglob("*.parquet"))
    with pytest.raises(InvalidArgumentError, match=message):
        t.optimize(**kwargs)
    assert t.latest_version() == 1
    assert sorted(p.name for p in (tmp_path / "t").rglob("*.parquet")) == files


def test_zorder_on_a_clustered_table_is_refused(tmp_path: Path) -> None:
    t = _filled(Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a"]), files=1)
    with pytest.raises(InvalidArgumentError, match="the table is clustered"):
        t.optimize(zorder_by=["b"])


def test_optimize_without_a_layout_compacts_small_files(tmp_path: Path) -> None:
    t = _filled(Table.create(str(tmp_path / "t"), schema=SCHEMA), files=4, rows=100)
    result = t.optimize()
    assert (result.mode, result.files_removed, result.files_added) == ("compact", 4, 1)
    assert t.snapshot().to_arrow().num_rows == 400


def test_delta_rs_and_delta_kernel_read_clustered_and_zordered_tables(tmp_path: Path) -> None:
    c = _filled(Table.create(str(tmp_path / "c"), schema=SCHEMA, cluster_by=["a", "b"]), files=3)
    c.optimize(target_file_size=20_000)
    z = _filled(Table.create(str(tmp_path / "z"), schema=SCHEMA), files=3)
    z.optimize(zorder_by=["b", "s"], target_file_size=20_000)
    for t in (c, z):
        ours = _sorted_rows(t.snapshot().to_arrow())
        assert _sorted_rows(DeltaTable(t.uri).to_pyarrow_table()) == ours
        assert _sorted_rows(pl.read_delta(t.uri).to_arrow()) == ours
        dt_files = DeltaTable(t.uri).file_uris()
        assert len(dt_files) == len(t.snapshot().files())


def test_we_read_and_keep_writing_a_table_delta_rs_zordered(tmp_path: Path) -> None:
    uri = str(tmp_path / "d")
    for i in range(3):
        write_deltalake(uri, _rows(2000, i).drop_columns(["l"]), mode="append")
    DeltaTable(uri).optimize.z_order(["a", "b"])
    t = Table.open(uri)
    assert t.snapshot().to_arrow().num_rows == 6000
    result = t.optimize(zorder_by=["a", "b"])
    assert result.files_removed >= 1
    assert DeltaTable(uri).to_pyarrow_table().num_rows == 6000


def _hand_built(root: Path, protocol: dict, domain: dict, conf: dict | None = None) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    meta = {
        "id": "00000000-0000-0000-0000-000000000001",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": orjson.dumps(schema).decode(),
        "partitionColumns": [],
        "configuration": conf or {},
        "createdTime": 1,
    }
    lines = [
        {"commitInfo": {"timestamp": 1, "operation": "CREATE TABLE"}},
        {"protocol": protocol},
        {"metaData": meta},
        {"domainMetadata": domain},
    ]
    (log / f"{0:020d}.json").write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")


def test_a_hand_built_clustered_log_as_the_protocol_example_is_read_and_written(tmp_path: Path) -> None:
    # PROTOCOL.md's example form: the column list flat (Delta's writers nest each path in a list).
    protocol = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["clustering", "domainMetadata"],
    }
    domain = {"domain": "delta.clustering", "configuration": '{"clusteringColumns":["id"]}', "removed": False}
    _hand_built(tmp_path / "t", protocol, domain)
    t = Table.open(str(tmp_path / "t"))
    assert t.snapshot().clustering_columns() == ["id"]
    for i in range(3):
        t.write(pa.table({"id": [3 - i, 10 + i]}))
    t.optimize()
    assert [f.clustering_provider for f in t.snapshot().files()] == ["liquid"]
    assert t.snapshot().to_arrow().column("id").to_pylist() == [1, 2, 3, 10, 11, 12]
    assert sorted(DeltaTable(t.uri).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 10, 11, 12]


def test_the_liquid_preview_is_read_but_never_written(tmp_path: Path) -> None:
    # delta-rs's table_with_liquid_clustering: Databricks' preview names, never in PROTOCOL.md.
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["domainMetadata", "liquid"]}
    config = '{"clusteringColumns":[{"physicalName":["id"]}],"domainName":"delta.liquid"}'
    domain = {"domain": "delta.liquid", "configuration": config, "removed": False}
    _hand_built(tmp_path / "t", protocol, domain, {"delta.liquid.clusteringColumns": "id"})
    t = Table.open(str(tmp_path / "t"))
    assert t.snapshot().to_arrow().num_rows == 0
    assert t.snapshot().clustering_columns() == []  # the preview's keys are not the protocol's
    with pytest.raises(UnsupportedFeatureError, match="liquid"):
        t.write(pa.table({"id": [1]}))
    with pytest.raises(UnsupportedFeatureError, match="liquid"):
        t.optimize()
    assert t.latest_version() == 0


def test_nested_keys_and_full_on_an_unclustered_table_are_refused(tmp_path: Path) -> None:
    t = _filled(Table.create(str(tmp_path / "t"), schema=SCHEMA), files=1)
    with pytest.raises(InvalidArgumentError, match="no clustering keys"):
        t.optimize(full=True)
    with t.transaction("CLUSTER BY", {}) as txn:  # a Delta-written nested key
        txn.update_protocol(
            with_writer_feature(with_writer_feature(txn.snapshot.protocol, "domainMetadata"), "clustering")
        )
        txn.stage_domain(DomainMetadata("delta.clustering", '{"clusteringColumns":[["s","x"]]}'))
        txn.commit()
    with pytest.raises(InvalidArgumentError, match="nested fields"):
        t.optimize()
    t.set_properties({"delta.appendOnly": "false"})  # other properties still settable


def test_output_files_are_deleted_when_the_commit_gives_up(tmp_path: Path) -> None:
    _filled(Table.create(str(tmp_path / "t"), schema=SCHEMA), files=3)
    t = Table.open(str(tmp_path / "t"), max_commit_attempts=1)
    t.snapshot()
    before = {p.name for p in (tmp_path / "t").glob("*.parquet")}

    class Racing:  # the table, with another writer committing after the snapshot was read
        storage = t.storage

        def snapshot(self) -> object:
            snap = t.snapshot()
            Table.open(str(tmp_path / "t")).write(_rows(10, 42))
            return snap

        def transaction(self, *a: object, **k: object) -> object:
            return t.transaction(*a, **k)  # type: ignore[arg-type]

    with pytest.raises(CommitRetriesExceededError):
        optimize_layout(Racing(), zorder_by=["a"])  # type: ignore[arg-type]
    after = {p.name for p in (tmp_path / "t").glob("*.parquet")}
    assert len(after - before) == 1  # only the racing writer's file: the OPTIMIZE output is gone
