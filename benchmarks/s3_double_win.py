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

from tests.processes import free_port  # noqa: E402
from tests.reliability.conftest import (  # noqa: E402
    BUCKET,
    S3_KEY,
    S3_SECRET,
    Backend,
    S3Server,
    _serialise_moto_puts,
)
from tests.reliability.test_stress import _run  # noqa: E402


def _server() -> tuple[ThreadedMotoServer, S3Server]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
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


def hammer(s3: S3Server, keys: int, threads: int, size: int) -> tuple[int, int]:
    """(keys that more than one conditional PUT created, keys) when `threads` clients PUT each key
    with `If-None-Match: *` at the same moment (a barrier per key), bodies of `size` bytes (a commit
    is a few kB; moto hashes and spools the body between its check and its store, and hashlib
    releases the GIL for bodies over 2 kB): moto's race, without the engine."""
    import threading  # noqa: PLC0415

    clients = [
        boto3.client(
            "s3",
            endpoint_url=s3.endpoint,
            aws_access_key_id=S3_KEY,
            aws_secret_access_key=S3_SECRET,
            region_name="us-east-1",
        )
        for _ in range(threads)
    ]
    prefix = uuid.uuid4().hex
    doubles = 0
    for k in range(keys):
        barrier = threading.Barrier(threads)
        wins: list[int] = []

        def put(
            i: int,
            key: str = f"{prefix}/{k:06d}",
            barrier: threading.Barrier = barrier,
            wins: list[int] = wins,
        ) -> None:
            barrier.wait()
            try:
                body = f"writer {i} ".encode() * (size // 9 + 1)
                clients[i].put_object(Bucket=s3.bucket, Key=key, Body=body, IfNoneMatch="*")
                wins.append(i)
            except clients[i].exceptions.ClientError:
                pass

        pool = [threading.Thread(target=put, args=(i,)) for i in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        doubles += len(wins) > 1
    return doubles, keys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30, help="runs with moto as it is")
    ap.add_argument("--locked-runs", type=int, default=None, help="runs with the lock (default: --runs)")
    ap.add_argument("--size", default="8x25")
    ap.add_argument("--hammer", type=int, default=0, help="keys for the direct conditional-PUT hammer")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--body", type=int, default=4096, help="bytes per PUT in the hammer")
    args = ap.parse_args(argv)
    if args.hammer:
        server, s3 = _server()
        try:
            for mode in ("moto as is", "moto with the fixture's lock"):
                undo = _serialise_moto_puts() if "lock" in mode else None
                try:
                    doubles, keys = hammer(s3, args.hammer, args.threads, args.body)
                finally:
                    if undo is not None:
                        undo()
                print(
                    f"hammer, {mode}: {doubles} of {keys} keys created more than once "
                    f"({args.threads} writers each, {args.body}-byte bodies)"
                )
        finally:
            server.stop()
        return 0
    workers, ops = (int(x) for x in args.size.lower().split("x"))
    server, s3 = _server()
    totals: dict[str, list[tuple[int, int, float]]] = {}
    try:
        for mode in ("moto as is", "moto with the fixture's lock"):
            undo = _serialise_moto_puts() if "lock" in mode else None
            runs = args.runs if undo is None or args.locked_runs is None else args.locked_runs
            try:
                for i in range(runs):
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
