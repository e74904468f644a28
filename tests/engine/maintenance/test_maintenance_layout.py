"""Planned maintenance keeps the table's layout (issue 38, part 3).

A planned rewrite of a clustered table clusters (Hilbert curve over the keys, clusteringProvider set)
or is not done; the planner clusters a clustered table when its unclustered share passes
`unclustered_fraction`; a Z-ordered table's planned compaction Z-orders by the columns its log
names. The property test drives random sequences of appends, another implementation's clustering
and planned maintenance (plan, then run every action in order) and checks, after every action run,
that every file maintenance wrote is clustered, that the share of clustered bytes did not go down,
that the rows are the same and that another implementation's files were left alone.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.engine.features.table_features import with_writer_feature
from airflow_txnlog.engine.log.actions import AddFile, DomainMetadata
from airflow_txnlog.engine.maintenance.curves import layout_keys
from airflow_txnlog.engine.spi import write_deletion_vectors
from tests.storage_calls import RecordingStorage

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.int64())])
REWRITES = ("cluster", "compact", "purge_deletion_vectors")


def _rows(n: int, seed: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 1000, n), rng.integers(0, 1000, n)
    return pa.table({"id": np.arange(start, start + n), "a": a, "b": b}, schema=SCHEMA)


def _all_rows(t: Table) -> list[tuple[int, int, int]]:
    data = t.snapshot().to_arrow()
    return sorted(zip(*(data.column(c).to_pylist() for c in ("id", "a", "b")), strict=True))


def _live(t: Table) -> dict[str, AddFile]:
    return {f.path: f for f in t.snapshot().files()}


def _clustered_share(files: dict[str, AddFile]) -> tuple[int, int]:
    """(clustered bytes, all bytes): a file with any clusteringProvider counts as clustered."""
    return sum(f.size for f in files.values() if f.clustering_provider), sum(f.size for f in files.values())


def _commit(t: Table, version: int) -> dict[str, Any]:
    log = Path(t.uri) / "_delta_log" / f"{version:020d}.json"
    return next(
        a["commitInfo"] for a in map(orjson.loads, log.read_bytes().splitlines()) if "commitInfo" in a
    )


def _in_curve_order(path: Path, columns: list[str], curve: str) -> bool:
    """Whether a file's rows are in the curve's key order (cut points from those rows: the same as the
    rewrite drew from the same rows)."""
    data = pq.read_table(path)
    keys = layout_keys(data, columns, curve)
    return bool(np.all(np.diff(keys.astype(np.float64)) >= 0))


def _foreign(t: Table, f: AddFile) -> None:
    """Another implementation clusters `f`: a copy of it, marked with its own provider."""
    shutil.copy(Path(t.uri) / f.path, Path(t.uri) / f"other-{f.path}")
    with t.transaction("OPTIMIZE", {}) as txn:
        txn.remove(f, data_change=False)
        copy = dataclasses.replace(f, path=f"other-{f.path}", encoded_path=None, data_change=False)
        txn.add(dataclasses.replace(copy, clustering_provider="zcube-x"))
        txn.rows_checked()
        txn.commit()


# --------------------------------------------------------------------------- the property
class _Model:
    """A clustered table under random appends and planned maintenance, checking every action run."""

    def __init__(self, root: Path, overrides: dict[str, Any]) -> None:
        self.t = Table.create(str(root / "t"), schema=SCHEMA, cluster_by=["a", "b"])
        self.overrides = {"quiet_minutes": 0, **overrides}
        self.next_id = 0
        self.rewrites_run = 0

    def append(self, n: int, seed: int) -> None:
        self.t.write(_rows(n, seed, self.next_id))
        self.next_id += n

    def foreign(self) -> None:
        files = [f for f in self.t.snapshot().files() if f.clustering_provider is None]
        if files:
            _foreign(self.t, files[0])

    def maintain(self) -> int:
        """Plan, run every action in order; the number of rewrites the plan had."""
        plan = self.t.plan_maintenance(**self.overrides)
        rewrites = [a for a in plan.actions if a.kind in REWRITES]
        for action in rewrites:
            self._run_checked(action)
        return len(rewrites)

    def _run_checked(self, action: Any) -> None:
        before, rows = _live(self.t), _all_rows(self.t)
        version = self.t.latest_version()
        result = self.t.run_maintenance(action, dry_run=False)
        after = _live(self.t)
        added = [f for p, f in after.items() if p not in before]
        removed = [f for p, f in before.items() if p not in after]
        assert all(f.clustering_provider == "liquid" for f in added), (action.kind, added)
        assert not [f for f in removed if f.clustering_provider not in (None, "liquid")]  # another's: kept
        (c0, t0), (c1, t1) = _clustered_share(before), _clustered_share(after)
        assert c1 * t0 >= c0 * t1, (action.kind, action.rule, (c0, t0), (c1, t1))  # share never down
        assert _all_rows(self.t) == rows
        if result["version"] is not None:
            assert result["version"] == version + 1
            params = _commit(self.t, result["version"])["operationParameters"]
            assert params["clusterBy"] == '["a", "b"]' and params["zOrderBy"] == "[]"
            self.rewrites_run += 1


_APPEND = st.tuples(st.just("append"), st.integers(1, 300), st.integers(0, 2**16))
_STEP = st.one_of(  # (appends three times as likely: maintenance needs something to do)
    _APPEND,
    _APPEND,
    _APPEND,
    st.tuples(st.just("maintain"), st.just(0), st.just(0)),
    st.tuples(st.just("foreign"), st.just(0), st.just(0)),
)


@settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    steps=st.lists(_STEP, min_size=6, max_size=24),
    fraction=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    min_input_files=st.integers(2, 5),
    target=st.sampled_from([3_000, 8_000, 40_000]),
)
def test_maintenance_of_a_clustered_table_writes_clustered_files_and_never_lowers_the_share(
    steps: list[tuple[str, int, int]], fraction: float, min_input_files: int, target: int
) -> None:
    root = Path(tempfile.mkdtemp(prefix="txnlog-layout-prop-"))
    try:
        overrides = {
            "unclustered_fraction": fraction,
            "min_input_files": min_input_files,
            "target_file_size": target,
        }
        model = _Model(root, overrides)
        model.append(50, 0)
        for kind, n, seed in steps:
            if kind == "append":
                model.append(n, seed)
            elif kind == "foreign":
                model.foreign()
            else:
                model.maintain()
        rounds = [model.maintain() for _ in range(8)]  # appends stopped: maintenance settles
        assert rounds[-1] == 0 and rounds[-2] == 0, rounds
        clustered, total = _clustered_share(_live(model.t))
        assert total - clustered <= fraction * total  # (settled: the share no longer calls for clustering)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_long_random_sequences_keep_the_clustering(tmp_path: Path, seed: int) -> None:
    """The same checks over longer sequences than the property test's (fixed seeds): bursts of
    appends of mixed sizes between plans, every setting drawn per plan."""
    rng = np.random.default_rng(seed)
    model = _Model(tmp_path, {"target_file_size": 20_000})
    rewrites = 0
    for _ in range(12):
        for _ in range(int(rng.integers(0, 7))):
            model.append(int(rng.choice([1, 10, 200, 2000])), int(rng.integers(2**16)))
        if rng.random() < 0.15:
            model.foreign()
        model.overrides.update(
            unclustered_fraction=float(rng.choice([0.0, 0.1, 0.3, 1.0])),
            min_input_files=int(rng.integers(2, 6)),
        )
        rewrites += model.maintain()
    assert rewrites >= 10 and model.rewrites_run >= 10  # (the sequence did exercise maintenance)


# --------------------------------------------------------------------------- clustered tables
def _issue_table(tmp_path: Path) -> Table:
    """Issue 38's table: one file clustered by OPTIMIZE, then five new (unclustered) appends."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a", "b"])
    t.write(_rows(200, 0))
    t.optimize()
    for i in range(5):
        t.write(_rows(200, i + 1, 200 * (i + 1)))
    return t


def test_planned_compaction_of_a_clustered_table_clusters_what_it_writes(tmp_path: Path) -> None:
    t = _issue_table(tmp_path)
    rows = _all_rows(t)
    # the rule that clusters by share turned off: the compaction alone takes all six small files
    plan = t.plan_maintenance(quiet_minutes=0, unclustered_fraction=1.0)
    (action,) = [a for a in plan.actions if a.kind in REWRITES]
    assert action.kind == "compact" and len(action.files) == 6
    assert action.layout == {"mode": "cluster", "columns": ["a", "b"], "curve": "hilbert", "version": None}
    result = t.run_maintenance(action, dry_run=False)
    (out,) = t.snapshot().files()
    assert out.clustering_provider == "liquid" and not out.data_change
    assert _in_curve_order(Path(t.uri) / out.path, ["a", "b"], "hilbert")
    assert _all_rows(t) == rows
    params = _commit(t, result["version"])["operationParameters"]
    assert params == {
        "predicate": "[]", "zOrderBy": "[]", "clusterBy": '["a", "b"]', "auto": "false", "isFull": "false",
    }  # fmt: skip
    assert result["layout"]["mode"] == "cluster"


def test_the_planner_clusters_when_the_unclustered_share_passes_the_setting(tmp_path: Path) -> None:
    t = _issue_table(tmp_path)
    unclustered = sorted(f.path for f in t.snapshot().files() if f.clustering_provider is None)
    sizes = {f.path: f.size for f in t.snapshot().files()}
    share = sum(sizes[p] for p in unclustered) / sum(sizes.values())
    plan = t.plan_maintenance(quiet_minutes=0)  # default: 0.1
    cluster = plan.actions[0]  # (first: it runs before any compaction)
    assert (cluster.kind, cluster.rule, cluster.threshold) == ("cluster", "unclustered_fraction", 0.1)
    assert cluster.observed == round(share, 6) and cluster.files == unclustered
    assert not [a for a in plan.actions if a.kind == "compact"]  # the clustered file alone is healthy
    done = t.run_maintenance(cluster.to_dict(), dry_run=False)
    assert done["actual"]["files_removed"] == 5 and done["files_dropped"] == 0
    assert {f.clustering_provider for f in t.snapshot().files()} == {"liquid"}
    assert _commit(t, done["version"])["operationParameters"]["clusterBy"] == '["a", "b"]'
    again = t.plan_maintenance(quiet_minutes=0)
    (skip,) = [s for s in again.skipped if s.kind == "cluster"]
    assert skip.reason == "every file is clustered"
    # below the setting: a skip saying so, with its observed value
    high = t.plan_maintenance(quiet_minutes=0, unclustered_fraction=0.9)
    assert not [a for a in high.actions if a.kind == "cluster"]


def test_below_the_setting_a_planned_rewrite_clusters_the_rest_first(tmp_path: Path) -> None:
    """Compaction shrinks what it merges (one footer instead of five): with unclustered bytes left
    elsewhere that lowers the clustered share, so the plan clusters those first (rule with_rewrite)."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a"])
    for i in range(5):
        t.write(_rows(20, i, 20 * i))
        t.optimize()  # five small clustered files
    t.write(_rows(3000, 9, 1000))  # one big unclustered file: never a compaction input
    target = max(f.size for f in t.snapshot().files())
    shutil.copytree(tmp_path / "t", tmp_path / "copy")
    plan = t.plan_maintenance(quiet_minutes=0, target_file_size=target, unclustered_fraction=0.99)
    rewrites = [a for a in plan.actions if a.kind in REWRITES]
    assert [(a.kind, a.rule) for a in rewrites] == [
        ("cluster", "with_rewrite"),
        ("compact", "min_input_files"),
    ]
    cluster, compact = rewrites
    assert cluster.observed == 5 and cluster.threshold == 1 and not set(cluster.files) & set(compact.files)
    shares = [_clustered_share(_live(t))]
    for action in rewrites:
        t.run_maintenance(action, dry_run=False)
        shares.append(_clustered_share(_live(t)))
    assert [c * 10**6 // total for c, total in shares] == sorted(c * 10**6 // total for c, total in shares)
    assert shares[-1][0] == shares[-1][1]  # all clustered
    # without the cluster action first, the same compaction lowers the share: why the rule exists
    copy = Table.open(str(tmp_path / "copy"))
    (c0, t0) = _clustered_share(_live(copy))
    copy.run_maintenance(compact, dry_run=False)
    (c1, t1) = _clustered_share(_live(copy))
    assert c1 * t0 < c0 * t1


def _parquet_files(t: Table) -> set[str]:
    return {str(p) for p in Path(t.uri).rglob("*.parquet") if "_delta_log" not in p.parts}


def test_a_rewrite_that_would_not_keep_the_clustering_is_refused_and_nothing_is_committed(
    tmp_path: Path,
) -> None:
    t = _issue_table(tmp_path)
    action = next(
        a
        for a in t.plan_maintenance(quiet_minutes=0, unclustered_fraction=1.0).to_dict()["actions"]
        if a["kind"] == "compact"
    )
    _foreign(t, next(f for f in t.snapshot().files() if f.clustering_provider is None))
    other = next(f.path for f in t.snapshot().files() if f.clustering_provider == "zcube-x")
    version, files = t.latest_version(), _parquet_files(t)
    live = [p for p in action["bins"][0] if p in _live(t)]
    hand_made = {**action, "bins": [[*live, other]]}  # (a plan never picks another's file)
    with pytest.raises(InvalidArgumentError, match="another implementation clustered"):
        t.run_maintenance(hand_made, dry_run=False)
    with pytest.raises(InvalidArgumentError, match="mode is one of"):
        t.run_maintenance({**action, "layout": {"mode": "sorted"}}, dry_run=False)
    with pytest.raises(InvalidArgumentError, match="a cluster action needs 'files'"):
        t.run_maintenance({"kind": "cluster", "files": action["files"][0]}, dry_run=False)
    assert (t.latest_version(), _parquet_files(t)) == (version, files)


def test_clustering_keys_this_engine_cannot_order_by_mean_no_rewrite(tmp_path: Path) -> None:
    schema = pa.schema([*SCHEMA, pa.field("s", pa.struct([("x", pa.int64())]))])
    t = Table.create(str(tmp_path / "t"), schema=schema)
    for i in range(6):
        rows = _rows(30, i, 30 * i)
        t.write(rows.append_column("s", pa.array([{"x": int(v)} for v in rows.column("a").to_pylist()])))
    (action,) = [
        a for a in t.plan_maintenance(quiet_minutes=0).to_dict()["actions"] if a["kind"] == "compact"
    ]
    with t.transaction("CLUSTER BY", {}) as txn:  # a Delta-written nested key
        txn.update_protocol(
            with_writer_feature(with_writer_feature(txn.snapshot.protocol, "domainMetadata"), "clustering")
        )
        txn.stage_domain(DomainMetadata("delta.clustering", '{"clusteringColumns":[["s","x"]]}'))
        txn.commit()
    for fraction, kind in ((0.1, "cluster"), (1.0, "compact")):  # (all unclustered: either takes them)
        plan = t.plan_maintenance(quiet_minutes=0, unclustered_fraction=fraction)
        assert not [a for a in plan.actions if a.kind in REWRITES]
        (unkept,) = [s for s in plan.skipped if s.rule == "layout_kept"]
        assert unkept.kind == kind and "nested fields" in str(unkept.reason)
    version, files = t.latest_version(), _parquet_files(t)
    with pytest.raises(InvalidArgumentError, match="nested fields"):  # the plan from before the keys
        t.run_maintenance(action, dry_run=False)
    assert (t.latest_version(), _parquet_files(t)) == (version, files)


# --------------------------------------------------------------------------- Z-ordered tables
def _zordered(tmp_path: Path, **create: Any) -> Table:
    """Four files Z-ordered by (a, b) at version 5, then six small appends."""
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, **create)
    for i in range(4):
        t.write(_rows(500, i, 500 * i))
    assert t.optimize(zorder_by=["a", "b"]).version == 5
    for i in range(6):
        t.write(_rows(100, 10 + i, 2000 + 100 * i))
    return t


def test_planned_compaction_of_a_zordered_table_keeps_the_zorder(tmp_path: Path) -> None:
    t = _zordered(tmp_path)
    rows = _all_rows(t)
    fresh = Table.open(t.uri)
    recording = RecordingStorage(fresh._storage)
    fresh._storage = recording
    plan = fresh.plan_maintenance(quiet_minutes=0, target_file_size=10**6)
    assert recording.keys and all(k.startswith("_") for k in recording.keys), recording.keys  # the log only
    (action,) = [a for a in plan.actions if a.kind in REWRITES]
    assert action.layout == {"mode": "zorder", "columns": ["a", "b"], "curve": "zorder", "version": 5}
    done = t.run_maintenance(action, dry_run=False)
    assert done["layout"]["mode"] == "zorder"
    params = _commit(t, done["version"])["operationParameters"]
    assert params["zOrderBy"] == '["a", "b"]' and "clusterBy" not in params
    (out,) = [f for f in t.snapshot().files() if f.path not in {p for b in action.bins for p in b}][-1:]
    assert out.clustering_provider is None
    assert _in_curve_order(Path(t.uri) / out.path, ["a", "b"], "zorder")
    assert _all_rows(t) == rows
    # the planned compaction's commit now names the Z-order: the next plan finds it there
    for i in range(6):
        t.write(_rows(50, 30 + i, 9000 + 50 * i))
    again = [
        a for a in t.plan_maintenance(quiet_minutes=0, target_file_size=10**6).actions if a.kind == "compact"
    ]
    assert again[0].layout["version"] == done["version"]


def test_an_action_without_a_layout_reads_the_zorder_from_the_log(tmp_path: Path) -> None:
    """A hand-made action, or one from a plan older than layouts, still keeps the Z-order."""
    t = _zordered(tmp_path)
    action = next(
        a
        for a in t.plan_maintenance(quiet_minutes=0, target_file_size=10**6).to_dict()["actions"]
        if a["kind"] == "compact"
    )
    del action["layout"]
    done = t.run_maintenance(action, dry_run=False)
    assert _commit(t, done["version"])["operationParameters"]["zOrderBy"] == '["a", "b"]'


def test_a_zorder_the_schema_no_longer_has_means_no_rewrite(tmp_path: Path) -> None:
    t = _zordered(tmp_path, properties={"delta.columnMapping.mode": "name"})
    action = next(
        a
        for a in t.plan_maintenance(quiet_minutes=0, target_file_size=10**6).to_dict()["actions"]
        if a["kind"] == "compact"
    )
    t.drop_columns(["b"])
    plan = t.plan_maintenance(quiet_minutes=0, target_file_size=10**6)
    assert not [a for a in plan.actions if a.kind in REWRITES]
    (skip,) = [s for s in plan.skipped if s.kind == "compact"]
    assert skip.rule == "layout_kept" and "Z-ordered by ['a', 'b'] (version 5)" in str(skip.reason)
    version, files = t.latest_version(), _parquet_files(t)
    with pytest.raises(InvalidArgumentError, match="no column 'b'"):
        t.run_maintenance(action, dry_run=False)  # (its layout names b)
    assert (t.latest_version(), _parquet_files(t)) == (version, files)


# --------------------------------------------------------------------------- the setting
def test_unclustered_fraction_is_also_a_table_property(tmp_path: Path) -> None:
    props = {"txnlog.maintenance.unclusteredFraction": "0.9"}
    t = Table.create(str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a"], properties=props)
    assert t.plan_maintenance().settings.unclustered_fraction == 0.9
    assert t.plan_maintenance(unclustered_fraction=0.2).settings.unclustered_fraction == 0.2  # argument wins


def test_a_planned_deletion_vector_purge_of_a_clustered_table_writes_a_clustered_file(tmp_path: Path) -> None:
    t = Table.create(
        str(tmp_path / "t"), schema=SCHEMA, cluster_by=["a", "b"],
        properties={"delta.enableDeletionVectors": "true"},
    )  # fmt: skip
    t.write(_rows(2000, 5))
    (f,) = t.snapshot().files()  # (unclustered: the purge's output must be clustered all the same)
    dv = write_deletion_vectors(t.storage, {f.path: range(0, 2000, 8)})  # 12.5 % of its rows deleted
    with t.transaction("DELETE", {"predicate": '["id % 8 = 0"]'}) as txn:
        txn.remove(f)
        txn.add(dataclasses.replace(f, deletion_vector=dv[f.path]))
        txn.commit()
    rows = _all_rows(t)
    plan = t.plan_maintenance(quiet_minutes=0, target_file_size=f.size, unclustered_fraction=1.0)
    (purge,) = [a for a in plan.actions if a.kind in REWRITES]
    assert purge.kind == "purge_deletion_vectors" and purge.layout["mode"] == "cluster"
    done = t.run_maintenance(purge, dry_run=False)
    (out,) = t.snapshot().files()
    assert out.clustering_provider == "liquid" and out.deletion_vector is None
    assert _in_curve_order(Path(t.uri) / out.path, ["a", "b"], "hilbert")
    assert _all_rows(t) == rows and len(rows) == 1750
    assert _commit(t, done["version"])["operationParameters"]["clusterBy"] == '["a", "b"]'
