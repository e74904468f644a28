"""Fixtures for the reliability suite: loopback S3 (moto) and Azure (Azurite) servers, backends,
sizes and figures.

- `s3_server` (session): `moto.server.ThreadedMotoServer` on 127.0.0.1 and a free port, with one
  bucket; `s3_options` are the s3fs `storage_options` that reach it (dummy credentials). No
  outside network is used. The `backend` fixture gives each S3 test a bucket of its own: moto lists
  a prefix by walking every key of the bucket, so in one shared bucket a listing late in the session
  walked every object the worker's earlier tests wrote (the 4-reader release test ran out of its
  900 s that way in CI).
- `azurite` (session, tests/azurite.py): the Azure Storage emulator as a real server on a free port;
  `azure_container` (module) is a fresh container for each test module.
- `backend` / `table_uri`-style factories: every reliability scenario that is about storage runs on
  `local`, `s3` and `azure`; new scenarios (vacuum, restore, savepoints) are added as new cases.
- Sizes: a CI size by default, the full size of issue 6 with `TXNLOG_FULL=1` (see docs/reliability.md).
- Figures: tests attach measured counts with `report_figures(...)` (stored as the report's
  `user_properties`, which pytest-xdist ships to the controller); `pytest_terminal_summary` prints them
  in a "reliability figures" section.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.azurite import AzureContainer
from tests.gcs import GcsBucket
from tests.processes import free_port

FULL = os.environ.get("TXNLOG_FULL", "") not in ("", "0", "false", "no")
BUCKET = "txnlog-reliability"
S3_KEY = "reliability-test-key"
# A recognisable secret: the security tests check it never leaks into messages or logs.
S3_SECRET = "Sx7-NEVER-LOG-THIS-SECRET-0b5e1c"
FIGURES_KEY = "reliability_figures"


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str

    @property
    def options(self) -> dict[str, Any]:
        """s3fs storage_options for this server (fresh dict: callers may mutate it)."""
        return {
            "endpoint_url": self.endpoint,
            "key": S3_KEY,
            "secret": S3_SECRET,
            "client_kwargs": {"region_name": "us-east-1"},
        }

    def new_bucket(self) -> str:
        """Create an empty bucket with a fresh name on this server and return its name."""
        return self.new_bucket_named(f"txnlog-{uuid.uuid4().hex}")

    def new_bucket_named(self, name: str) -> str:
        """Create an empty bucket called `name` on this server and return its name."""
        import boto3  # noqa: PLC0415 - only when S3 tests run

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=S3_KEY,
            aws_secret_access_key=S3_SECRET,
            region_name="us-east-1",
        )
        try:
            client.create_bucket(Bucket=name)
        finally:
            client.close()
        return name


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A moto S3 server on loopback with one bucket, for the whole session (one per xdist worker)."""
    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    restore_put = _serialise_moto_puts()
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    s3 = S3Server(endpoint, BUCKET)
    s3.new_bucket_named(BUCKET)
    try:
        yield s3
    finally:
        server.stop()
        restore_put()


def _serialise_moto_puts() -> Callable[[], None]:
    """Make moto's conditional PUT atomic, as S3's is.

    moto 5.2 checks `If-None-Match: *` and then stores the object without a lock, on a threaded
    server: two concurrent PUTs of one key can both succeed (seen once in an 8x25 stress run: two
    writers got version 62). Real S3 (and MinIO) evaluate the condition atomically; without this lock
    the stress test would measure moto's race, not the engine. Returns the undo function.
    """
    from moto.s3.responses import S3Response  # noqa: PLC0415

    original = S3Response.put_object
    lock = threading.Lock()

    def put_object(self: Any) -> Any:
        with lock:
            return original(self)

    S3Response.put_object = put_object  # type: ignore[method-assign]

    def undo() -> None:
        S3Response.put_object = original  # type: ignore[method-assign]

    return undo


@pytest.fixture
def s3_options(s3_server: S3Server) -> dict[str, Any]:
    return s3_server.options


@dataclass(frozen=True)
class Backend:
    """Where a test's tables live: `new_uri()` gives a fresh table location; `options` go to the engine."""

    name: str
    new_uri: Callable[[str], str]
    options: dict[str, Any] | None


@pytest.fixture(params=["local", "s3", "azure", "gcs"])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Backend:
    """Run the test on the local filesystem, on S3 (moto), on Azure Blob Storage (Azurite) and on
    Google Cloud Storage (fake-gcs-server)."""
    if request.param == "local":
        return Backend("local", lambda name: str(tmp_path / f"{name}-{uuid.uuid4().hex[:8]}"), None)
    if request.param == "gcs":
        bucket: GcsBucket = request.getfixturevalue("gcs_bucket")
        prefix = uuid.uuid4().hex
        return Backend(
            "gcs", lambda name: bucket.uri(f"{prefix}/{name}-{uuid.uuid4().hex[:8]}"), bucket.options
        )
    if request.param == "azure":
        container: AzureContainer = request.getfixturevalue("azure_container")
        prefix = uuid.uuid4().hex
        return Backend(
            "azure", lambda name: container.uri(f"{prefix}/{name}-{uuid.uuid4().hex[:8]}"), container.options
        )
    server: S3Server = request.getfixturevalue("s3_server")
    own = server.new_bucket()
    return Backend("s3", lambda name: f"s3://{own}/{name}-{uuid.uuid4().hex[:8]}", server.options)


def report_figures(request: pytest.FixtureRequest, title: str, figures: dict[str, Any]) -> None:
    """Attach measured figures to this test's report (printed in the terminal summary)."""
    request.node.user_properties.append((FIGURES_KEY, {"title": title, **figures}))
    print(f"[reliability] {title}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))
