"""Z-order and clustering of a group larger than the rewrite memory budget (issue 41, item 2): an
external sort (engine.maintenance.external_sort). Taken file by file in key order, its output holds
the rows in exactly the order the in-memory sort gives (same cut points below a million rows), with
row ids kept, deletion vectors applied, the spill folder removed, and the budget taken from the
table property or from the plan."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.engine.maintenance import external_sort, rewrite_run
from airflow_txnlog.engine.spi import write_deletion_vectors

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.int64()), ("s", pa.string())])
TINY = {"txnlog.maintenance.rewriteMemoryBytes": "1"}  # (every layout group is sorted externally)


def _rows(n: int, seed: int, start: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {"id": np.arange(start, start + n), "a": rng.integers(0, 50, n), "b": rng.integers(0, 1000, n),
         "s": [f"row {i}" for i in range(start, start + n)]},
        schema=SCHEMA,
    )  # fmt: skip


def _twins(tmp_path: Path, properties: dict[str, str], **create: Any) -> tuple[Table, Table]:
    """The same table twice: one sorted in memory, one externally (the budget property)."""
    t = Table.create(str(tmp_path / "memory"), schema=SCHEMA, properties=properties, **create)
    for i in range(6):
        t.write(_rows(3000, i, 3000 * i))
    shutil.copytree(tmp_path / "memory", tmp_path / "external")
    ext = Table.open(str(tmp_path / "external"))
    ext.set_properties(TINY)
    return t, ext


def _concatenated(t: Table, version: int, first_key: Any) -> list[tuple[Any, ...]]:
    added = [
        f
        for f in t.snapshot().files()
        if f.path not in {g.path for g in t.snapshot(version=version - 1).files()}
    ]
    tables = sorted((pq.read_table(Path(t.uri) / f.path) for f in added), key=first_key)
    return [tuple(r.values()) for tb in tables for r in tb.to_pylist()]


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many groups each external sort took (rewrite_run.write_sorted, counted)."""
    calls: list[int] = []
    real = rewrite_run.write_sorted

    def counting(*args: Any) -> Any:
        calls.append(len(args[2]))
        return real(*args)

    monkeypatch.setattr(rewrite_run, "write_sorted", counting)
    return calls


def test_an_external_zorder_gives_the_in_memory_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, external = _twins(tmp_path, {})
    calls = _counted(monkeypatch)
    size = sum(f.size for f in memory.snapshot().files())
    in_memory = memory.optimize(zorder_by=["a", "b"], target_file_size=size // 5)
    assert calls == []  # (256 MiB: in memory)
    outside = external.optimize(zorder_by=["a", "b"], target_file_size=size // 5)
    assert calls == [6]  # (the property: 1 byte, so externally)
    outputs = -(-size // (size // 5))
    assert in_memory.files_added == outputs and 2 <= outside.files_added <= outputs
    # the files, each a key range, in the order of the rows' global sort: the same rows in the same order
    order = {r[0]: i for i, r in enumerate(_concatenated(memory, in_memory.version, lambda t: 0))}
    ours = _concatenated(external, outside.version, lambda t: order[t.column("id")[0].as_py()])
    assert [r[0] for r in ours] == sorted(order, key=order.__getitem__)
    assert sorted(ours) == sorted(_concatenated(memory, in_memory.version, lambda t: 0))


def _ids(t: Table) -> list[tuple[int, int]]:
    data = t.snapshot().to_arrow(row_tracking=True)
    return sorted(zip(data.column("id").to_pylist(), data.column("_row_id").to_pylist(), strict=True))


def test_an_external_clustering_keeps_row_ids_and_drops_deleted_rows(tmp_path: Path) -> None:
    props = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "true", **TINY}
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a", "b"], properties=props)
    for i in range(4):
        t.write(_rows(2000, i, 2000 * i))
    f = t.snapshot().files()[0]
    dv = write_deletion_vectors(t.storage, {f.path: range(0, 2000, 4)})
    with t.transaction("DELETE", {"predicate": "[]"}) as txn:
        txn.remove(f)
        txn.add(dataclasses.replace(f, deletion_vector=dv[f.path]))
        txn.commit()
    before = sorted(
        map(tuple, t.snapshot().to_arrow(row_tracking=True).select(["id", "_row_id"]).to_pylist()), key=str
    )
    spills = set(Path(tempfile.gettempdir()).glob("txnlog-sort-*"))
    done = t.optimize(target_file_size=sum(g.size for g in t.snapshot().files()) // 3)
    assert done.files_removed == 4 and {g.clustering_provider for g in t.snapshot().files()} == {"liquid"}
    after = sorted(
        map(tuple, t.snapshot().to_arrow(row_tracking=True).select(["id", "_row_id"]).to_pylist()), key=str
    )
    assert after == before and len(after) == 8000 - 500
    assert set(Path(tempfile.gettempdir()).glob("txnlog-sort-*")) == spills  # (the spill folder is gone)


def test_a_planned_cluster_action_sorts_externally_past_its_plans_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a", "b"])
    for i in range(5):
        t.write(_rows(500, i, 500 * i))
    calls = _counted(monkeypatch)
    plan = t.plan_maintenance(quiet_minutes=0, rewrite_memory_bytes=1).to_dict()
    (action,) = [a for a in plan["actions"] if a["kind"] == "cluster"]
    assert action["estimate"]["rewrite_memory_bytes"] == 1
    rows = sorted(t.snapshot().to_arrow().column("id").to_pylist())
    t.run_maintenance(action, dry_run=False)
    assert calls == [5] and sorted(t.snapshot().to_arrow().column("id").to_pylist()) == rows
    with pytest.raises(InvalidArgumentError, match="rewrite_memory_bytes"):
        t.run_maintenance(
            {**action, "estimate": {**action["estimate"], "rewrite_memory_bytes": 0}}, dry_run=False
        )


def test_more_ranges_than_open_files_are_spilled_in_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, external = _twins(tmp_path, {})
    monkeypatch.setattr(external_sort, "MAX_OPEN_RANGES", 2)
    size = sum(f.size for f in memory.snapshot().files())
    outside = external.optimize(zorder_by=["b"], target_file_size=size // 5)
    assert outside.files_added >= 3  # (three passes over the inputs at least)
    assert sorted(external.snapshot().to_arrow().column("id").to_pylist()) == list(range(18000))
    keys = [
        pq.read_table(Path(external.uri) / f.path).column("b").to_pylist()
        for f in external.snapshot().files()
    ]
    assert all(k == sorted(k) for k in keys)  # (one column: the key is its rank, each file sorted by it)
    spans = sorted((min(k), max(k)) for k in keys)
    assert all(hi <= lo for (_, hi), (lo, _) in itertools.pairwise(spans))  # ranges do not overlap


def test_a_skewed_key_still_spreads_over_the_ranges_and_a_failed_sort_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranges are of (key, position): 90 % of the rows with one key value do not make one range."""
    from airflow_txnlog.engine.maintenance.rewrite_layout import RewriteLayout  # noqa: PLC0415

    schema = pa.schema([("id", pa.int64()), ("k", pa.int64())])
    t = Table.create(str(tmp_path / "t"), schema=schema)
    for i in range(8):
        k = (np.arange(1000) % 10 == 0).astype(np.int64)  # (0 for 90 % of the rows)
        t.write(pa.table({"id": np.arange(i * 1000, (i + 1) * 1000), "k": k}, schema=schema))
    snap, group = t.snapshot(), t.snapshot().files()
    adds = external_sort.write_sorted(t.storage, snap, group, 4, RewriteLayout("zorder", ("k",)))
    assert [json.loads(a.stats or "")["numRecords"] for a in adds] == [2000] * 4
    written = [pq.read_table(Path(t.uri) / a.path) for a in adds]
    ids = [i for w in written for i in w.column("id").to_pylist()]
    # the in-memory order: a stable sort by key (k = 0 first), input order within a key
    expected = sorted(range(8000), key=lambda i: (i % 1000 % 10 == 0, i))
    assert ids == expected
    files = {p.name for p in Path(t.uri).glob("*.parquet")}
    calls = [0]
    real = external_sort.write_streamed

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:
            raise OSError("the store is full")
        return real(*args, **kwargs)

    monkeypatch.setattr(external_sort, "write_streamed", failing)
    with pytest.raises(OSError, match="full"):
        external_sort.write_sorted(t.storage, snap, group, 4, RewriteLayout("zorder", ("k",)))
    assert {p.name for p in Path(t.uri).glob("*.parquet")} == files  # (its first two files deleted)
