"""Azure Blob Storage for the tests: Azurite (the Azure Storage emulator) as a real server.

- `azurite` (session; one server per xdist worker): `azurite-blob` from tools/azurite (installed by
  scripts/azurite.sh, pinned by its package-lock.json) on 127.0.0.1 and a free port, keeping its
  data in memory. It also sets `AZURITE_BLOB_STORAGE_URL` in this process, which is how delta-rs
  (`azure_storage_use_emulator`) finds an emulator on a port other than 10000.
- `azure_container` (module): a fresh container for each test module, deleted afterwards.

Credentials are Azurite's published development account (`devstoreaccount1` and its well-known
key): not a secret, but the security tests still check that no key reaches a message or a log.

Without Azurite (no Node.js) the Azure tests are skipped, except under CI (`CI` set) or with
`TXNLOG_REQUIRE_AZURITE=1`, where a missing emulator fails them: CI must run the Azure suites.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.processes import free_port, listening, need_emulator, serving

ROOT = Path(__file__).resolve().parents[1]
ACCOUNT = "devstoreaccount1"
# Azurite's fixed development key (documented by Microsoft; the emulator accepts no other).
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
_START_TIMEOUT_S = 60.0
_REQUIRE = "TXNLOG_REQUIRE_AZURITE"  # set (not "0"): a missing Azurite fails the tests, as under CI


def azurite_binary() -> str | None:
    """`TXNLOG_AZURITE`, else tools/azurite's install, else `azurite-blob` on PATH."""
    configured = os.environ.get("TXNLOG_AZURITE")
    if configured:
        return configured
    local = ROOT / "tools" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    return str(local) if local.exists() else shutil.which("azurite-blob")


@dataclass(frozen=True)
class Azurite:
    port: int

    @property
    def blob_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={self.blob_endpoint};"
        )

    @property
    def options(self) -> dict[str, Any]:
        """adlfs storage_options for this server (a fresh dict: callers may change it)."""
        return {"connection_string": self.connection_string}

    @property
    def deltars_options(self) -> dict[str, str]:
        """delta-rs storage_options (its emulator mode; the port comes from AZURITE_BLOB_STORAGE_URL)."""
        return {
            "azure_storage_account_name": ACCOUNT,
            "azure_storage_account_key": ACCOUNT_KEY,
            "azure_storage_use_emulator": "true",
        }

    def service(self) -> Any:
        from azure.storage.blob import BlobServiceClient  # noqa: PLC0415 - only when Azure tests run

        return BlobServiceClient.from_connection_string(self.connection_string)


@dataclass(frozen=True)
class AzureContainer:
    server: Azurite
    name: str

    def uri(self, path: str) -> str:
        return f"abfs://{self.name}/{path.strip('/')}"

    @property
    def options(self) -> dict[str, Any]:
        return self.server.options


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    """Azurite's blob service on loopback for the whole session (one per xdist worker)."""
    pytest.importorskip("adlfs")
    binary = azurite_binary()
    need_emulator(
        binary is not None, "Azurite not installed: run scripts/azurite.sh (needs Node.js)", _REQUIRE
    )
    port = free_port()
    cmd = [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence"]
    cmd += ["--skipApiVersionCheck", "--loose", "--silent"]
    with serving("azurite", cmd, tmp_path_factory.mktemp("azurite"), listening(port), _START_TIMEOUT_S):
        os.environ["AZURITE_BLOB_STORAGE_URL"] = f"http://127.0.0.1:{port}"
        yield Azurite(port)


@pytest.fixture(scope="module")
def azure_container(azurite: Azurite) -> Iterator[AzureContainer]:
    """A fresh container for one test module (names: 3-63 lowercase letters, digits, dashes)."""
    name = f"m-{uuid.uuid4().hex[:20]}"
    service = azurite.service()
    service.create_container(name)
    try:
        yield AzureContainer(azurite, name)
    finally:
        service.delete_container(name)
        service.close()
