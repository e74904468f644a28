"""Tests of the `txnlog` command line (airflow_txnlog.cli) on real tables written by the engine."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog import cli
from airflow_txnlog.cli import parse_storage_options
from airflow_txnlog.engine import ConstraintNotFoundError, Table
from tests.cli_support import DAY_A, DAY_B, SCHEMA, WIDE, event_rows, events_table, run, run_json


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    return events_table(tmp_path / "events", description="demo events")


def _data_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts)


# ----------------------------------------------------------------------------- describe
def test_describe_json(table_path: Path) -> None:
    doc = run_json("describe", str(table_path))
    assert doc["version"] == 3
    assert doc["name"] == "events"
    assert doc["description"] == "demo events"
    assert doc["partitionColumns"] == ["day"]
    assert doc["protocol"] == {
        "minReaderVersion": 1,
        "minWriterVersion": 2,
        "readerFeatures": [],
        "writerFeatures": [],
    }
    assert doc["schema"] == [
        {"name": "id", "type": "long", "nullable": True},
        {"name": "day", "type": "string", "nullable": True},
        {"name": "value", "type": "double", "nullable": True},
    ]
    assert doc["numFiles"] == 3
    assert doc["sizeBytes"] == sum(p.stat().st_size for p in _data_files(table_path))
    assert doc["checkpointVersion"] is None
    assert doc["location"].rstrip("/").endswith("events")
    assert doc["id"] == Table.open(str(table_path)).snapshot().metadata.id
    committed = dt.datetime.fromisoformat(doc["timestamp"].replace("Z", "+00:00"))
    assert committed.tzinfo is not None
    assert abs((dt.datetime.now(dt.UTC) - committed).total_seconds()) < 600


def test_describe_json_at_version(table_path: Path) -> None:
    doc = run_json("describe", str(table_path), "--version", "1")
    assert doc["version"] == 1
    assert doc["numFiles"] == 1
    v1 = Table.open(str(table_path)).snapshot(1)
    assert doc["timestamp"] == cli.iso_ms(v1.timestamp)


def test_describe_human(table_path: Path) -> None:
    result = run("describe", str(table_path), env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert re.search(r"version\s*│\s*3\s*│", out)
    assert re.search(r"partition columns\s*│\s*day\s*│", out)
    assert re.search(r"files\s*│\s*3\s*│", out)
    assert re.search(r"protocol\s*│\s*reader 1, writer 2\s*│", out)
    assert re.search(r"checkpoint\s*│\s*-\s*│", out)
    assert "demo events" in out
    assert re.search(r"│\s*value\s*│\s*double\s*│\s*yes\s*│", out)
    assert not out.lstrip().startswith("{")


def test_describe_shows_properties(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    Table.create(uri, schema=SCHEMA, properties={"delta.checkpointInterval": "5"})
    assert run_json("describe", uri)["properties"] == {"delta.checkpointInterval": "5"}
    result = run("describe", uri, env=WIDE)
    assert re.search(r"delta\.checkpointInterval\s*│\s*5\s*│", result.stdout)


def test_describe_reports_automatic_checkpoint_at_version_10(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    t = Table.create(uri, schema=SCHEMA, partition_by=["day"])
    for i in range(11):
        t.write(event_rows([i], DAY_A if i % 2 else DAY_B))
    assert (tmp_path / "t" / "_delta_log" / f"{10:020d}.checkpoint.parquet").exists()
    doc = run_json("describe", uri)
    assert (doc["version"], doc["checkpointVersion"], doc["numFiles"]) == (11, 10, 11)
    assert run_json("describe", uri, "--version", "9")["checkpointVersion"] is None


# ----------------------------------------------------------------------------- history
def test_history_json(table_path: Path) -> None:
    doc = run_json("history", str(table_path))
    assert [e["version"] for e in doc] == [3, 2, 1, 0]
    assert [e["operation"] for e in doc] == ["WRITE", "WRITE", "WRITE", "CREATE TABLE"]
    newest = doc[0]
    assert newest["readVersion"] == 2
    assert newest["isBlindAppend"] is True
    assert newest["operationParameters"]["mode"] == "Append"
    assert newest["operationMetrics"]["numOutputRows"] == "1"
    assert doc[1]["operationMetrics"]["numOutputRows"] == "3"
    stamps = [dt.datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")) for e in doc]
    assert stamps == sorted(stamps, reverse=True)
    assert set(newest) == {
        "version",
        "timestamp",
        "operation",
        "operationParameters",
        "readVersion",
        "isBlindAppend",
        "operationMetrics",
    }


def test_history_limit(table_path: Path) -> None:
    assert [e["version"] for e in run_json("history", str(table_path), "--limit", "2")] == [3, 2]
    assert run_json("history", str(table_path), "-n", "0") == []


def test_history_shows_overwrite(table_path: Path) -> None:
    Table.open(str(table_path)).write(event_rows([7], DAY_B), mode="overwrite")
    newest = run_json("history", str(table_path), "--limit", "1")[0]
    assert (newest["version"], newest["operation"]) == (4, "WRITE")
    assert newest["operationParameters"]["mode"] == "Overwrite"
    assert newest["isBlindAppend"] is False


def test_history_human(table_path: Path) -> None:
    result = run("history", str(table_path), env=WIDE)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    rows = [ln.split() for ln in lines if re.match(r"\s*\d+\s+\d{4}-\d\d-\d\d ", ln)]
    assert [r[0] for r in rows] == ["3", "2", "1", "0"]
    assert [r[3] for r in rows] == ["WRITE", "WRITE", "WRITE", "CREATE"]
    assert "mode=Append" in rows[0]
    assert "numOutputRows=1" in result.stdout


# ----------------------------------------------------------------------------- files
def test_files_json(table_path: Path) -> None:
    doc = run_json("files", str(table_path))
    assert doc["version"] == 3
    assert doc["filter"] is None
    files = doc["files"]
    assert len(files) == 3
    assert sorted(f["numRecords"] for f in files) == [1, 2, 3]
    assert sorted(f["partitionValues"]["day"] for f in files) == [DAY_A, DAY_A, DAY_B]
    for f in files:
        on_disk = table_path / f["path"]
        assert on_disk.is_file()
        assert f["size"] == on_disk.stat().st_size
        assert f["path"].startswith(f"day={f['partitionValues']['day']}/")


def test_files_filter_prunes_partitions(table_path: Path) -> None:
    doc = run_json("files", str(table_path), "--filter", f"day = '{DAY_A}'")
    assert doc["filter"] == f"day = '{DAY_A}'"
    assert len(doc["files"]) == 2
    assert {f["partitionValues"]["day"] for f in doc["files"]} == {DAY_A}
    assert sum(f["numRecords"] for f in doc["files"]) == 3
    other = run_json("files", str(table_path), "-f", f"day = '{DAY_B}'")["files"]
    assert [f["numRecords"] for f in other] == [3]
    assert run_json("files", str(table_path), "-f", "day = '1999-12-31'")["files"] == []


def test_files_filter_prunes_by_stats(table_path: Path) -> None:
    files = run_json("files", str(table_path), "--filter", "id >= 10")["files"]
    assert [f["partitionValues"]["day"] for f in files] == [DAY_B]


def test_files_at_version(table_path: Path) -> None:
    doc = run_json("files", str(table_path), "--version", "1")
    assert doc["version"] == 1
    assert [(f["partitionValues"], f["numRecords"]) for f in doc["files"]] == [({"day": DAY_A}, 2)]


def test_files_human(table_path: Path) -> None:
    result = run("files", str(table_path), "--filter", f"day = '{DAY_A}'", env=WIDE)
    assert result.exit_code == 0, result.output
    assert f"2 live file(s) at version 3 matching day = '{DAY_A}'" in result.stdout
    paths = [f["path"] for f in run_json("files", str(table_path), "-f", f"day = '{DAY_A}'")["files"]]
    for p in paths:
        assert re.search(rf"│\s*{re.escape(p)}\s*│\s*day={DAY_A}\s*│\s*\d+\s*│\s*[12]\s*│", result.stdout)
    assert f"day={DAY_B}" not in result.stdout


# ----------------------------------------------------------------------------- checkpoint
def test_checkpoint_human(table_path: Path) -> None:
    log = table_path / "_delta_log"
    assert not list(log.glob("*.checkpoint*.parquet"))
    result = run("checkpoint", str(table_path))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "checkpoint written at version 3"
    assert (log / f"{3:020d}.checkpoint.parquet").is_file()
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 3
    assert run_json("describe", str(table_path))["checkpointVersion"] == 3


def test_checkpoint_json_at_version(table_path: Path) -> None:
    log = table_path / "_delta_log"
    doc = run_json("checkpoint", str(table_path), "--version", "2")
    assert doc["version"] == 2
    assert sorted(p.name for p in log.glob("*.checkpoint*.parquet")) == [f"{2:020d}.checkpoint.parquet"]
    # the checkpoint is usable: a snapshot of version 3 now loads from it and sees every file
    described = run_json("describe", str(table_path))
    assert (described["checkpointVersion"], described["numFiles"]) == (2, 3)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("command", ["describe", "history", "files", "checkpoint"])
@pytest.mark.parametrize("as_json", [False, True])
def test_missing_table_is_one_line_error(tmp_path: Path, command: str, as_json: bool) -> None:
    missing = tmp_path / "nothing-here"
    result = run(command, str(missing), *(["--json"] if as_json else []))
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert "nothing-here" in lines[0]
    assert "Traceback" not in result.output
    assert not missing.exists() or not (missing / "_delta_log" / f"{0:020d}.json").exists()


def test_missing_version_is_error(table_path: Path) -> None:
    result = run("describe", str(table_path), "--version", "42")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ")
    assert "42" in result.stderr
    assert run("checkpoint", str(table_path), "--version", "42").exit_code == 1
    assert not list((table_path / "_delta_log").glob("*.checkpoint*.parquet"))


def test_bad_filter_is_error(table_path: Path) -> None:
    result = run("files", str(table_path), "--filter", "id >")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ")
    assert len(result.stderr.splitlines()) == 1
    assert run("files", str(table_path), "--filter", "no_such_column = 1").exit_code == 1


@pytest.mark.parametrize(
    "args",
    [
        ["files", "{t}", "--filter", "day >= 2024-01-01"],
        ["optimize", "{t}", "--zorder-by", "id,value", "--where", "day = 2024-01-01"],
    ],
)
def test_an_unquoted_date_in_a_predicate_says_it_parsed_as_arithmetic(
    table_path: Path, args: list[str]
) -> None:
    result = run(*[a.replace("{t}", str(table_path)) for a in args])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: predicate 'day ")
    assert "2024-01-01 without quotes parsed as arithmetic (2024 - 01 - 01), not as a date" in line
    assert line.endswith("Help: write DATE '2024-01-01' (or the quoted string '2024-01-01')")
    assert Table.open(str(table_path)).latest_version() == 3
    quoted = [a.replace("2024-01-01", "'2024-01-01'") for a in args]  # the way out works
    assert run(*[a.replace("{t}", str(table_path)) for a in quoted]).exit_code == 0


def test_an_unquoted_date_and_time_gets_a_help_and_no_terminal_codes(table_path: Path) -> None:
    result = run("files", str(table_path), "--filter", "day >= 2024-01-01 00:00:00")
    assert result.exit_code == 1
    assert "is not valid SQL" in result.stderr and "\x1b" not in result.stderr
    assert result.stderr.rstrip().endswith(
        "Help: a date and time needs quotes: TIMESTAMP '2024-01-01 00:00:00'"
    )


def test_drop_constraint_of_a_missing_one_names_the_cli_flag(table_path: Path) -> None:
    """The engine's Help names its argument if_exists=True; the command line names --if-exists."""
    with pytest.raises(ConstraintNotFoundError, match=r"Help: pass if_exists=True to ignore"):
        Table.open(str(table_path)).drop_constraint("positive")
    result = run("drop-constraint", str(table_path), "positive")
    assert result.exit_code == 1
    assert result.stderr == (
        "error: the table has no constraint 'positive' (its constraints: none). Nothing was written. "
        "Help: pass --if-exists to ignore a missing constraint\n"
    )
    assert run_json("drop-constraint", str(table_path), "positive", "--if-exists") == {"version": None}
    assert Table.open(str(table_path)).latest_version() == 3


@pytest.mark.parametrize(
    "args",
    [
        ["describe"],
        ["history", "x", "--limit", "-1"],
        ["files", "x", "--version", "-3"],
        ["--storage-option", "novalue", "describe", "x"],
        ["frobnicate", "x"],
    ],
)
def test_bad_usage_exits_2(args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == 2, result.output


# ----------------------------------------------------------------------------- storage options
def test_parse_storage_options() -> None:
    opts = parse_storage_options(
        ["anon=true", "key=a=b", "retries=3", 'client_kwargs={"endpoint_url": "http://x"}', "x=NULL"]
    )
    assert opts == {
        "anon": True,
        "key": "a=b",
        "retries": "3",
        "client_kwargs": {"endpoint_url": "http://x"},
        "x": None,
    }


def test_storage_options_reach_the_engine(table_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real_open = Table.open

    def spy(uri: str, *, storage_options: dict[str, Any] | None = None) -> Table:
        seen.append(storage_options)
        return real_open(uri, storage_options=storage_options)

    monkeypatch.setattr(cli.Table, "open", staticmethod(spy))
    args = ["-o", "auto_mkdir=false", "--storage-option", "token=abc", "files", str(table_path), "--json"]
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["files"]) == 3
    assert seen == [{"auto_mkdir": False, "token": "abc"}]
    assert run("describe", str(table_path)).exit_code == 0
    assert seen[-1] is None


# ----------------------------------------------------------------------------- console script
def _console_script() -> Path:
    script = Path(sys.executable).parent / "txnlog"
    if not script.exists():
        pytest.fail(f"the txnlog console script is not installed next to {sys.executable}")
    return script


def test_console_script_installed(table_path: Path) -> None:
    proc = subprocess.run(
        [str(_console_script()), "history", str(table_path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert [e["version"] for e in json.loads(proc.stdout)] == [3, 2, 1, 0]


def test_console_script_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(_console_script()), "describe", str(tmp_path / "absent")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("error: ")
    assert len(proc.stderr.splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_history_at_80_columns_prints_records_not_a_folded_table(table_path: Path) -> None:
    """Piped (80 columns unless COLUMNS says more), the table became one letter-column per cell
    line; records keep each field whole on its own line, within 80 columns."""
    result = run("history", str(table_path), env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    headings = [line for line in lines if re.match(r"\d+  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  ", line)]
    assert [h.split()[0] for h in headings] == ["3", "2", "1", "0"]
    assert headings[-1].endswith("CREATE TABLE")
    assert '  parameters  mode=Append, partitionBy=["day"]' in lines
    assert any(line.startswith("  metrics     numFiles=1, numOutputRows=1") for line in lines)


def test_files_at_80_columns_keep_each_path_on_one_line(table_path: Path) -> None:
    result = run("files", str(table_path), env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    paths = [f["path"] for f in run_json("files", str(table_path))["files"]]
    assert all(p in result.stdout.splitlines() for p in paths)  # greppable, not folded
    assert f"  partition values  day={DAY_A}" in result.stdout.splitlines()
