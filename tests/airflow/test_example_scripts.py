"""Every example DAG file, run as a script on a fresh machine, runs its DAG once (issue 38, item 4).

`python dags_examples/<file>.py` with this interpreter (the repository's .venv), in an empty home
folder: no AIRFLOW_HOME, no Airflow database, no table, none of the examples' settings in the
environment. Each run must succeed and leave something to see: the table it wrote, published,
checkpointed, or the maintenance history it recorded. A new example file without a case here fails
`test_every_example_file_has_a_case`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from deltalake import DeltaTable

from airflow_txnlog import examples
from airflow_txnlog.engine import Table

pytestmark = [pytest.mark.airflow, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "dags_examples"
_DROPPED = ("AIRFLOW", "TXNLOG_", "OPENLINEAGE", "SPARK_", "PYSPARK_", "JAVA_TOOL_OPTIONS")


def _run_script(home: Path, name: str) -> str:
    """The example file run as a script with `home` as HOME and working folder; its last line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    env.update({"HOME": str(home), "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"})
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=900,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    (summary,) = [line for line in proc.stdout.splitlines() if line.startswith(f"{name[:-3]}: run ")]
    assert (home / "airflow" / "airflow.db").exists()  # Airflow's default home on a fresh machine
    return summary


def _orders(home: Path) -> Table:
    return Table.open(str(home / "airflow_txnlog_examples" / "orders"))


def _ingested(home: Path) -> None:
    t = _orders(home)
    assert [h["operation"] for h in t.history()] == ["WRITE"]  # (no partition older than 30 days)
    rows = t.snapshot().to_arrow().to_pylist()
    assert len(rows) == 50 and len({r["day"] for r in rows}) == 1  # the run's day
    quarantined = Table.open(str(home / "airflow_txnlog_examples" / "orders_quarantine")).snapshot()
    assert quarantined.to_arrow().num_rows == 2  # the two orders without a positive amount


def _merged_and_published(home: Path) -> None:
    t = _orders(home)
    ops = [h["operation"] for h in reversed(t.history())]
    assert ops == ["CREATE TABLE", "WRITE", "WRITE", "WRITE", "MERGE"]  # the seeded days, then the merge
    publication = t.publication()
    assert publication is not None and publication.version == 4
    assert t.snapshot().to_arrow(filter="customer = 'customer-new'").num_rows == 1


def _planned_and_recorded(home: Path) -> None:
    rows = DeltaTable(str(home / "airflow_txnlog_examples" / "_maintenance_history")).to_pyarrow_table()
    uris = set(rows.column("table_uri").to_pylist())
    assert uris == {f"file://{home / 'airflow_txnlog_examples' / 'orders'}"}
    assert _orders(home).latest_version() == 3  # a dry run: the plan changed nothing


def _checkpointed(home: Path) -> None:
    log = home / "airflow_txnlog_examples" / "orders" / "_delta_log"
    assert list(log.glob(f"{3:020d}.checkpoint*.parquet"))  # the seeded table's latest version


def _nothing_more(home: Path) -> None:
    assert _orders(home).latest_version() == 3  # it only reads


def _released(home: Path) -> None:
    from airflow_txnlog.engine import Releases  # noqa: PLC0415

    root = home / "airflow_txnlog_examples" / "release"
    release = Releases.open(str(root / "_releases" / "nightly")).current()
    assert release is not None and release.sequence == 0 and release.kind == "publish"
    names = {Path(uri).name: version for uri, version in release.versions.items()}
    assert names == {"customers": 0, "products": 0, "orders": 0}  # (each write made version 0)
    orders = release.snapshot(str(root / "orders")).to_arrow()
    assert orders.num_rows == 8


# file -> (tasks that must have succeeded, what the run left to see)
CASES: dict[str, tuple[set[str], Callable[[Path], None]]] = {
    "txnlog_ingest.py": ({"append_orders", "drop_old_partitions"}, _ingested),
    "txnlog_guarded_merge.py": (
        {"savepoint", "merge_corrections", "audit", "publish"},
        _merged_and_published,
    ),
    "txnlog_maintenance.py": ({"plan", "history"}, _planned_and_recorded),
    "txnlog_maintenance_fixed.py": ({"health", "checkpoint", "vacuum", "cleanup_log"}, _checkpointed),
    "txnlog_downstream.py": ({"summarize"}, _nothing_more),
    "txnlog_release.py": ({"write_orders", "audit", "no_approval_needed", "release"}, _released),
}
SPARK = {"txnlog_ingest.py", "txnlog_guarded_merge.py", "txnlog_release.py"}


def test_every_example_file_has_a_case() -> None:
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(CASES)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.spark] if n in SPARK else []) for n in sorted(CASES)]
)
def test_an_example_file_run_as_a_script_runs_its_dag_on_a_fresh_machine(tmp_path: Path, name: str) -> None:
    succeeded, check = CASES[name]
    summary = _run_script(tmp_path, name)
    assert summary.startswith(f"{name[:-3]}: run success; tasks: ")
    states = dict(item.rsplit(" ", 1) for item in summary.split("; tasks: ", 1)[1].split(", "))
    assert all(states[task] == "success" for task in succeeded), summary
    check(tmp_path)


@pytest.mark.spark
def test_the_release_example_rolls_every_table_back_when_the_audit_fails(tmp_path: Path) -> None:
    from airflow_txnlog.engine import Releases  # noqa: PLC0415

    _run_script(tmp_path, "txnlog_release.py")  # release 0: the three tables at version 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    env.update({"HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"})
    bad = subprocess.run(
        [sys.executable, str(EXAMPLES / "txnlog_release.py"), '{"inject_bad_rows": true}'],
        check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900,
    )  # fmt: skip
    assert bad.returncode == 1, (bad.stdout + bad.stderr)[-3000:]  # the audit failed the run
    summary = next(line for line in bad.stdout.splitlines() if line.startswith("txnlog_release: run "))
    assert "audit failed" in summary and "release upstream_failed" in summary, summary
    root = tmp_path / "airflow_txnlog_examples" / "release"
    log = Releases.open(str(root / "_releases" / "nightly"))
    current = log.current()
    assert current is not None and current.kind == "rollback" and current.rollback_to == 0
    for name in ("customers", "products", "orders"):  # each back to release 0's rows, as a new version
        table = str(root / name)
        assert current.version_of(table) > log.get(0).version_of(table)
        assert current.snapshot(table).to_arrow() == log.get(0).snapshot(table).to_arrow()


# ------------------------------------------------------------------ run_as_script itself, no Airflow run
def _dag(state: str) -> Any:
    run = SimpleNamespace(state=state, get_task_instances=lambda: [SimpleNamespace(task_id="t", state=state)])
    seen: dict[str, Any] = {}

    def test(run_conf: dict[str, Any] | None = None) -> Any:
        seen["conf"] = run_conf
        return run

    return SimpleNamespace(dag_id="d", fileloc=__file__, test=test, seen=seen)


def test_the_exit_code_says_whether_the_run_succeeded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(examples, "_prepare", lambda folder: None)
    for state, code in [("success", 0), ("failed", 1)]:
        dag = _dag(state)
        with pytest.raises(SystemExit) as done:
            examples.run_as_script(dag, ['{"inject_bad_rows": true}'])
        assert done.value.code == code
        assert dag.seen["conf"] == {"inject_bad_rows": True}
        assert capsys.readouterr().out == f"d: run {state}; tasks: t {state}\n"


@pytest.mark.parametrize("argv", [["{"], ["[1]"], ["{}", "{}"]])
def test_an_argument_other_than_one_json_object_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.setattr(examples, "_prepare", lambda folder: pytest.fail("prepared despite a bad argument"))
    with pytest.raises(SystemExit, match="conf as a JSON object"):
        examples.run_as_script(_dag("success"), argv)
