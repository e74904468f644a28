"""SparkTable works with a Spark Connect session (what `spark_connect` connections give).

Runs in a fresh interpreter: a local Connect server needs its own JVM, apart from the suite's
classic session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote("local[1]").config("spark.sql.shuffle.partitions", "2").getOrCreate()
from airflow_txnlog.spark import SparkTable
root = sys.argv[1]
df = spark.range(100).selectExpr("id", "cast(id % 3 as string) as p", "id * 0.5 as v")
st = SparkTable.create(spark, root, df, partition_by=["p"])
out = {"session": type(spark).__module__, "write": st.write(df.repartition(4)).version}
out["deleted"] = st.delete("id < 10").metrics["numDeletedRows"]
out["updated"] = st.update("id >= 90", {"v": "0"}).metrics["numUpdatedRows"]
src = spark.range(95, 105).selectExpr("id", "cast(id % 3 as string) as p", "-1.0 as v")
m = st.merge(src, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
out["inserted"] = m.metrics["numTargetRowsInserted"]
out["optimized"] = st.optimize().metrics["numRemovedFiles"]
out["rows"], out["rows_v1"] = st.to_df().count(), st.to_df(version=1).count()
for i in range(3):  # three small files in partition p=0: a planned compaction on Spark Connect
    st.write(spark.range(200 + i, 201 + i).selectExpr("id", "'0' as p", "id * 0.5 as v"))
from airflow_txnlog.engine import Table
plan = Table.open(root).plan_maintenance(quiet_minutes=0, min_input_files=2, min_files_removed=1)
action = next(a for a in plan.to_dict()["actions"] if a["kind"] == "compact" and a["partition"] == {"p": "0"})
done = st.run_maintenance(action, dry_run=False)
out["planned"] = [done["actual"]["files_removed"], done["actual"]["files_after"], st.to_df().count()]
spark.stop()
print("RESULT " + json.dumps(out))
"""


def test_operations_through_spark_connect(tmp_path: Path) -> None:
    pytest.importorskip("grpc")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["session"].startswith("pyspark.sql.connect")
    assert (out["write"], out["deleted"], out["updated"], out["inserted"]) == (1, 10, 10, 5)
    assert out["optimized"] > 0 and (out["rows"], out["rows_v1"]) == (95, 100)
    removed, after, rows = out["planned"]  # (SparkTable.run_maintenance through Spark Connect)
    assert removed >= 3 and after == 1 and rows == 98
