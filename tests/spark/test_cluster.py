"""The `txnlog` data source and SparkTable on a standalone Spark cluster: a master and a worker, each
in its own JVM (started from pyspark's own `spark-class`), the executors in the worker's JVM with
their Python workers on this interpreter. What only a cluster shows: the reader, the writer and
their partitions are pickled to other processes and work there; the driver commits once.

Runs in a fresh interpreter (a session with another master cannot share the suite's JVM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.deploy.stack import SparkCluster
from tests.deltars import deltars_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
from airflow_txnlog.engine import Table
from airflow_txnlog.spark import SparkTable, register
master, root = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master(master).appName("txnlog-cluster-test")
         .config("spark.executor.memory", "1g").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.host", "127.0.0.1").config("spark.sql.session.timeZone", "UTC").getOrCreate())
register(spark)
df = spark.range(0, 3000, numPartitions=3).selectExpr("id", "cast(id % 3 as string) as part", "id * 0.5 as v")
df.write.format("txnlog").mode("append").option("partitionBy", "part").save(root)
for _ in range(2):  # a retried Airflow task: the second commits nothing
    w = df.filter("id < 10").write.format("txnlog").mode("append").option("txnAppId", "dag.task")
    w.option("txnVersion", 1).save(root)
out = {"executors": spark.sparkContext.getConf().get("spark.master")}
out["version"] = Table.open(root).latest_version()
read = spark.read.format("txnlog").load(root)
out["rows"] = read.count()
out["filtered"] = read.filter("part = '1' AND id >= 2990").count()
out["v0"] = spark.read.format("txnlog").option("versionAsOf", 0).load(root).count()
import datetime as dt
at = dt.datetime.fromtimestamp(Table.open(root).history()[-1]["timestamp"] / 1000, dt.UTC).isoformat()
out["t0"] = spark.read.format("txnlog").option("timestampAsOf", at).load(root).count()  # version 0
one_per_file = spark.read.format("txnlog").option("maxPartitionBytes", 1).load(root)
out["files"] = [one_per_file.rdd.getNumPartitions(), one_per_file.filter("part = '1'").rdd.getNumPartitions()]
before = Table.open(root).latest_version()
try:
    bad = df.selectExpr("id", "part", "if(id = 2999, raise_error('boom'), v) as v")
    bad.write.format("txnlog").mode("append").save(root)
except Exception as exc:
    out["failed"] = "boom" in str(exc)
out["after_failure"] = Table.open(root).latest_version() - before
st = SparkTable(spark, root)
out["deleted"] = st.delete("part = '2' AND v / 2 > 50").metrics["numDeletedRows"]  # (arithmetic: on Spark)
out["final"] = Table.open(root).snapshot().to_arrow().num_rows
q = (spark.readStream.format("txnlog").option("maxFilesPerTrigger", 4).load(root)
     .writeStream.format("txnlog").option("checkpointLocation", root + "_ck").trigger(availableNow=True)
     .start(root + "_copy"))
q.awaitTermination()
out["streamed"] = Table.open(root + "_copy").snapshot().to_arrow().num_rows
one = spark.range(5000, 5001).selectExpr("id", "'1' as part", "id * 0.5 as v")
one.write.format("txnlog").mode("append").save(root)
q = (spark.readStream.format("txnlog").option("maxFilesPerTrigger", 4).load(root)
     .writeStream.format("txnlog").option("checkpointLocation", root + "_ck").trigger(availableNow=True)
     .start(root + "_copy"))  # the restarted query: only the new row, no duplicates
q.awaitTermination()
out["restarted"] = Table.open(root + "_copy").snapshot().to_arrow().num_rows
spark.stop()
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """spark://127.0.0.1:<port> with one worker (1 core, 1 GiB); both JVMs stopped afterwards (the
    deployment check's cluster: scripts/deploy/stack.py)."""
    spark = SparkCluster(tmp_path_factory.mktemp("cluster"))
    try:
        spark.start()
        yield spark.url
    finally:
        spark.stop()


def test_data_source_and_dml_on_a_standalone_cluster(cluster: str, tmp_path: Path) -> None:
    root = tmp_path / "t"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, cluster, str(root)],
        capture_output=True, text=True, timeout=900, env=env, check=False,
    )  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, proc.stdout[-3000:] + proc.stderr[-5000:]
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["executors"] == cluster
    assert out["version"] == 1  # the append (creating the table), the first txn write; not the retry
    assert out["rows"] == 3010 and out["v0"] == 3000 and out["t0"] == 3000
    files, part_1 = out["files"]
    assert 0 < part_1 < files  # the partition filter pushed: fewer input partitions (one per file)
    assert out["failed"] and out["after_failure"] == 0
    assert out["filtered"] == len([i for i in range(2990, 3000) if i % 3 == 1])
    deleted = len([i for i in range(3000) if i % 3 == 2 and i * 0.5 > 100])
    assert out["deleted"] == deleted and out["final"] == 3010 - deleted
    rows = deltars_rows(root)
    assert len(rows) == 3011 - deleted and {r["part"] for r in rows} == {"0", "1", "2"}  # (+ the row 5000)
    assert out["streamed"] == 3010 - deleted  # the snapshot, streamed
    assert out["restarted"] == 3011 - deleted == len(deltars_rows(f"{root}_copy"))
