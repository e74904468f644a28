"""Spark sessions for the txnlog operators, built like the apache-spark provider's PySparkOperator.

The connection (`spark` or `spark_connect` type, default id `spark_default`) gives the master URL
(host/port) or the Spark Connect URL, and its extras become Spark configuration; `spark_conf` from
the task overrides them. `conn_id=None`, or the default id when it is not defined, means `local[*]`.
A session that already existed in the process is reused and left running; one created here is
stopped afterwards. pyspark is imported only when a session is needed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

DEFAULT_SPARK_CONN_ID = "spark_default"


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
    elif not conf.get("spark.master"):
        conf.set("spark.master", url)
    session = SparkSession.builder.config(conf=conf).getOrCreate()
    try:
        yield session
    finally:
        session.stop()
