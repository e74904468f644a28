"""Bulk JSON replay (engine.log.bulk_replay) gives exactly the state of the per-action replay, on every
reference table (Spark-written) whose log it accepts and on delta-rs-written logs; what it does not
accept it hands back (None), never half-replayed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_txnlog.engine.errors import TxnLogError
from airflow_txnlog.engine.log.bulk_replay import bulk_state
from airflow_txnlog.engine.log.log_reader import read_commits
from airflow_txnlog.engine.log.log_segment import list_log
from airflow_txnlog.engine.log.replay import LogState
from airflow_txnlog.engine.state.add_files import select_adds
from airflow_txnlog.engine.storage import storage_for

from .conftest import GOLDEN_ROOT


def _both(root: Path) -> tuple[LogState | None, LogState]:
    storage = storage_for(str(root))
    listing = list_log(storage)
    commits = sorted(listing.commits.items())
    reference = LogState(version=-1).apply_many(
        [(c.version, c.actions, c.name) for c in read_commits(storage, commits)]
    )
    return bulk_state(storage, commits, min_commits=1), reference


def _view(state: LogState) -> dict[str, Any]:
    tomb = state.live_removes()
    return {
        "version": state.version,
        "protocol": state.protocol,
        "metadata": state.metadata,
        "txns": state.txns,
        "domains": state.domains,
        "infos": sorted(state.commit_infos),
        "keys": state.live_add_keys().to_pylist(),
        "files": select_adds(state),
        "sizes": state.live_add_sizes().to_pylist(),
        "tombstones": sorted(
            zip(tomb.column("key").to_pylist(), tomb.column("deletion_timestamp").to_pylist(), strict=True)
        ),
    }


def _golden_logs() -> list[str]:
    return sorted(p.parent.name for p in GOLDEN_ROOT.glob("*/_delta_log") if any(p.glob("*.json")))


def test_bulk_replay_equals_per_action_replay_on_reference_tables() -> None:
    used, handed_back, unreadable = [], [], []
    for name in _golden_logs():
        try:
            bulk, reference = _both(GOLDEN_ROOT / name)
        except TxnLogError:
            unreadable.append(name)  # a log the per-action replay refuses too (tested elsewhere)
            continue
        if bulk is None:
            handed_back.append(name)
            continue
        assert _view(bulk) == _view(reference), name
        used.append(name)
    print(f"bulk replay on {len(used)} reference logs, handed back {len(handed_back)}: {handed_back}")
    assert len(used) >= 40  # most Spark-written logs are plain adds and removes


@pytest.mark.parametrize("partition_by", [None, ["p"], ["p", "q"]])
def test_bulk_replay_equals_per_action_replay_on_deltars_logs(tmp_path: Path, partition_by: Any) -> None:
    root = tmp_path / "t"
    for i in range(6):
        data = pa.table({"id": [i, i + 100], "p": [f"a{i % 2}", None], "q": [i % 3, i]})
        mode = "overwrite" if i == 3 else "append"
        write_deltalake(str(root), data, mode=mode, partition_by=partition_by if i == 0 else None)
    bulk, reference = _both(root)
    assert bulk is not None
    assert _view(bulk) == _view(reference)
    assert len(reference.live_add_keys()) > 0 and reference.live_removes().num_rows > 0


def test_a_line_it_does_not_know_is_handed_back(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"id": [1]}))
    write_deltalake(str(root), pa.table({"id": [2]}), mode="append")
    log = root / "_delta_log" / f"{1:020d}.json"
    lines = log.read_text().splitlines()
    tagged = [ln.replace('"tags":null', '"tags":{"k":"v"}', 1) for ln in lines]
    log.write_text("\n".join(tagged) + "\n")
    bulk, reference = _both(root)
    assert bulk is None  # tags are a map the JSON reader cannot build: the per-action replay does it
    assert [f.tags for f in select_adds(reference)] == [None, {"k": "v"}]


def _api_view(t: Any) -> dict[str, Any]:
    snap = t.snapshot()
    return {
        "keys": snap.file_keys().to_pylist(),
        "meta": snap.add_actions().drop_columns(["modification_time"]).to_pylist(),
        "pruned": [f.path for f in snap.files(filter="id >= 20 AND id < 45")],
        "files": snap.files(),
        "tombstones": snap.tombstone_table().to_pylist(),
        "rows": sorted(snap.to_arrow().column("id").to_pylist()),
        "size": snap.size_bytes,
    }


def test_a_table_loaded_in_bulk_works_like_one_replayed_per_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our own writer's log of 40 commits, no checkpoint: opened in bulk and per action, every view
    agrees; a commit on top, a checkpoint and a reopen keep agreeing."""
    from airflow_txnlog.engine import Table  # noqa: PLC0415
    from airflow_txnlog.engine.log import bulk_replay  # noqa: PLC0415

    root = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    props = {"delta.checkpointInterval": "1000"}
    t = Table.create(root, schema=schema, partition_by=["p"], properties=props)
    for i in range(40):
        mode = "overwrite" if i == 25 else "append"
        t.write(pa.table({"id": [i, i + 1], "p": [f"v{i % 4}", None]}, schema=schema), mode=mode)
    bulk = Table.open(root)
    assert bulk.snapshot().state.source is None and not bulk.snapshot().state.tail  # the bulk layout
    monkeypatch.setattr(bulk_replay, "MIN_COMMITS", 10**9)
    per_action = Table.open(root)
    assert per_action.snapshot().state.tail  # the per-action layout
    assert _api_view(bulk) == _api_view(per_action)
    bulk.write(pa.table({"id": [99], "p": ["v9"]}, schema=schema))
    per_action.snapshot()  # (refresh)
    assert _api_view(bulk) == _api_view(per_action)
    bulk.checkpoint()
    # (a checkpoint's adds carry dataChange=false, as Spark writes them: the one expected difference)
    reopened, before = _api_view(Table.open(root)), _api_view(per_action)
    for view in (reopened, before):
        view["files"] = [dataclasses.replace(f, data_change=True) for f in view["files"]]
        for row in view["meta"]:
            row.pop("data_change")
    assert reopened == before
