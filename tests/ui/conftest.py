"""A real `airflow api-server` with the provider's Tables plugin, two users and three tables.

The server runs in its own AIRFLOW_HOME with SQLite, the DAGs of tests/ui/dags (serialized by
`airflow dags reserialize`, which also records their assets) and the test auth manager
(`tests/ui/auth_manager.py`): `admin` (Admin role) and `viewer` (Viewer role, limited to the DAG
`ui_orders` and the `orders` table's asset). Tables (local, built with the engine):
- `orders`: named by a task and an asset; 14 commits, a savepoint, a restore, a schema change;
- `secret`: named only by the task of `ui_secret`;
- `other`: named only by an asset; clustered by `id`, one of its two files clustered.
The maintenance-history table (`[txnlog] maintenance_history_uri`) holds two dry-run plans of
`orders` and `other` (runs `plan_1`, `plan_2`), made by the planned-maintenance code itself; the DAG
`ui_maintenance` (planned maintenance, which the viewer may not read) has no run until a test gives
it one in flight (tests/ui/in_flight.py).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_txnlog.assets import table_asset_uri
from airflow_txnlog.engine import Table
from airflow_txnlog.engine.write.provenance import provenance
from tests.conftest import SCHEMA, rows
from tests.processes import free_port, run_python, stop

ROOT = Path(__file__).resolve().parents[2]
DAGS = Path(__file__).resolve().parent / "dags"
PASSWORDS = {"admin": "admin-pw-1", "viewer": "viewer-pw-1"}
ORDERS_VERSIONS = 14  # versions 0..13


@dataclass(frozen=True)
class Server:
    url: str
    tables: dict[str, str]  # name -> asset-form URI
    log: Path
    env: dict[str, str]  # the server's environment (for commands on its metadata database)

    def request(
        self, path: str, token: str | None = None, method: str = "GET", body: Any = None
    ) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()
        except urllib.error.URLError:  # not listening (yet)
            return 0, b""

    def json(self, path: str, token: str | None = None) -> tuple[int, Any]:
        status, body = self.request(path, token)
        return status, json.loads(body) if body else None

    def token(self, user: str) -> str:
        status, body = self.request(
            "/auth/token", method="POST", body={"username": user, "password": PASSWORDS[user]}
        )
        assert status == 201, body
        return str(json.loads(body)["access_token"])


def _build_tables(base: Path) -> dict[str, str]:
    orders = Table.create(
        str(base / "orders"),
        schema=SCHEMA,
        partition_by=["part"],
        properties={"delta.columnMapping.mode": "name"},
    )
    for i in range(8):
        orders.write(rows([i * 10 + j for j in range(3)], f"p{i % 2}"))
    orders.create_savepoint("before_merge")
    orders.write(rows([900, 901]), mode="overwrite")
    orders.restore(savepoint="before_merge")
    orders.rename_column("value", "amount")
    orders.write(pa.table({"id": [500], "amount": [1.0], "part": ["p0"]}))
    with provenance(dag_id="ui_orders", task_id="load", run_id="manual__1"):  # as an Airflow task
        orders.write(pa.table({"id": [501], "amount": [1.0], "part": ["p0"]}))
    assert orders.latest_version() == ORDERS_VERSIONS - 1
    Table.create(str(base / "secret"), schema=SCHEMA).write(rows([1, 2]))
    other = Table.create(str(base / "other"), schema=SCHEMA, cluster_by=["id"])  # clustered, in part:
    other.write(rows([1, 2]))
    other.optimize()  # this file clustered (clusteringProvider liquid) ...
    other.write(rows([3]))  # ... this one not
    return {name: table_asset_uri(str(base / name)) for name in ("orders", "secret", "other")}


def _record_plans(base: Path, history_uri: str) -> None:
    """Two dry-run planned-maintenance runs of `orders` and `other`, as the history task records them."""
    from airflow_txnlog.operators import _maintenance_history as history  # noqa: PLC0415
    from airflow_txnlog.operators._maintenance_work import STAGES, stage_actions, work_items  # noqa: PLC0415

    for n in (1, 2):
        plans = []
        for name in ("orders", "other"):
            plan = Table.open(str(base / name)).plan_maintenance(quiet_minutes=0).to_dict()
            plans.append({**plan, "asset_uri": table_asset_uri(str(base / name))})
        items = work_items(plans)
        results = [
            {"table": item["table"], "id": a["id"], "kind": a["kind"], "status": "dry_run", "seconds": 0.1,
             "result": Table.open(item["table"]).run_maintenance(a, dry_run=True)}
            for item in items for stage in STAGES for a in stage_actions(item, stage)[0]
        ]  # fmt: skip
        now = dt.datetime(2026, 11, 20 + n, tzinfo=dt.UTC)
        rows = history.history_rows(items, results, dag_id="txnlog_maintenance", run_id=f"plan_{n}",
                                    dry_run=True, now=now)  # fmt: skip
        history.append_history(history_uri, rows)


def _environment(home: Path, tables: dict[str, str]) -> dict[str, str]:
    (home / "passwords.json").write_text(json.dumps(PASSWORDS))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_", "AIRFLOW__"))}
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__AUTH_MANAGER": "tests.ui.auth_manager.LimitedViewerAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,viewer:viewer",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
            "AIRFLOW__API_AUTH__JWT_SECRET": "tables-view-test-jwt-secret-0123456789",
            "AIRFLOW__API__SECRET_KEY": "tables-view-test-secret-key",
            "TXNLOG_TEST_LIMITED_USER": "viewer",
            "TXNLOG_TEST_LIMITED_DAGS": "ui_orders",
            "TXNLOG_TEST_LIMITED_ASSETS": tables["orders"],
            "TXNLOG_UI_ORDERS": tables["orders"].removeprefix("file://"),
            "TXNLOG_UI_SECRET": tables["secret"].removeprefix("file://"),
            "TXNLOG_UI_OTHER": tables["other"].removeprefix("file://"),
            "AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI": str(home.parent / "maintenance_history"),
            "PYTHONPATH": str(ROOT),
        }
    )
    return env


def _airflow(env: dict[str, str], *args: str) -> None:
    proc = run_python(["-m", "airflow", *args], env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


@pytest.fixture(scope="session")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("tables_view")
    tables = _build_tables(work / "lake")
    _record_plans(work / "lake", str(work / "maintenance_history"))
    home = work / "airflow_home"
    home.mkdir()
    env = _environment(home, tables)
    _airflow(env, "db", "migrate")
    _airflow(env, "dags", "reserialize")
    port = free_port()
    log = work / "api-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "airflow", "api-server", "-H", "127.0.0.1", "-p", str(port), "-w", "1"],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Server(f"http://127.0.0.1:{port}", tables, log, env)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-4000:]
            if server.request("/api/v2/monitor/health")[0] == 200:
                break
            time.sleep(1)
        else:
            pytest.fail("api-server did not answer: " + log.read_text()[-4000:])
        yield server
    finally:
        stop(proc)
