"""Settle the S3 "double win" of docs/reliability.md by numbers (issue 16, part 3).

Runs the reliability suite's multi-writer stress (`tests/reliability/test_stress._run`: spawned
writer processes, each committing with `put_if_absent`) against a moto S3 server many times, in two
modes: moto as it is (its `If-None-Match: *` is a check-then-put without a lock, on a threaded
server) and with the test fixture's lock around moto's conditional PUT (`_serialise_moto_puts`).
A double win is a version that two writers both reported as committed. Prints one line per run and
the totals per mode; nothing is written to the docs by this script.

    .venv/bin/python -m benchmarks.s3_double_win --runs 15 --size 8x25
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
import uuid
from pathlib import Path

import boto3
from moto.server import ThreadedMotoServer

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.reliability.conftest import (  # noqa: E402
    BUCKET,
    S3_KEY,
    S3_SECRET,
    Backend,
    S3Server,
    _free_port,
    _serialise_moto_puts,
)
from tests.reliability.test_stress import _run  # noqa: E402


def _server() -> tuple[ThreadedMotoServer, S3Server]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=S3_KEY, aws_secret_access_key=S3_SECRET,
        region_name="us-east-1",
    )  # fmt: skip
    client.create_bucket(Bucket=BUCKET)
    return server, S3Server(endpoint, BUCKET)


def one_run(s3: S3Server, workers: int, ops: int) -> tuple[int, int, float]:
    """(double wins, lost versions, seconds) of one stress run."""
    backend = Backend("s3", lambda name: f"s3://{s3.bucket}/{name}-{uuid.uuid4().hex[:8]}", s3.options)
    with tempfile.TemporaryDirectory() as tmp:
        _, results, elapsed = _run(backend, Path(tmp), workers, ops)
    reported = [c["version"] for r in results for c in r["commits"]]
    doubles = len(reported) - len(set(reported))
    lost = workers * ops - len(set(reported))
    return doubles, lost, elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--size", default="8x25")
    args = ap.parse_args(argv)
    workers, ops = (int(x) for x in args.size.lower().split("x"))
    server, s3 = _server()
    totals: dict[str, list[tuple[int, int, float]]] = {}
    try:
        for mode in ("moto as is", "moto with the fixture's lock"):
            undo = _serialise_moto_puts() if "lock" in mode else None
            try:
                for i in range(args.runs):
                    doubles, lost, secs = one_run(s3, workers, ops)
                    totals.setdefault(mode, []).append((doubles, lost, secs))
                    print(f"{mode} run {i + 1}: {doubles} double wins, {lost} lost, {secs:.1f} s", flush=True)
            finally:
                if undo is not None:
                    undo()
    finally:
        server.stop()
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {workers}x{ops} per run:")
    for mode, runs in totals.items():
        with_doubles = sum(1 for d, _, _ in runs if d)
        mean = sum(s for _, _, s in runs) / len(runs)
        print(
            f"{mode}: {len(runs)} runs, {sum(d for d, _, _ in runs)} double wins in {with_doubles} runs, "
            f"{sum(lo for _, lo, _ in runs)} lost versions, {mean:.1f} s per run"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
