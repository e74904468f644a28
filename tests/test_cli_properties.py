"""`txnlog set-properties` / `unset-properties` (issue 38): a typo'd Delta key or a malformed
maintenance value is one `error:` line, exit 1, the log unchanged; `unset-properties` removes what an
earlier tool recorded, and its help names the CLI's own flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_txnlog.engine import Table
from tests.cli_support import WIDE, events_table, run, run_json


def _log(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "_delta_log").iterdir())


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("delta.enableRowTrackng=true", "Did you mean 'delta.enableRowTracking'"),
        ("txnlog.maintenance.quietMinutes=abc", "quietMinutes must be a finite float"),
        ("delta.autoOptimize.optimizeWrite=true", "does not honour"),
    ],
)
def test_set_properties_refuses_and_writes_nothing(tmp_path: Path, pair: str, message: str) -> None:
    path = events_table(tmp_path / "events")
    before = _log(path)
    result = run("set-properties", str(path), pair, env=WIDE)
    assert result.exit_code == 1 and message in result.stderr and "Traceback" not in result.output
    assert _log(path) == before


def test_unset_properties_removes_a_recorded_key(tmp_path: Path) -> None:
    path = events_table(tmp_path / "events")
    assert run_json("set-properties", str(path), "my.team=ingest") == {"version": 4}
    assert run_json("unset-properties", str(path), "my.team") == {"version": 5}
    assert "my.team" not in Table.open(str(path)).snapshot().metadata.configuration
    assert run_json("unset-properties", str(path), "my.team", "--if-exists") == {"version": None}
    missing = run("unset-properties", str(path), "my.team", env=WIDE)
    assert missing.exit_code == 1 and "Help: --if-exists skips keys" in missing.stderr
    assert "if_exists=True" not in missing.stderr
    assert Table.open(str(path)).latest_version() == 5
