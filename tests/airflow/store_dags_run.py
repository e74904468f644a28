"""Run the object-store DAGs (tests/airflow/store_dags) against one store and check what they did.

`run_and_check(store, base, options, conn, tmp_path)` seeds `<base>/orders` with rows 1-3 through
the engine, runs `<store>_write` (savepoint, Spark append, checkpoint) and `<store>_restore`
(savepoint, bad append, a failing check whose callback restores) with `dag.test()` in a fresh
interpreter whose only way to the store is the `lake_<store>` connection `conn`, then checks the
task states, the history (RESTORE, the jobs' WRITEs), the rows, the checkpoint and the savepoints.
It returns the run's whole output (task logs included) for the caller's secret checks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from airflow_txnlog.engine import Table
from tests.airflow.dag_subprocess import run_dags
from tests.conftest import SCHEMA, rows

DAGS = Path(__file__).resolve().parent / "store_dags"


def run_and_check(
    store: str, base: str, options: dict[str, Any], conn: dict[str, Any], tmp_path: Path
) -> str:
    """Run both DAGs on `store` through connection `conn`; assert their effects; return their output."""
    Table.create(f"{base}/orders", schema=SCHEMA, partition_by=["part"], storage_options=options).write(
        rows([1, 2, 3])
    )
    env = {
        f"AIRFLOW_CONN_LAKE_{store.upper()}": json.dumps({"conn_type": "txnlog", **conn}),
        "TXNLOG_TEST_STORE": store,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    states, output = run_dags(tmp_path / "airflow_home", DAGS, [f"{store}_write", f"{store}_restore"], env)
    write_states = {"run": "success", "savepoint": "success", "append": "success", "checkpoint": "success"}
    assert states[f"{store}_write"] == write_states, output[-6000:]
    assert states[f"{store}_restore"]["run"] == "failed"
    assert states[f"{store}_restore"]["append_bad"] == "success"
    t = Table.open(f"{base}/orders", storage_options=options)
    history = t.history()
    assert [h["operation"] for h in history[:3]] == ["RESTORE", "WRITE", "WRITE"]
    assert history[2]["job"]["jobId"] == f"{store}_write" and history[2]["job"]["jobName"] == "append"
    assert history[1]["job"]["jobId"] == f"{store}_restore"
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == [1, 2, 3, 100, 101, 102]
    assert t.snapshot(version=2).checkpoint_version == 2  # the checkpoint task's, on this store
    assert [s.name for s in t.savepoints()]  # the savepoints the runs took
    return output
