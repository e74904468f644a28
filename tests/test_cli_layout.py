"""`txnlog optimize` and `txnlog cluster-by` (issue 28): Z-order by hand, clustering keys, bad
input refused with exit code 1 and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from airflow_txnlog.engine import Table
from tests.cli_support import DAY_A, WIDE, events_table, run, run_json


def test_optimize_zorders_a_partition(tmp_path: Path) -> None:
    path = events_table(tmp_path / "events")
    doc = run_json("optimize", str(path), "--zorder-by", "id,value", "--where", f"day = '{DAY_A}'")
    assert (doc["mode"], doc["columns"], doc["curve"]) == ("zorder", ["id", "value"], "zorder")
    assert (doc["files_removed"], doc["partitions"], doc["version"]) == (2, 1, 4)
    params = Table.open(str(path)).history(1)[0]["operationParameters"]
    assert json.loads(params["zOrderBy"]) == ["id", "value"]
    human = run("optimize", str(path), env=WIDE)  # no layout: compaction, nothing small enough twice
    assert human.exit_code == 0 and "optimize (compact)" in human.output


def test_cluster_by_and_optimize_a_clustered_table(tmp_path: Path) -> None:
    rows = Table.open(str(events_table(tmp_path / "e"))).snapshot().to_arrow()
    t = Table.create(str(tmp_path / "c"), schema=rows.schema)  # the same rows, not partitioned
    for i in range(3):
        t.write(rows.slice(2 * i, 2))
    assert run_json("cluster-by", t.uri, "value,id") == {"version": 4}
    assert Table.open(t.uri).snapshot().clustering_columns() == ["value", "id"]
    doc = run_json("optimize", t.uri)
    assert (doc["mode"], doc["curve"], doc["files_removed"]) == ("cluster", "hilbert", 3)
    assert {f.clustering_provider for f in Table.open(t.uri).snapshot().files()} == {"liquid"}
    assert run_json("cluster-by", t.uri, "--none") == {"version": 6}
    assert Table.open(t.uri).snapshot().clustering_columns() == []


def test_bad_layout_input_is_refused(tmp_path: Path) -> None:
    path = events_table(tmp_path / "events")
    for args, message in [
        (("optimize", str(path), "--zorder-by", "day"), "is a partition column"),
        (("optimize", str(path), "--zorder-by", "nope"), "no column 'nope'"),
        (("cluster-by", str(path), "id"), "partitioned"),
    ]:
        result = run(*args)
        assert result.exit_code == 1 and message in result.stderr, result.output
    assert Table.open(str(path)).latest_version() == 3
    both = run("cluster-by", str(path), "id", "--none")
    assert both.exit_code == 2
    assert run("cluster-by", str(path), " , ").exit_code == 2  # no column named: not a silent NONE
