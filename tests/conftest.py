from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import fsspec
import pyarrow as pa
import pytest

# Azure Blob Storage (Azurite) fixtures, for every suite that runs on Azure.
from tests.azurite import azure_container, azurite
from tests.gcs import fake_gcs, gcs_bucket, service_account

__all__ = ["azure_container", "azurite", "fake_gcs", "gcs_bucket", "service_account"]

SCHEMA = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("part", pa.string())])


@pytest.fixture(params=["file", "memory"])
def table_uri(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """Every engine test runs on the local filesystem and on the in-memory backend."""
    if request.param == "file":
        yield str(tmp_path / "table")
    else:
        uri = f"memory://tables/{uuid.uuid4().hex}"
        yield uri
        fs = fsspec.filesystem("memory")
        if fs.exists(uri):
            fs.rm(uri, recursive=True)


def rows(ids: list[int], part: str | None = "a") -> pa.Table:
    return pa.table(
        {"id": ids, "value": [float(i) / 2 for i in ids], "part": [part] * len(ids)},
        schema=SCHEMA,
    )


FIGURES_KEY = "reliability_figures"  # the key tests/reliability/conftest.py attaches figures under


# Defined here (the root conftest) so the summary also prints when the whole suite runs.
def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = []
    for kind in ("passed", "failed", "xfailed", "xpassed"):
        for rep in terminalreporter.stats.get(kind, []):
            if getattr(rep, "when", "call") != "call":
                continue
            for key, value in getattr(rep, "user_properties", []):
                if key == FIGURES_KEY:
                    figs = dict(value)
                    title = figs.pop("title")
                    lines.append(f"{title} [{kind}]: " + ", ".join(f"{k}={v}" for k, v in figs.items()))
    if lines:
        terminalreporter.section("reliability figures")
        for line in sorted(lines):
            terminalreporter.write_line(line)


def pytest_sessionfinish() -> None:
    """py4j closes its gateway connections when they are collected, some only as the interpreter
    exits, and logs that at INFO; by then pytest has closed the streams Airflow's logging handlers
    write to, so each line became a "--- Logging error ---" traceback at the end of the run."""
    logging.getLogger("py4j").setLevel(logging.WARNING)
