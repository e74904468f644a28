"""Spark sessions for the txnlog operators, built like the apache-spark provider's PySparkOperator.

The connection (`spark` or `spark_connect` type, default id `spark_default`) gives the master URL
(host/port) or the Spark Connect URL, and its extras become Spark configuration; `spark_conf` from
the task overrides them. `conn_id=None`, or the default id when it is not defined, means `local[*]`.
A session that already existed in the process is reused and left running; one created here is
stopped afterwards. pyspark is imported only when a session is needed.

Spark's output in the task log: Airflow's task supervisor logs what the task process writes to its
stdout at INFO and what it writes to its stderr at ERROR (`task.stderr`,
`airflow/sdk/execution_time/supervisor.py`). The driver JVM inherits both, and writes its log4j lines
(console appender on System.err), its own startup notes and Spark's progress bar to stderr, so a
successful task's log was full of errors. So the JVM this module starts (`_launch_jvm`: once per
process, unless one is running already) has its stderr joined to its stdout, the progress bar is off
unless `spark_conf` turns it on, and the `py4j` loggers, which log each connection they close at
INFO ("Closing down clientserver connection", also at interpreter exit after Airflow's log channel
is gone), are set to WARNING unless a level was configured for them. Spark failures still fail the
task with the Java error (py4j's `Py4JJavaError`), which Airflow logs as an error.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

if TYPE_CHECKING:
    from pyspark import SparkConf

DEFAULT_SPARK_CONN_ID = "spark_default"
# `subprocess.STDOUT` (Popen's "stderr to stdout"); the package never imports subprocess itself
# (tests/reliability/test_security.py): pyspark's launch_gateway starts the JVM.
_STDERR_TO_STDOUT = -2


def _master_and_conf(conn_id: str | None) -> tuple[str, dict[str, str]]:
    if not conn_id:
        return "local[*]", {}
    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        if conn_id == DEFAULT_SPARK_CONN_ID:
            return "local[*]", {}
        raise
    conf = {str(k): str(v) for k, v in (conn.extra_dejson or {}).items()}
    if conn.conn_type == "spark_connect":
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook  # noqa: PLC0415

        return SparkConnectHook(conn_id).get_connection_url(), conf
    if conn.host and conn.port:
        return f"{conn.host}:{conn.port}", conf
    return conn.host or "local[*]", conf


def _launch_jvm(conf: SparkConf) -> None:
    """Start the driver JVM with its stderr joined to its stdout, unless a JVM is running already.

    pyspark starts the JVM when the first SparkContext is made, inheriting the task's stdout and
    stderr; starting it here the same way (`launch_gateway`, which takes Popen arguments) lets the
    JVM's stderr go to the task's stdout. A JVM started before (an earlier task in the process, the
    caller's own session, `spark-submit` via PYSPARK_GATEWAY_PORT) is left as it is.
    """
    from pyspark import SparkContext  # noqa: PLC0415
    from pyspark.java_gateway import launch_gateway  # noqa: PLC0415

    remote = conf.get("spark.remote") or os.environ.get("SPARK_REMOTE")  # Spark Connect: no JVM here
    if remote or SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    gateway = launch_gateway(conf, popen_kwargs={"stderr": _STDERR_TO_STDOUT})  # type: ignore[no-untyped-call]
    SparkContext._ensure_initialized(gateway=gateway)  # the SparkContext made next uses this JVM


def _quiet_py4j() -> None:
    """`py4j` at WARNING unless a level was configured for it (see the module docstring)."""
    py4j = logging.getLogger("py4j")
    if py4j.level == logging.NOTSET:
        py4j.setLevel(logging.WARNING)


@contextmanager
def spark_session(conn_id: str | None, spark_conf: Mapping[str, str], app_name: str) -> Iterator[Any]:
    """A SparkSession for one task (see the module docstring for where its settings come from)."""
    from pyspark import SparkConf  # noqa: PLC0415 - never at DAG parse time
    from pyspark.sql import SparkSession  # noqa: PLC0415

    existing = SparkSession.getActiveSession()
    if existing is not None:
        yield existing
        return
    url, conf_items = _master_and_conf(conn_id)
    conf = SparkConf().set("spark.app.name", app_name)
    for key, value in {**conf_items, **dict(spark_conf)}.items():
        conf.set(key, value)
    if url.startswith("sc://"):
        conf.set("spark.remote", url)
    else:
        if not conf.get("spark.master"):
            conf.set("spark.master", url)
        conf.setIfMissing("spark.ui.showConsoleProgress", "false")  # a progress bar in a task log
        if str(conf.get("spark.master")).startswith("local"):
            # the txnlog data source runs Python on the executors: here, this interpreter (which has
            # the provider); a cluster's executors need it installed and `spark.pyspark.python` set.
            # pyspark takes its workers' interpreter from PYSPARK_PYTHON (else `python3` on PATH,
            # often without pyarrow), not from the conf, when the session is made in-process.
            conf.setIfMissing("spark.pyspark.python", sys.executable)
            os.environ.setdefault("PYSPARK_PYTHON", str(conf.get("spark.pyspark.python")))
        _launch_jvm(conf)
    _quiet_py4j()
    session = SparkSession.builder.config(conf=conf).getOrCreate()
    try:
        yield session
    finally:
        session.stop()
