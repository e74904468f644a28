"""The deployment under test: a private PostgreSQL cluster (or SQLite), a standalone Spark cluster
and Airflow's four services.

Everything lives in one temporary folder: the cluster's data and its Unix socket (TCP is off, so
parallel checks cannot clash on a port), AIRFLOW_HOME, the dags folder (symlinks to the example DAGs
and the check's own DAGs), the tables and the logs. Each service is started in its own session, its
PID kept, and stopped by that PID's process group at the end (LocalExecutor workers, uvicorn and task
supervisors are children of the services), also when the check fails. PostgreSQL refuses to run as
root, so initdb/pg_ctl run as the `postgres` user when the check runs as root.

The Spark cluster (`SparkCluster`, also tests/spark/test_cluster.py's) is a master and one worker on
127.0.0.1, each a JVM started from pyspark's own `bin/spark-class` (no Spark download), each in its
own session and stopped by its process group like the services (the worker's executors and their
Python workers are its children). Planned maintenance sends its data rewrites there through the
`txnlog_spark_cluster` connection (`Stack.environment()`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
PG_BIN_DIRS = ("/usr/local/bin", "/usr/lib/postgresql/15/bin", "/usr/bin")
DAG_SOURCES = (ROOT / "dags_examples", ROOT / "tests" / "deployment" / "dags")
SERVICES = ("api-server", "scheduler", "dag-processor", "triggerer")


def _pg_tool(name: str) -> str | None:
    for folder in PG_BIN_DIRS:
        path = Path(folder) / name
        if path.exists():
            return str(path)
    return shutil.which(name)


def postgres_available() -> bool:
    """Server binaries present (and, as root, a `postgres` user to run them)."""
    if not all(_pg_tool(n) for n in ("initdb", "pg_ctl", "postgres")):
        return False
    if os.geteuid() == 0:
        return subprocess.run(["id", "-u", "postgres"], capture_output=True, check=False).returncode == 0
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresCluster:
    """initdb + pg_ctl in `folder`, Unix socket only, trust auth for the local superuser."""

    folder: Path
    port: int = field(default_factory=free_port)  # names the socket file; TCP stays off

    def _as_owner(self, *cmd: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else list(cmd)

    @property
    def user(self) -> str:
        return "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")

    def start(self) -> None:
        self.folder.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, user="postgres")
        data = self.folder / "data"
        run = subprocess.run
        init = [str(_pg_tool("initdb")), "-D", str(data), "-A", "trust", "-U", self.user, "-E", "UTF8"]
        run(self._as_owner(*init), check=True, capture_output=True)
        opts = f"-c listen_addresses='' -c unix_socket_directories={self.folder} -p {self.port}"
        opts += " -c fsync=off -c synchronous_commit=off -c max_connections=200"
        ctl = [str(_pg_tool("pg_ctl")), "-D", str(data), "-l", str(self.folder / "postgres.log")]
        run(self._as_owner(*ctl, "-o", opts, "-w", "start"), check=True, capture_output=True)
        createdb = _pg_tool("createdb") or "createdb"
        run(
            self._as_owner(
                createdb, "-h", str(self.folder), "-p", str(self.port), "-U", self.user, "airflow"
            ),
            check=True,
            capture_output=True,
        )

    def url(self) -> str:
        return f"postgresql+psycopg2://{self.user}@/airflow?host={self.folder}&port={self.port}"

    def stop(self) -> None:
        if (self.folder / "data" / "postmaster.pid").exists():
            ctl = [str(_pg_tool("pg_ctl")), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop"]
            subprocess.run(self._as_owner(*ctl), check=False, capture_output=True, timeout=60)


@dataclass
class SparkCluster:
    """A standalone Spark cluster on 127.0.0.1: a master and one worker (`cores`, `memory`) whose
    executors run Python on this interpreter; logs `spark-master.log` and `spark-worker.log` in
    `folder`, the executors' output under `folder/spark-work`."""

    folder: Path
    cores: int = 1
    memory: str = "1g"
    port: int = field(default_factory=free_port)
    webui_port: int = field(default_factory=free_port)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def log(self, role: str) -> Path:
        return self.folder / f"spark-{role}.log"

    def start(self, timeout: float = 120) -> None:
        """The master, then the worker; returns once the worker has registered with the master (raises
        with the worker's log otherwise; `stop()` stops what was started in either case)."""
        spec = importlib.util.find_spec("pyspark")  # (not imported: the JVMs need only its files)
        if spec is None or spec.origin is None:
            raise RuntimeError("pyspark is not installed: no spark-class to start a cluster with")
        home = Path(spec.origin).parent
        env = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_WORKER_DIR": str(self.folder / "spark-work"),
        }
        roles = {
            "master": ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                       "--port", str(self.port), "--webui-port", str(self.webui_port)],
            "worker": ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                       "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(free_port())],
        }  # fmt: skip
        for role, args in roles.items():
            with self.log(role).open("wb") as handle:
                self.procs[role] = subprocess.Popen(
                    [str(home / "bin" / "spark-class"), *args],
                    env=env,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        deadline = time.monotonic() + timeout
        while "Successfully registered with master" not in self.log("worker").read_text(errors="replace"):
            dead = [role for role, proc in self.procs.items() if proc.poll() is not None]
            if dead or time.monotonic() > deadline:
                tail = self.log("worker").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the Spark worker did not register (exited: {dead}): {tail}")
            time.sleep(0.5)

    def applications(self) -> list[dict[str, Any]]:
        """The applications the master has seen, running and completed (its web UI's JSON)."""
        url = f"http://127.0.0.1:{self.webui_port}/json/"
        with urllib.request.urlopen(url, timeout=10) as resp:
            state = json.load(resp)
        return [*state.get("activeapps", []), *state.get("completedapps", [])]

    def stop(self, grace: float = 30) -> None:
        stop_groups(self.procs, grace)


@dataclass
class Stack:
    """The temporary folder, the metadata DB and the Airflow services of one check."""

    use_postgres: bool
    asyncio_debug: bool = False
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="txnlog-deploy-")))
    port: int = field(default_factory=free_port)
    log_ports: tuple[int, int] = field(default_factory=lambda: (free_port(), free_port()))
    pids: dict[str, int] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    cluster: PostgresCluster | None = None
    spark: SparkCluster = field(init=False)  # (its ports are known before it starts: environment())
    # one set of secrets for every process: tokens signed by one are checked by the others
    keys: tuple[str, str] = field(default_factory=lambda: (secrets.token_hex(16), secrets.token_hex(32)))

    def __post_init__(self) -> None:
        self.spark = SparkCluster(self.tmp / "logs")

    @property
    def home(self) -> Path:
        return self.tmp / "airflow_home"

    @property
    def table(self) -> Path:
        return self.tmp / "tables" / "orders"

    @property
    def history(self) -> Path:
        return self.tmp / "tables" / "_maintenance_history"

    @property
    def watched(self) -> Path:
        return self.tmp / "tables" / "watched"

    @property
    def release(self) -> Path:
        """txnlog_release's three tables and its release log."""
        return self.tmp / "tables" / "release"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self, service: str) -> Path:
        return self.tmp / "logs" / f"{service}.log"

    def db_label(self) -> str:
        if self.cluster is not None:
            return (
                f"PostgreSQL 15 (private cluster, socket {self.cluster.folder}/.s.PGSQL.{self.cluster.port})"
            )
        return f"SQLite ({self.home / 'airflow.db'})"

    def environment(self) -> dict[str, str]:
        """Airflow's settings as AIRFLOW__* variables: small parallelism, short poll intervals."""
        tmp_os = os.environ.copy()
        db = self.cluster.url() if self.cluster else f"sqlite:///{self.home / 'airflow.db'}"
        settings = {
            "CORE__DAGS_FOLDER": str(self.tmp / "dags"),
            "CORE__EXECUTOR": "LocalExecutor",
            "CORE__PARALLELISM": "3",
            "CORE__LOAD_EXAMPLES": "False",
            "CORE__UNIT_TEST_MODE": "False",
            "CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
            "CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "CORE__FERNET_KEY": "",
            "DATABASE__SQL_ALCHEMY_CONN": db,
            "API__HOST": "127.0.0.1",
            "API__PORT": str(self.port),
            "API__WORKERS": "1",
            "API__BASE_URL": self.base_url,
            "API__SECRET_KEY": self.keys[0],
            "API_AUTH__JWT_SECRET": self.keys[1],
            "DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "60",
            "DAG_PROCESSOR__PARSING_PROCESSES": "1",
            "SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "SCHEDULER__TASK_QUEUED_TIMEOUT": "300",
            "TRIGGERER__JOB_HEARTBEAT_SEC": "2",
            "LOGGING__LOGGING_LEVEL": "INFO",
            # the log servers of the workers and the triggerer: private ports, not 8793/8794
            "LOGGING__WORKER_LOG_SERVER_PORT": str(self.log_ports[0]),
            "LOGGING__TRIGGER_LOG_SERVER_PORT": str(self.log_ports[1]),
        }
        env = {**tmp_os, **{f"AIRFLOW__{k}": v for k, v in settings.items()}}
        env.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "TXNLOG_EXAMPLE_TABLE": str(self.table),
                "TXNLOG_DEPLOY_WATCHED_TABLE": str(self.watched),
                "TXNLOG_EXAMPLE_RELEASE": str(self.release),
                # planned maintenance: the catalog through this api-server (all-admins token),
                # acting, with thresholds the example's small tables reach
                "AIRFLOW_CONN_TXNLOG_AIRFLOW_API": self.base_url,
                "AIRFLOW__TXNLOG__MAINTENANCE_HISTORY_URI": str(self.history),
                "TXNLOG_MAINTENANCE_DRY_RUN": "false",
                "TXNLOG_MAINTENANCE_SETTINGS": '{"quiet_minutes": 0, "min_input_files": 2}',
                # ... and every data rewrite it plans on the standalone Spark cluster
                "AIRFLOW_CONN_TXNLOG_SPARK_CLUSTER": json.dumps(self.spark_connection()),
                "TXNLOG_MAINTENANCE_SPARK_CONN_ID": "txnlog_spark_cluster",
                "TXNLOG_MAINTENANCE_SPARK_MIN_BYTES": "0",
                "SPARK_LOCAL_IP": "127.0.0.1",
                "PYSPARK_PYTHON": sys.executable,
                "PATH": f"{VENV_BIN}{os.pathsep}{tmp_os.get('PATH', '')}",
                "PYTHONUNBUFFERED": "1",
            }
        )
        for name in [k for k in env if k.startswith("AIRFLOW_CTX_")]:
            del env[name]  # a stale task context would name the wrong writer in commitInfo
        return env

    def spark_connection(self) -> dict[str, Any]:
        """A `spark` connection to the standalone cluster: host and port make the master URL, the
        extras Spark conf (the driver runs in the task, the executors' Python is this venv's)."""
        extra = {
            "spark.driver.host": "127.0.0.1",
            "spark.executor.memory": "1g",
            "spark.pyspark.python": sys.executable,
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
        }
        return {"conn_type": "spark", "host": "spark://127.0.0.1", "port": self.spark.port, "extra": extra}

    def prepare(self) -> None:
        """Folders, the dags folder (symlinks), the metadata DB server when PostgreSQL is used, and the
        Spark cluster."""
        os.chmod(self.tmp, 0o755)  # the postgres user must reach its cluster folder inside
        for sub in ("dags", "logs", "tables", "airflow_home"):
            (self.tmp / sub).mkdir()
        for source in DAG_SOURCES:
            for path in sorted(source.glob("*.py")):
                (self.tmp / "dags" / path.name).symlink_to(path)
        if self.use_postgres:
            self.cluster = PostgresCluster(self.tmp / "pg")
            self.cluster.start()
        self.spark.start()

    def airflow(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """One `airflow` CLI command (raises with its output when it fails)."""
        cmd = [str(VENV_BIN / "airflow"), *args]
        out = subprocess.run(
            cmd, env=self.environment(), capture_output=True, text=True, timeout=timeout, check=False
        )
        if out.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        return out

    def start(self, env: Mapping[str, str]) -> None:
        """The four services, each in its own session (its PID is its process group's id)."""
        for service in SERVICES:
            handle = self.log(service).open("wb")
            service_env = dict(env)
            if service == "triggerer" and self.asyncio_debug:
                service_env["PYTHONASYNCIODEBUG"] = "1"  # asyncio logs each callback slower than 0.1 s
            proc = subprocess.Popen(
                [str(VENV_BIN / "airflow"), service],
                env=service_env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.tmp,
            )
            handle.close()
            self.procs[service] = proc
            self.pids[service] = proc.pid

    def dead_services(self) -> list[str]:
        return [name for name, proc in self.procs.items() if proc.poll() is not None]

    def stop(self, grace: float = 20) -> None:
        """Stop the services (`stop_groups`)."""
        stop_groups(self.procs, grace)

    def cleanup(self, keep: bool) -> None:
        """Stop the Spark cluster and the PostgreSQL cluster; delete the folder unless `keep`."""
        self.spark.stop()
        if self.cluster is not None:
            self.cluster.stop()
        if not keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


def stop_groups(procs: Mapping[str, subprocess.Popen[bytes]], grace: float) -> None:
    """SIGTERM the process group of each process (each started in its own session: its PID is the
    group's id), SIGKILL what is left of a group after `grace` seconds."""
    for proc in procs.values():
        _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs.values():
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    for proc in procs.values():
        if _group_members(proc.pid):  # the leader may be gone while its children linger
            _signal_group(proc.pid, signal.SIGKILL)
    for proc in procs.values():
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


def _group_members(pgid: int) -> list[int]:
    """PIDs whose process group is `pgid` (from /proc): SIGKILL goes only to a group that still has
    members we started, never to a reused id of someone else's group."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:  # after the name: state, ppid, pgrp
                members.append(int(stat.parent.name))
    return members


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
