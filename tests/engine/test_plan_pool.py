"""Many tables planned by worker processes (issue 41, item 3: 1,000 tables in 15 s): each outcome is
the table's own plan or its own error, in the order given; a worker that dies costs only the table
it held; a caller's script without a `__main__` guard is not re-run by the workers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_txnlog.engine import InvalidArgumentError, PlanTarget, Table, plan_pool, plan_tables
from airflow_txnlog.engine.plan_worker import plan_one

SCHEMA = pa.schema([("p", pa.string()), ("x", pa.int64())])
NOW = 10**13
SETTINGS = {"quiet_minutes": 0, "now_ms": NOW}


def _tables(root: Path, n: int) -> list[str]:
    uris = []
    for i in range(n):
        t = Table.create(str(root / f"t{i}"), schema=SCHEMA, partition_by=["p"])
        for j in range(5 + i):
            t.write(pa.table({"p": ["a"] * 3, "x": [j] * 3}, schema=SCHEMA))
        uris.append(t.uri)
    return uris


def test_workers_give_each_table_its_own_plan_in_order_and_errors_stay_with_their_table(
    tmp_path: Path,
) -> None:
    uris = _tables(tmp_path, 4)
    broken = tmp_path / "broken"
    Table.create(str(broken), schema=SCHEMA).write(pa.table({"p": ["a"], "x": [1]}, schema=SCHEMA))
    (broken / "_delta_log" / f"{1:020d}.json").write_text("{not json\n")
    targets = [PlanTarget(u) for u in uris[:2]]
    targets += [PlanTarget(str(tmp_path / "missing")), PlanTarget(str(broken)), *map(PlanTarget, uris[2:])]
    pooled = plan_tables(targets, settings=SETTINGS, workers=2)
    alone = [plan_one(t, SETTINGS) for t in targets]
    assert [o.uri for o in pooled] == [t.uri for t in targets]
    assert pooled == alone  # (the same plans, errors and flags as one process makes them)
    assert [o.plan is not None for o in pooled] == [True, True, False, False, True, True]
    assert pooled[2].not_found and pooled[2].error.startswith("TableNotFoundError")
    assert not pooled[3].not_found and "LogCorruptedError" in (pooled[3].error or "")
    files = [len(o.plan["actions"][0]["files"]) for o in pooled if o.plan]
    assert files == [5, 6, 7, 8]  # (each table's own small files: 5 + i appends)


def test_a_worker_that_dies_costs_only_the_table_it_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uris = _tables(tmp_path, 5)
    # every worker reads one request's length and dies: each takes one table down with it
    dying = "import sys; sys.stdin.buffer.read(8); sys.exit(3)"
    monkeypatch.setattr(plan_pool, "_WORKER", [sys.executable, "-c", dying])
    out = plan_tables([PlanTarget(u) for u in uris], settings=SETTINGS, workers=2)
    died = [o for o in out if o.error]
    assert len(died) == 2 and all("exit code 3" in (o.error or "") for o in died)
    assert [o.uri for o in out] == uris and sum(o.plan is not None for o in out) == 3  # (the rest: here)


def test_options_that_cannot_cross_to_a_worker_are_planned_here_and_bad_workers_are_refused(
    tmp_path: Path,
) -> None:
    assert not plan_pool._crosses(PlanTarget("/t", storage_options={"token": lambda: "x"}), {})
    assert plan_pool._crosses(PlanTarget("/t", storage_options={"key": "k"}), SETTINGS)
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(InvalidArgumentError, match="workers must be a positive integer"):
            plan_tables([], workers=bad)  # type: ignore[arg-type]
    assert plan_pool._default_workers(3) == 1  # (too few tables for a worker's start)
    # a worker is this interpreter running the worker module: a fixed argv, no shell, nothing a caller gives
    assert [sys.executable, "-m", "airflow_txnlog.engine.plan_worker"] == plan_pool._WORKER


def test_a_script_without_a_main_guard_is_not_run_again_by_the_workers(tmp_path: Path) -> None:
    uris = _tables(tmp_path, 2)
    marker = tmp_path / "ran.txt"
    script = tmp_path / "plan_all.py"
    script.write_text(
        textwrap.dedent(f"""
        from airflow_txnlog.engine import PlanTarget, plan_tables
        with open({str(marker)!r}, "a") as f:
            f.write("ran\\n")
        out = plan_tables([PlanTarget(u) for u in {uris!r}], settings={SETTINGS!r}, workers=2)
        print(sum(o.plan is not None for o in out))
        """)
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "2" and marker.read_text() == "ran\n"
