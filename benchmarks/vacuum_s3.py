"""Vacuum on an object store: the engine as it was before issue 41 (one DeleteObject per file, one
listing of the whole table tree) against the engine now (batched deletes, listing by prefix).

Starts `moto_server` (a separate process, so its request handling does not share this process's
GIL) and builds, for each measurement, a fresh table of N one-byte data files in `--partitions`
partition folders (version 1) that an overwrite removes (version 2). Then a full
`vacuum(retention_hours=0, enforce_retention=False, dry_run=False)` runs in a fresh process, timed:
- `before`: `Storage.delete_many` one key at a time and `list_files` through one `fs.find` of the
  table root (both as the engine did when issue 41 was filed);
- `now`: the engine's own (`FsspecStorage.delete_many`: s3fs's DeleteObjects, 1,000 keys a request;
  the root listed once with a delimiter, its partition folders 8 at a time, hidden folders never).
Both delete the same N files (checked: nothing of the N is left, the live file stays). Prints one
JSON line with the seconds and the ratio; writes nothing else. delta-rs is not measured here.

    .venv/bin/python -m benchmarks.vacuum_s3 --files 100000 --partitions 100
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.savepoint_s3 import moto_endpoint, options  # noqa: E402

BUCKET = "vacuum-bench"

MEASURE = """
import json, sys, time
from airflow_txnlog.engine import Table
from airflow_txnlog.engine.storage import FsspecStorage, Storage
uri, opts, how = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
if how == "before":
    from airflow_txnlog.engine.maintenance import vacuum
    FsspecStorage.delete_many = Storage.delete_many  # one request per file, as before batching
    # one listing of the whole tree, as before listing by prefix
    vacuum._list_store = lambda storage, root, parts: storage.fs.find(root, detail=True, withdirs=False)
t = Table.open(uri, storage_options=opts)
start = time.perf_counter()
result = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "deleted": result.deleted}))
"""


def build(endpoint: str, prefix: str, files: int, partitions: int) -> str:
    """N one-byte files in `partitions` folders added at version 1, removed by an overwrite at
    version 2: the table's URI."""
    import s3fs  # noqa: PLC0415

    from airflow_txnlog.engine import Table  # noqa: PLC0415
    from tests.conftest import SCHEMA, rows  # noqa: PLC0415

    fs = s3fs.S3FileSystem(**options(endpoint))
    uri = f"s3://{BUCKET}/{prefix}"
    Table.create(uri, schema=SCHEMA, partition_by=["part"], storage_options=options(endpoint))
    paths = [f"part=p{i % partitions:04d}/f-{i:07d}.parquet" for i in range(files)]
    for first in range(0, files, 10_000):
        fs.pipe({f"{BUCKET}/{prefix}/{p}": b"x" for p in paths[first : first + 10_000]})
    now = int(time.time() * 1000) - 3_600_000
    lines = [{"commitInfo": {"operation": "WRITE", "timestamp": now}}]
    lines += [
        {
            "add": {
                "path": p,
                "partitionValues": {"part": p.split("/")[0][5:]},
                "size": 1,
                "modificationTime": now,
                "dataChange": True,
            }
        }
        for p in paths
    ]
    log = f"{BUCKET}/{prefix}/_delta_log/{1:020d}.json"
    fs.pipe(log, "".join(json.dumps(a) + "\n" for a in lines).encode())
    Table.open(uri, storage_options=options(endpoint)).write(rows([1]), mode="overwrite")  # version 2
    return uri


def measure(endpoint: str, how: str, files: int, partitions: int) -> dict[str, float]:
    import s3fs  # noqa: PLC0415

    prefix = how.replace(" ", "-")
    uri = build(endpoint, prefix, files, partitions)
    args = [sys.executable, "-c", MEASURE, uri, json.dumps(options(endpoint)), how]
    proc = subprocess.run(args, capture_output=True, text=True, check=True, cwd=ROOT)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    left = [
        p for p in s3fs.S3FileSystem(**options(endpoint)).find(f"{BUCKET}/{prefix}") if p.endswith(".parquet")
    ]
    assert out["deleted"] == files and len(left) == 1, (out, len(left))  # the live file stays
    return {"seconds": round(out["seconds"], 2), "deleted": out["deleted"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=100)
    args = parser.parse_args()
    with moto_endpoint() as endpoint:
        import s3fs  # noqa: PLC0415

        s3fs.S3FileSystem(**options(endpoint)).call_s3("create_bucket", Bucket=BUCKET)
        results = {how: measure(endpoint, how, args.files, args.partitions) for how in ("now", "before")}
        ratio = results["before"]["seconds"] / results["now"]["seconds"]
        summary = {"files": args.files, "partitions": args.partitions, "results": results}
        print(json.dumps({**summary, "before_over_now": round(ratio, 1)}))


if __name__ == "__main__":
    main()
