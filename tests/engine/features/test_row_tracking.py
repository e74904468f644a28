"""Row tracking (issue 28, item 2), engine side: ids assigned as PROTOCOL.md "Row Tracking" says,
the backfill when it is enabled, re-basing after a lost race, disjoint ids from concurrent processes,
ids and commit versions kept by OPTIMIZE and restore, hand-built logs read as the protocol says,
and delta-rs / polars-deltalake still reading what we write."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from airflow_txnlog.engine import ConcurrentAppendError, InvalidArgumentError, Table
from airflow_txnlog.engine.spi import write_data_files
from airflow_txnlog.engine.write import alter_table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
ON = {"delta.enableRowTracking": "true"}


def _rows(keys: list[int]) -> pa.Table:
    return pa.table({"k": keys, "v": [f"v{k}" for k in keys]}, schema=SCHEMA)


def _commit(t: Table, version: int) -> list[dict[str, object]]:
    log = Path(t.uri) / "_delta_log" / f"{version:020d}.json"
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


def _ids(t: Table) -> dict[int, tuple[int, int]]:
    """key -> (stable row id, stable row commit version)."""
    d = t.snapshot().to_arrow(row_tracking=True)
    return dict(
        zip(
            d["k"].to_pylist(),
            zip(d["_row_id"].to_pylist(), d["_row_commit_version"].to_pylist(), strict=True),
            strict=True,
        )
    )


def _mark(t: Table) -> int:
    return int(orjson.loads(t.snapshot().domain_metadata()["delta.rowTracking"])["rowIdHighWaterMark"])


def test_enabling_an_existing_table_backfills_its_files_in_the_same_commit(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(_rows([1, 2, 3]))
    t.write(_rows([4, 5]))
    v = t.set_properties(ON)
    actions = _commit(t, v)
    protocol = next(a["protocol"] for a in actions if "protocol" in a)
    assert {"rowTracking", "domainMetadata"} <= set(protocol["writerFeatures"])  # type: ignore[index]
    conf = next(a["metaData"] for a in actions if "metaData" in a)["configuration"]  # type: ignore[index]
    assert conf["delta.rowTracking.materializedRowIdColumnName"].startswith("_row-id-col-")
    assert conf["delta.rowTracking.materializedRowCommitVersionColumnName"].startswith(
        "_row-commit-version-col-"
    )
    adds = [a["add"] for a in actions if "add" in a]
    assert sorted((a["baseRowId"], a["defaultRowCommitVersion"], a["dataChange"]) for a in adds) == [  # type: ignore[index]
        (0, v, False),
        (3, v, False),
    ]
    domain = next(a["domainMetadata"] for a in actions if "domainMetadata" in a)
    assert domain == {
        "domain": "delta.rowTracking",
        "configuration": '{"rowIdHighWaterMark":4}',
        "removed": False,
    }
    assert sorted(i for i, _ in _ids(t).values()) == [0, 1, 2, 3, 4]


def test_appends_get_ids_above_the_mark_and_their_own_commit_version(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=ON)
    v1 = t.write(_rows([1, 2]))
    v2 = t.write(_rows([3, 4, 5]))
    assert _ids(t) == {1: (0, v1), 2: (1, v1), 3: (2, v2), 4: (3, v2), 5: (4, v2)}
    assert _mark(t) == 4
    info = _commit(t, v2)[0]["commitInfo"]
    assert info["tags"]["delta.rowTracking.preserved"] == "true"  # type: ignore[index]  (nothing copied)


def test_a_commit_that_loses_a_race_is_rebased_past_the_winners_mark(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=ON)
    t.write(_rows([1]))
    slow = Table.open(t.uri)
    txn = slow.transaction("WRITE", {"mode": "Append"})
    for add in write_data_files(slow.storage, _rows([10, 11, 12]), [], {}, max_rows_per_file=100):
        txn.add(add)
    winner = Table.open(t.uri).write(_rows([20, 21]))  # takes ids 1..2 first
    ours = txn.commit()
    assert ours == winner + 1 and txn.attempts == 2
    ids = _ids(t)
    assert [ids[k][0] for k in (20, 21)] == [1, 2]
    assert [ids[k] for k in (10, 11, 12)] == [(3, ours), (4, ours), (5, ours)]
    assert _mark(t) == 5


def test_concurrent_appends_from_processes_get_disjoint_ids(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=ON)
    code = textwrap.dedent(
        """
        import sys, pyarrow as pa
        from airflow_txnlog.engine import Table
        t, base = Table.open(sys.argv[1]), int(sys.argv[2])
        for i in range(5):
            keys = [base + 10 * i + j for j in range(10)]
            t.write(pa.table({"k": keys, "v": [str(k) for k in keys]}))
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, t.uri, str(1000 * p)]) for p in range(4)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    ids = _ids(t)
    assert len(ids) == 200
    assert sorted(i for i, _ in ids.values()) == list(range(200))  # disjoint, no gap
    assert _mark(t) == 199
    assert all(f.base_row_id is not None for f in t.snapshot().files())


@pytest.mark.parametrize("how", ["zorder", "planned"])
def test_optimize_keeps_every_rows_id_and_commit_version(tmp_path: Path, how: str) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=ON)
    for i in range(6):
        t.write(_rows([10 * i + j for j in range(5)]))
    before = _ids(t)
    if how == "zorder":
        v = t.optimize(zorder_by=["v", "k"]).version
    else:
        plan = t.plan_maintenance(quiet_minutes=0, min_input_files=2)
        (action,) = [a for a in plan.to_dict()["actions"] if a["kind"] == "compact"]
        v = t.run_maintenance(action, dry_run=False)["version"]
    assert v is not None
    assert _ids(t) == before
    assert _commit(t, v)[0]["commitInfo"]["tags"]["delta.rowTracking.preserved"] == "true"  # type: ignore[index]
    (new,) = t.snapshot().files()  # 30 small rows: one file
    assert new.default_row_commit_version == v and new.base_row_id is not None and new.base_row_id > 29
    names = pq.read_schema(Path(t.uri) / new.path).names
    assert names[:2] == ["k", "v"] and any(n.startswith("_row-id-col-") for n in names)
    assert "_row-id" not in (new.stats or "")  # the hidden columns get no stats


def test_restore_brings_back_the_ids_of_the_version(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=ON)
    t.write(_rows([1, 2]))
    v = t.write(_rows([3]))
    at_v = _ids(t)
    t.write(_rows([4]), mode="overwrite")
    t.restore(version=v)
    assert _ids(t) == at_v
    assert _mark(t) == 3  # the overwrite's id stays used: the mark never goes back


def test_suspended_row_tracking_assigns_nothing(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.set_properties({"delta.feature.rowTracking": "supported", "delta.rowTrackingSuspended": "true"})
    t.write(_rows([1]))
    assert [f.base_row_id for f in t.snapshot().files()] == [None]
    with pytest.raises(InvalidArgumentError, match="cannot both be true"):
        t.set_properties(ON)


def test_supported_but_not_enabled_assigns_ids_without_the_tag(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    v = t.set_properties({"delta.feature.rowTracking": "supported"})
    w = t.write(_rows([1, 2]))
    assert [(f.base_row_id, f.default_row_commit_version) for f in t.snapshot().files()] == [(0, w)]
    assert "delta.rowTracking.preserved" not in str(_commit(t, w)[0])  # (enabled tables only)
    assert v < w
    with pytest.raises(InvalidArgumentError, match="row tracking enabled"):
        t.snapshot().to_arrow(row_tracking=True)


def test_enabling_loses_to_an_append_that_has_no_ids(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.write(_rows([1]))
    stale = t.snapshot()
    Table.open(t.uri).write(_rows([2]))  # a writer that read the old protocol: no row ids
    with pytest.raises(ConcurrentAppendError, match="without row ids"):
        alter_table.set_properties(lambda op, p: t.transaction(op, p, snapshot=stale), ON)
    assert "delta.enableRowTracking" not in t.snapshot().metadata.configuration
    t.set_properties(ON)  # on the latest version: both files numbered
    assert sorted(i for i, _ in _ids(t).values()) == [0, 1]


def _hand_built(root: Path) -> None:
    """PROTOCOL.md's shape: feature + domain + names, a file with baseRowId 100 whose materialized
    id column holds 7 for its second row (a preserved id) and nulls elsewhere."""
    (root / "_delta_log").mkdir(parents=True)
    hidden_id, hidden_version = "_row-id-col-x", "_row-commit-version-col-x"
    data = pa.table(
        {"k": [1, 2, 3], "v": ["a", "b", "c"], hidden_id: pa.array([None, 7, None], pa.int64()),
         hidden_version: pa.array([None, 0, None], pa.int64())}
    )  # fmt: skip
    pq.write_table(data, root / "part-0.parquet")
    schema = {
        "type": "struct",
        "fields": [
            {"name": "k", "type": "long", "nullable": True, "metadata": {}},
            {"name": "v", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    conf = {**ON, "delta.rowTracking.materializedRowIdColumnName": hidden_id,
            "delta.rowTracking.materializedRowCommitVersionColumnName": hidden_version}  # fmt: skip
    stats = (
        '{"numRecords":3,"minValues":{"k":1,"v":"a"},"maxValues":{"k":3,"v":"c"},"nullCount":{"k":0,"v":0}}'
    )
    lines = [
        {"commitInfo": {"timestamp": 1, "operation": "WRITE"}},
        {
            "protocol": {
                "minReaderVersion": 1,
                "minWriterVersion": 7,
                "writerFeatures": ["domainMetadata", "rowTracking"],
            }
        },
        {
            "metaData": {
                "id": "rt-1",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": orjson.dumps(schema).decode(),
                "partitionColumns": [],
                "configuration": conf,
                "createdTime": 1,
            }
        },
        {
            "domainMetadata": {
                "domain": "delta.rowTracking",
                "configuration": '{"rowIdHighWaterMark":102}',
                "removed": False,
            }
        },
        {
            "add": {
                "path": "part-0.parquet",
                "partitionValues": {},
                "size": (root / "part-0.parquet").stat().st_size,
                "modificationTime": 1,
                "dataChange": True,
                "stats": stats,
                "baseRowId": 100,
                "defaultRowCommitVersion": 3,
            }
        },
    ]
    (root / "_delta_log" / f"{0:020d}.json").write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")


def test_a_hand_built_log_reads_as_the_protocol_says_and_keeps_being_written(tmp_path: Path) -> None:
    _hand_built(tmp_path / "t")
    t = Table.open(str(tmp_path / "t"))
    assert _ids(t) == {1: (100, 3), 2: (7, 0), 3: (102, 3)}  # materialized wins where not null
    v = t.write(_rows([4]))
    assert _ids(t)[4] == (103, v) and _mark(t) == 103
    t.optimize()  # compaction keeps the preserved id 7 and the commit version 0
    assert _ids(t) == {1: (100, 3), 2: (7, 0), 3: (102, 3), 4: (103, v)}


def test_delta_rs_and_polars_read_a_row_tracked_table(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=ON)
    for i in range(3):
        t.write(_rows([i]))
    t.optimize()
    assert sorted(DeltaTable(t.uri).to_pyarrow_table().column("k").to_pylist()) == [0, 1, 2]
    assert DeltaTable(t.uri).to_pyarrow_table().column_names == ["k", "v"]  # hidden columns stay hidden
    assert sorted(pl.read_delta(t.uri)["k"].to_list()) == [0, 1, 2]


def test_the_hidden_column_names_are_set_once(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="non-empty"):
        Table.create(
            str(tmp_path / "e"),
            schema=SCHEMA,
            properties={**ON, "delta.rowTracking.materializedRowIdColumnName": ""},
        )
    assert not (tmp_path / "e").exists()
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=ON)
    for name in ("k", "_other"):  # a data column's name, or a rename of files' hidden column
        with pytest.raises(InvalidArgumentError, match="set once"):
            t.set_properties({"delta.rowTracking.materializedRowIdColumnName": name})
    assert t.latest_version() == 0


def test_enabling_loses_to_an_append_made_while_tracking_was_suspended(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA)
    t.set_properties({"delta.feature.rowTracking": "supported", "delta.rowTrackingSuspended": "true"})
    stale = t.snapshot()
    Table.open(t.uri).write(_rows([1]))  # suspended: no ids
    switch = {"delta.enableRowTracking": "true", "delta.rowTrackingSuspended": "false"}
    with pytest.raises(ConcurrentAppendError, match="without row ids"):
        alter_table.set_properties(lambda op, p: t.transaction(op, p, snapshot=stale), switch)
    t.set_properties(switch)
    assert [i for i, _ in _ids(t).values()] == [0]


def test_a_preset_base_row_id_moves_the_mark(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=ON)
    t.write(_rows([1, 2]))  # ids 0, 1
    with t.transaction("WRITE", {"mode": "Append"}) as txn:
        (add,) = write_data_files(t.storage, _rows([3, 4, 5]), [], {}, max_rows_per_file=10)
        txn.add(dataclasses.replace(add, base_row_id=5))  # a caller's own numbering: 5..7
        txn.commit()
    assert _mark(t) == 7
    t.write(_rows([6]))
    assert _ids(t)[6][0] == 8  # never one of 5..7
    assert len({i for i, _ in _ids(t).values()}) == 6


def test_checkpoints_keep_the_row_ids_of_removes(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, properties=ON)
    t.write(_rows([1, 2]))
    t.write(_rows([3]), mode="overwrite")
    t.checkpoint()
    (cp,) = (Path(t.uri) / "_delta_log").glob("*.checkpoint.parquet")
    removes = [r["remove"] for r in pq.read_table(cp, columns=["remove"]).to_pylist() if r["remove"]]
    assert [(r["baseRowId"], r["defaultRowCommitVersion"]) for r in removes] == [(0, 1)]
