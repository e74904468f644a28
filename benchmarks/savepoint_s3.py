"""What a savepoint costs on an object store: existence checks, one HEAD per file checked.

Starts `moto_server` (a separate process, so its request handling does not share this process's
GIL) and builds an N-file table in it: N one-byte objects and one commit adding them (the engine only
HEADs them). Then, in fresh processes (median of `--reps`):
- `savepoint latest`: `create_savepoint` of the latest version (checks nothing: every file is live);
- `savepoint older`: of version 1 after an overwrite at version 2 (every one of its N files is no
  longer live, so each is checked, before and after the record: 2N HEADs);
- `head each file`: N sequential `exists` calls, what any per-file existence check costs.
delta-rs has no savepoints, so there is no ratio to it. Prints one JSON line; writes nothing.

    .venv/bin/python -m benchmarks.savepoint_s3 --files 2000 --reps 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.processes import free_port  # noqa: E402

BUCKET = "savepoint-bench"


def options(endpoint: str) -> dict[str, Any]:
    return {
        "endpoint_url": endpoint,
        "key": "k",
        "secret": "s",
        "client_kwargs": {"region_name": "us-east-1"},
    }


def build(endpoint: str, files: int) -> str:
    """The N-file table (version 1), and version 2 overwriting it with one file: its URI."""
    import s3fs  # noqa: PLC0415

    from airflow_txnlog.engine import Table  # noqa: PLC0415
    from tests.conftest import SCHEMA, rows  # noqa: PLC0415

    fs = s3fs.S3FileSystem(**options(endpoint))
    fs.call_s3("create_bucket", Bucket=BUCKET)
    uri = f"s3://{BUCKET}/t"
    Table.create(uri, schema=SCHEMA, storage_options=options(endpoint))
    paths = [f"f-{i:07d}.parquet" for i in range(files)]
    fs.pipe({f"{BUCKET}/t/{p}": b"x" for p in paths})
    now = int(time.time() * 1000)
    lines = [{"commitInfo": {"operation": "WRITE", "timestamp": now}}]
    lines += [
        {"add": {"path": p, "partitionValues": {}, "size": 1, "modificationTime": now, "dataChange": True}}
        for p in paths
    ]
    fs.pipe(f"{BUCKET}/t/_delta_log/{1:020d}.json", "".join(json.dumps(a) + "\n" for a in lines).encode())
    Table.open(uri, storage_options=options(endpoint)).write(rows([1]), mode="overwrite")  # version 2
    return uri


MEASURE = """
import json, sys, time
from airflow_txnlog.engine import Table
from airflow_txnlog.engine.maintenance.savepoints import missing_files
uri, opts, what, name = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
t = Table.open(uri, storage_options=opts)
paths = [f.path for f in t.snapshot(version=1).files()]
start = time.perf_counter()
if what == "savepoint latest":
    t.create_savepoint(name)
elif what == "savepoint older":
    t.create_savepoint(name, version=1)
else:
    assert missing_files(t.storage, paths) == []
print(time.perf_counter() - start)
"""


def measure(uri: str, endpoint: str, what: str, reps: int) -> float:
    out = []
    for rep in range(reps):
        name = f"{what.replace(' ', '-')}-{rep}"
        args = [sys.executable, "-c", MEASURE, uri, json.dumps(options(endpoint)), what, name]
        proc = subprocess.run(args, capture_output=True, text=True, check=True, cwd=ROOT)
        out.append(float(proc.stdout.strip().splitlines()[-1]))
    return round(statistics.median(out), 3)


@contextlib.contextmanager
def moto_endpoint() -> Iterator[str]:
    """A `moto_server` in its own process (its request handling does not share this GIL): its URL."""
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(3)  # moto_server has no readiness signal
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:  # (a server holding 200,000 keys may take its time)
            server.kill()
            server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with moto_endpoint() as endpoint:
        uri = build(endpoint, args.files)
        seconds = {
            w: measure(uri, endpoint, w, args.reps)
            for w in ("savepoint latest", "savepoint older", "head each file")
        }
        print(json.dumps({"files": args.files, "reps": args.reps, "seconds": seconds}))


if __name__ == "__main__":
    main()
