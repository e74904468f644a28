"""`txnlog publish` / `txnlog published` on a real table: the record on disk, the JSON, the errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_txnlog.engine import Table
from tests.cli_support import WIDE, events_table, run, run_json


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    return events_table(tmp_path / "events")


def test_publish_then_published(table_path: Path) -> None:
    doc = run_json("publish", str(table_path), "--version", "2")
    assert (doc["channel"], doc["version"], doc["previousVersion"]) == ("published", 2, None)
    assert (table_path / "_published" / "published" / f"{2:020d}.json").is_file()
    again = run_json("published", str(table_path))
    assert again == doc
    later = run_json("publish", str(table_path))  # default: the latest version
    assert (later["version"], later["previousVersion"]) == (3, 2)
    assert Table.open(str(table_path)).published_snapshot().version == 3


def test_human_output_names_channel_and_version(table_path: Path) -> None:
    out = run("publish", str(table_path), "--channel", "nightly", env=WIDE)
    assert out.exit_code == 0, out.output
    assert "nightly" in out.output and "Published" in out.output
    shown = run("published", str(table_path), "--channel", "nightly", env=WIDE)
    assert shown.exit_code == 0 and "nightly" in shown.output


def test_nothing_published_exits_1(table_path: Path) -> None:
    out = run("published", str(table_path))
    assert out.exit_code == 1
    assert "nothing is published on channel 'published'" in out.output


def test_moving_back_is_refused_and_writes_nothing(table_path: Path) -> None:
    run_json("publish", str(table_path), "--version", "3")
    out = run("publish", str(table_path), "--version", "1")
    assert out.exit_code == 1
    assert "version 3 is already published" in out.stderr
    assert sorted(p.name for p in (table_path / "_published" / "published").iterdir()) == [f"{3:020d}.json"]


def test_bad_channel_is_an_error(table_path: Path) -> None:
    out = run("publish", str(table_path), "--channel", "../x")
    assert out.exit_code == 1
    assert "invalid publication channel" in out.stderr
    assert not (table_path / "_published").exists()


def test_nothing_published_json_says_so(table_path: Path) -> None:
    """`published --json` with nothing published prints an object that says so (was `null`), exit 1."""
    out = run("published", str(table_path), "--json")
    assert out.exit_code == 1
    assert json.loads(out.stdout) == {"channel": "published", "published": False, "version": None}
    run_json("publish", str(table_path), "--version", "2")
    assert run_json("published", str(table_path))["published"] is True
