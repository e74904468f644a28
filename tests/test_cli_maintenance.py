"""Tests of the maintenance commands of `txnlog` (savepoint, restore, vacuum, cleanup-log, health) on
real tables written by the engine: every command in human and `--json` form, with assertions on what
happened on disk and in the log."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from airflow_txnlog import cli
from airflow_txnlog.engine import Table
from tests.cli_support import DAY_A, DAY_B, WIDE, event_rows, events_table, run, run_json


def _ids(path: Path, version: int | None = None) -> list[int]:
    return sorted(Table.open(str(path)).snapshot(version).to_arrow().column("id").to_pylist())


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    return events_table(tmp_path / "events")


@pytest.fixture
def overwritten(table_path: Path) -> Path:
    """The table of `table_path` plus v4: an overwrite replacing every row with id 99 (day B)."""
    assert Table.open(str(table_path)).write(event_rows([99], DAY_B), mode="overwrite") == 4
    return table_path


def run_human(*args: str) -> str:
    result = run(*args, env=WIDE)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert not result.stdout.lstrip().startswith(("{", "["))
    return result.stdout


def assert_error(result: Result, *fragments: str) -> str:
    """Exit code 1, nothing on stdout, one `error: ...` line on stderr containing every fragment."""
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def _data_files(path: Path) -> set[str]:
    return {
        p.relative_to(path).as_posix()
        for p in path.rglob("*.parquet")
        if not {"_delta_log", "_savepoints"} & set(p.parts)
    }


def _latest(path: Path) -> int:
    return Table.open(str(path)).latest_version()


def _parse_iso(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# ----------------------------------------------------------------------------- savepoint create
def test_savepoint_create_human(table_path: Path) -> None:
    out = run_human("savepoint", "create", str(table_path), "before-run")
    size = sum((table_path / f).stat().st_size for f in _data_files(table_path))
    assert out.strip() == f"savepoint before-run created at version 3 (3 file(s), {size} bytes)"
    assert (table_path / "_savepoints" / "before-run.json").is_file()
    assert not (table_path / "_delta_log" / "_savepoints").exists()
    sp = Table.open(str(table_path)).get_savepoint("before-run")
    assert (sp.version, sp.num_files, sp.size_bytes) == (3, 3, size)


def test_savepoint_create_json_with_options(table_path: Path) -> None:
    doc = run_json(
        "savepoint",
        "create",
        str(table_path),
        "sp1",
        "--version",
        "1",
        "--reason",
        "risky backfill",
        "--created-by",
        "alice",
        "--expires-at",
        "2099-01-02T03:04:05Z",
    )
    table_id = Table.open(str(table_path)).snapshot().metadata.id
    assert doc["name"] == "sp1"
    assert doc["version"] == 1
    assert doc["tableId"] == table_id
    assert doc["reason"] == "risky backfill"
    assert doc["createdBy"] == "alice"
    assert doc["expiresAt"] == "2099-01-02T03:04:05.000Z"
    assert doc["expired"] is False
    assert doc["numFiles"] == 1
    assert abs((dt.datetime.now(dt.UTC) - _parse_iso(doc["createdAt"])).total_seconds()) < 600
    assert doc["commitTimestamp"] == cli.iso_ms(Table.open(str(table_path)).snapshot(1).timestamp)
    record = json.loads((table_path / "_savepoints" / "sp1.json").read_text())
    assert (record["version"], record["reason"], record["createdBy"]) == (1, "risky backfill", "alice")
    assert (table_path / "_savepoints" / doc["manifest"]).is_file()
    # the savepoint keeps version 1's single file, not the latest version's three
    sp = Table.open(str(table_path)).get_savepoint("sp1")
    assert (sp.version, sp.num_files) == (1, 1)


@pytest.mark.parametrize("name", ["bad/name", "../escape", "a b", ".hidden", "x" * 200])
def test_savepoint_create_invalid_name(table_path: Path, name: str) -> None:
    assert_error(run("savepoint", "create", str(table_path), name), "invalid savepoint name")
    assert not (table_path / "_savepoints").exists() or not list((table_path / "_savepoints").iterdir())
    assert not (table_path.parent / "escape.json").exists()


def test_savepoint_create_duplicate_name(table_path: Path) -> None:
    run_json("savepoint", "create", str(table_path), "sp1", "--version", "1")
    assert_error(run("savepoint", "create", str(table_path), "sp1"), "already exists")
    assert Table.open(str(table_path)).get_savepoint("sp1").version == 1  # the first one is untouched


def test_savepoint_create_bad_version_and_expiry(table_path: Path) -> None:
    assert_error(run("savepoint", "create", str(table_path), "sp1", "--version", "42"), "42")
    assert_error(
        run("savepoint", "create", str(table_path), "sp1", "--expires-at", "2001-01-01"), "not in the future"
    )
    assert_error(run("savepoint", "create", str(table_path), "sp1", "--expires-at", "soon"), "soon")
    assert Table.open(str(table_path)).savepoints() == []


def test_savepoint_create_refuses_version_with_missing_files(overwritten: Path) -> None:
    """Version 3's files are no longer live after the overwrite: one of them is gone (vacuumed)."""
    t = Table.open(str(overwritten))
    v3, live = ({f.path for f in t.snapshot(version=v).files()} for v in (3, 4))
    gone = min(v3 - live)
    (overwritten / gone).unlink()
    assert_error(run("savepoint", "create", str(overwritten), "sp1", "--version", "3"), "missing", gone)
    assert Table.open(str(overwritten)).savepoints() == []


# ----------------------------------------------------------------------------- savepoint list / delete
def test_savepoint_list_json_and_human(table_path: Path) -> None:
    assert run_json("savepoint", "list", str(table_path)) == []
    assert "0 savepoint(s)" in run_human("savepoint", "list", str(table_path))
    run_json("savepoint", "create", str(table_path), "latest", "--reason", "nightly")
    run_json("savepoint", "create", str(table_path), "first", "--version", "1", "--created-by", "bob")
    docs = run_json("savepoint", "list", str(table_path))
    assert [(d["name"], d["version"]) for d in docs] == [("first", 1), ("latest", 3)]
    assert docs[0]["createdBy"] == "bob"
    assert docs[1]["reason"] == "nightly"
    out = run_human("savepoint", "list", str(table_path))
    assert "2 savepoint(s)" in out
    assert re.search(r"^\s*first\s+1\s+1\s+\d+\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+bob\s+-\s+-\s*$", out, re.M)
    assert re.search(r"^\s*latest\s+3\s+3\s+\d+\s+.*\s+nightly\s*$", out, re.M)


def test_savepoint_delete_human_and_json(table_path: Path) -> None:
    manifests = table_path / "_savepoints"
    first = run_json("savepoint", "create", str(table_path), "sp1", "--version", "2")
    run_json("savepoint", "create", str(table_path), "sp2")
    out = run_human("savepoint", "delete", str(table_path), "sp1")
    assert out.strip() == "savepoint sp1 deleted (it kept version 2)"
    assert not (manifests / "sp1.json").exists()
    assert not (manifests / first["manifest"]).exists()
    doc = run_json("savepoint", "delete", str(table_path), "sp2")
    assert (doc["name"], doc["version"]) == ("sp2", 3)
    assert list(manifests.iterdir()) == []
    assert run_json("savepoint", "list", str(table_path)) == []


def test_savepoint_delete_missing(table_path: Path) -> None:
    assert_error(run("savepoint", "delete", str(table_path), "nope"), "no savepoint named 'nope'")
    assert_error(run("savepoint", "delete", str(table_path), "bad/name"), "invalid savepoint name")


def test_savepoint_without_subcommand_is_usage(table_path: Path) -> None:
    assert run("savepoint").exit_code == 2
    assert run("savepoint", "rename", str(table_path), "x").exit_code == 2


# ----------------------------------------------------------------------------- restore
def test_restore_savepoint_human_then_idempotent(overwritten: Path) -> None:
    path = overwritten
    Table.open(str(path)).create_savepoint("v3", version=3)
    before = _data_files(path)
    out = run_human("restore", str(path), "--savepoint", "v3")
    assert "restored version 3 as version 5" in out
    assert re.search(r"target version\s*│\s*3\s*│", out)
    assert re.search(r"committed version\s*│\s*5\s*│", out)
    assert re.search(r"files re-added\s*│\s*3\s*│", out)
    assert re.search(r"files removed\s*│\s*1\s*│", out)
    assert "numRestoredFiles=3" in out
    assert _latest(path) == 5
    assert _ids(path) == [1, 2, 3, 10, 11, 12]
    assert _data_files(path) == before  # a restore writes no data file
    newest = Table.open(str(path)).history(1)[0]
    assert newest["operation"] == "RESTORE"
    assert newest["operationParameters"]["savepoint"] == "v3"
    # a second identical restore commits nothing and reports the first one's version
    again = run_human("restore", str(path), "--savepoint", "v3")
    assert "nothing to restore: version 5 already holds version 3" in again
    assert _latest(path) == 5


def test_restore_savepoint_json(overwritten: Path) -> None:
    Table.open(str(overwritten)).create_savepoint("v3", version=3)
    doc = run_json("restore", str(overwritten), "--savepoint", "v3")
    assert (doc["targetVersion"], doc["version"], doc["committed"], doc["dryRun"]) == (3, 5, True, False)
    assert len(doc["filesToAdd"]) == 3
    assert len(doc["filesToRemove"]) == 1
    assert doc["missingFiles"] == []
    assert doc["foreignVersions"] == []
    assert doc["metrics"]["numRestoredFiles"] == 3
    assert doc["metrics"]["numRemovedFiles"] == 1
    assert doc["metrics"]["numOfFilesAfterRestore"] == 3
    for f in doc["filesToAdd"]:
        assert (overwritten / f).is_file()
    again = run_json("restore", str(overwritten), "--savepoint", "v3")
    assert (again["version"], again["committed"], again["filesToAdd"]) == (5, False, [])


def test_restore_dry_run_changes_nothing(overwritten: Path) -> None:
    log = sorted(p.name for p in (overwritten / "_delta_log").iterdir())
    doc = run_json("restore", str(overwritten), "--version", "1", "--dry-run")
    assert (doc["dryRun"], doc["committed"], doc["version"], doc["targetVersion"]) == (True, False, None, 1)
    assert len(doc["filesToAdd"]) == 1
    assert len(doc["filesToRemove"]) == 1
    out = run_human("restore", str(overwritten), "--version", "1", "--dry-run")
    assert "dry run: restoring version 1 would commit a new version" in out
    assert "files to re-add:" in out
    assert doc["filesToAdd"][0] in out
    assert sorted(p.name for p in (overwritten / "_delta_log").iterdir()) == log
    assert _ids(overwritten) == [99]


def test_restore_version_and_timestamp(overwritten: Path) -> None:
    doc = run_json("restore", str(overwritten), "--version", "2")
    assert (doc["targetVersion"], doc["version"]) == (2, 5)
    assert _ids(overwritten) == [1, 2, 10, 11, 12]
    v1 = Table.open(str(overwritten)).snapshot(1).timestamp
    doc = run_json("restore", str(overwritten), "--timestamp", cli.iso_ms(v1) or "")
    assert (doc["targetVersion"], doc["version"]) == (1, 6)
    assert _ids(overwritten) == [1, 2]
    doc = run_json("restore", str(overwritten), "--timestamp", str(v1 + 0))  # epoch milliseconds
    assert (doc["targetVersion"], doc["committed"], doc["version"]) == (1, False, 6)


@pytest.mark.parametrize(
    "targets",
    [[], ["--version", "1", "--savepoint", "x"], ["--version", "1", "--timestamp", "2024-01-01"]],
)
def test_restore_needs_exactly_one_target(table_path: Path, targets: list[str]) -> None:
    result = run("restore", str(table_path), *targets)
    assert result.exit_code == 2, result.output
    assert _latest(table_path) == 3


def test_restore_errors(overwritten: Path) -> None:
    assert_error(run("restore", str(overwritten), "--savepoint", "nope"), "no savepoint named 'nope'")
    assert_error(run("restore", str(overwritten), "--version", "42"), "42")
    assert_error(run("restore", str(overwritten), "--timestamp", "yesterday-ish"), "yesterday-ish")
    assert_error(run("restore", str(overwritten), "--timestamp", "2001-01-01"), "before the earliest commit")
    assert _latest(overwritten) == 4


def test_restore_fails_when_a_file_was_deleted_by_hand(overwritten: Path) -> None:
    Table.open(str(overwritten)).create_savepoint("v3", version=3)
    plan = run_json("restore", str(overwritten), "--savepoint", "v3", "--dry-run")
    gone = plan["filesToAdd"][0]
    (overwritten / gone).unlink()
    dry = run_json("restore", str(overwritten), "--savepoint", "v3", "--dry-run")
    assert dry["missingFiles"] == [gone]
    out = run_human("restore", str(overwritten), "--savepoint", "v3", "--dry-run")
    assert "missing files (the restore cannot commit while they are gone):" in out
    for args in (["--json"], []):
        assert_error(run("restore", str(overwritten), "--savepoint", "v3", *args), "missing", gone)
    assert _latest(overwritten) == 4
    assert _ids(overwritten) == [99]


def test_restore_foreign_commits_refused_unless_forced(table_path: Path) -> None:
    t = Table.open(str(table_path))
    t.create_savepoint("sp")
    t.write(event_rows([50], DAY_A), tags={"owner": "run-1"})  # v4: ours
    t.write(event_rows([60], DAY_B), tags={"owner": "someone-else"})  # v5: foreign
    assert_error(
        run("restore", str(table_path), "--savepoint", "sp", "--owner", "run-1"), "[5]", "other writers"
    )
    assert _latest(table_path) == 5
    plan = run_json("restore", str(table_path), "--savepoint", "sp", "--owner", "run-1", "--dry-run")
    assert plan["foreignVersions"] == [5]
    doc = run_json("restore", str(table_path), "--savepoint", "sp", "--owner", "run-1", "--force")
    assert (doc["committed"], doc["version"], doc["foreignVersions"]) == (True, 6, [5])
    assert _ids(table_path) == [1, 2, 3, 10, 11, 12]
    info = Table.open(str(table_path)).history(1)[0]
    assert info["discardedVersions"] == [5]
    assert info["tags"] == {"owner": "run-1"}


def test_restore_own_commits_are_not_foreign(table_path: Path) -> None:
    t = Table.open(str(table_path))
    t.create_savepoint("sp")
    t.write(event_rows([50], DAY_A), tags={"owner": "run-1"})
    out = run_human("restore", str(table_path), "--savepoint", "sp", "--owner", "run-1")
    assert re.search(r"foreign versions\s*│\s*-\s*│", out)
    assert "restored version 3 as version 5" in out


# ----------------------------------------------------------------------------- vacuum
def test_vacuum_is_a_dry_run_unless_execute(overwritten: Path) -> None:
    before = _data_files(overwritten)
    removed = before - {f["path"] for f in run_json("files", str(overwritten))["files"]}
    assert len(removed) == 3
    doc = run_json("vacuum", str(overwritten), "--retain-hours", "0", "--no-enforce-retention")
    assert doc["dryRun"] is True
    assert set(doc["files"]) == removed
    assert doc["numFiles"] == 3
    assert doc["bytes"] == sum((overwritten / f).stat().st_size for f in removed)
    assert (doc["deleted"], doc["startVersion"], doc["endVersion"]) == (0, None, None)
    out = run_human("vacuum", str(overwritten), "--retain-hours", "0", "--no-enforce-retention")
    assert f"dry run: vacuum would delete 3 file(s), {doc['bytes']} bytes (retention 0 hours)" in out
    assert "run again with --execute" in out
    for f in removed:
        assert f in out
    assert _data_files(overwritten) == before
    assert _latest(overwritten) == 4  # a dry run commits nothing


def test_vacuum_execute_json(overwritten: Path) -> None:
    live = {f["path"] for f in run_json("files", str(overwritten))["files"]}
    removed = _data_files(overwritten) - live
    args = ("vacuum", str(overwritten), "--retain-hours", "0", "--no-enforce-retention", "--execute")
    doc = run_json(*args)
    assert doc["dryRun"] is False
    assert set(doc["files"]) == removed
    assert doc["deleted"] == 3
    assert (doc["startVersion"], doc["endVersion"]) == (5, 6)
    assert doc["metrics"]["numDeletedFiles"] == 3
    assert _data_files(overwritten) == live
    ops = [e["operation"] for e in Table.open(str(overwritten)).history(2)]
    assert ops == ["VACUUM END", "VACUUM START"]
    assert _ids(overwritten) == [99]
    again = run_json(*args)
    assert (again["numFiles"], again["deleted"]) == (0, 0)


def test_vacuum_execute_human(overwritten: Path) -> None:
    out = run_human("vacuum", str(overwritten), "--retain-hours", "0", "--no-enforce-retention", "--execute")
    assert re.search(r"vacuum deleted 3 file\(s\), \d+ bytes \(retention 0 hours\)", out)
    assert "commits: VACUUM START version 5, VACUUM END version 6" in out
    assert "deleted files:" in out
    assert len(_data_files(overwritten)) == 1


def test_vacuum_keeps_savepoint_files(overwritten: Path) -> None:
    Table.open(str(overwritten)).create_savepoint("keep", version=2)
    v2_files = {f["path"] for f in run_json("files", str(overwritten), "--version", "2")["files"]}
    v3_only = (
        _data_files(overwritten)
        - v2_files
        - {f["path"] for f in run_json("files", str(overwritten))["files"]}
    )
    doc = run_json("vacuum", str(overwritten), "--retain-hours", "0", "--no-enforce-retention", "--execute")
    assert set(doc["files"]) == v3_only
    assert len(v3_only) == 1
    for f in v2_files:
        assert (overwritten / f).is_file()
    assert (overwritten / "_savepoints" / "keep.json").is_file()
    assert run_json("restore", str(overwritten), "--savepoint", "keep")["committed"] is True
    assert _ids(overwritten) == [1, 2, 10, 11, 12]


def test_vacuum_retention_below_table_limit_needs_override(overwritten: Path) -> None:
    before = _data_files(overwritten)
    for extra in ([], ["--execute"], ["--json"]):
        line = assert_error(run("vacuum", str(overwritten), "--retain-hours", "0", *extra), "retention")
        assert "--no-enforce-retention" in line
    assert _data_files(overwritten) == before
    assert _latest(overwritten) == 4  # no VACUUM START was committed


def test_vacuum_default_retention_keeps_fresh_files(overwritten: Path) -> None:
    before = _data_files(overwritten)
    doc = run_json("vacuum", str(overwritten), "--execute")
    assert (doc["retentionHours"], doc["numFiles"], doc["deleted"]) == (168, 0, 0)
    assert _data_files(overwritten) == before
    assert "dry run: vacuum would delete 0 file(s), 0 bytes (retention 168 hours)" in run_human(
        "vacuum", str(overwritten)
    )


def test_vacuum_negative_retention_is_usage(overwritten: Path) -> None:
    assert run("vacuum", str(overwritten), "--retain-hours", "-1").exit_code == 2


# ----------------------------------------------------------------------------- cleanup-log
def _log_names(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "_delta_log").iterdir())


def test_cleanup_log_dry_run_then_execute(overwritten: Path) -> None:
    Table.open(str(overwritten)).checkpoint()  # checkpoint at 4
    before = _log_names(overwritten)
    # the commits below 4 and the version checksum the engine wrote beside each
    commits_below = sorted(f"{v:020d}.{ext}" for v in range(4) for ext in ("crc", "json"))
    doc = run_json("cleanup-log", str(overwritten), "--retain-hours", "0")  # a dry run by default
    assert doc == {
        "dryRun": True,
        "numFiles": 8,
        "files": commits_below,
        "checkpointVersion": 4,
        "oldestVersionKept": 4,
        "tempFiles": [],
        "sidecarFiles": [],
    }
    out = run_human("cleanup-log", str(overwritten), "--retain-hours", "0", "--dry-run")  # the old flag
    assert "dry run: log cleanup would delete 8 file(s) below checkpoint 4; oldest version kept: 4" in out
    out = run_human("cleanup-log", str(overwritten), "--retain-hours", "0", "--execute", "--dry-run")
    assert "dry run: log cleanup would delete 8 file(s)" in out  # asked for both: the safe one wins
    assert _log_names(overwritten) == before
    out = run_human("cleanup-log", str(overwritten), "--retain-hours", "0", "--execute")
    assert "log cleanup deleted 8 file(s) below checkpoint 4" in out
    assert _log_names(overwritten) == sorted(set(before) - set(commits_below))
    assert _ids(overwritten) == [99]
    assert run_json("history", str(overwritten))[-1]["version"] == 4


def test_cleanup_log_default_retention_keeps_everything(overwritten: Path) -> None:
    Table.open(str(overwritten)).checkpoint()
    before = _log_names(overwritten)
    doc = run_json("cleanup-log", str(overwritten))
    assert (doc["numFiles"], doc["checkpointVersion"], doc["oldestVersionKept"]) == (0, None, 0)
    out = run_human("cleanup-log", str(overwritten))
    assert "log cleanup: nothing to remove - no checkpoint is older than the log retention" in out
    assert "(the table's delta.logRetentionDuration, 30 days unless set)" in out
    assert "None" not in out and "0 file(s)" not in out
    out = run_human("cleanup-log", str(overwritten), "--retain-hours", "48")
    assert "dry run: log cleanup: nothing to remove - no checkpoint is older than the log retention" in out
    assert "(48 hours)" in out
    assert _log_names(overwritten) == before


def test_cleanup_log_removes_stale_temp_files(overwritten: Path) -> None:
    """A crashed writer's temp file (2 hours old) is reported by the dry run and deleted by the run."""
    tmp_dir = overwritten / "_delta_log" / ".tmp"
    tmp_dir.mkdir(exist_ok=True)
    torn = tmp_dir / ".00000000000000000009.json.0f.tmp"
    torn.write_bytes(b"{")
    os.utime(torn, (time.time() - 7200, time.time() - 7200))
    out = run_human("cleanup-log", str(overwritten))
    assert "dry run: log cleanup would delete 1 stale temp file(s) in _delta_log/.tmp/" in out
    assert torn.exists()
    assert run_json("cleanup-log", str(overwritten), "--execute")["tempFiles"] == [torn.name]
    assert not torn.exists() and _ids(overwritten) == [99]


def test_restore_savepoint_after_vacuum_and_log_cleanup(overwritten: Path) -> None:
    """The issue's scenario through the CLI: savepoint, vacuum (0 h), log cleanup (0 h), restore."""
    uri = str(overwritten)
    run_json("savepoint", "create", uri, "v3", "--version", "3")
    run_json("vacuum", uri, "--retain-hours", "0", "--no-enforce-retention", "--execute")
    run_json("checkpoint", uri)
    cleaned = run_json("cleanup-log", uri, "--retain-hours", "0", "--execute")
    assert f"{3:020d}.json" in cleaned["files"]
    doc = run_json("restore", uri, "--savepoint", "v3")
    assert (doc["committed"], doc["missingFiles"]) == (True, [])
    assert _ids(overwritten) == [1, 2, 3, 10, 11, 12]


# ----------------------------------------------------------------------------- health
def test_health_json(overwritten: Path) -> None:
    Table.open(str(overwritten)).create_savepoint("sp", version=2)
    doc = run_json("health", str(overwritten))
    assert doc["version"] == 4
    assert doc["numFiles"] == 1
    assert doc["sizeBytes"] == sum(f["size"] for f in run_json("files", str(overwritten))["files"])
    assert doc["smallFiles"] == 1
    assert doc["lastCheckpointVersion"] is None
    assert doc["commitsSinceCheckpoint"] == 5
    assert doc["tombstones"] == 3
    assert doc["reclaimableBytes"] == 0  # the tombstones are younger than 7 days
    assert doc["savepoints"] == ["sp"]
    assert doc["expiredSavepoints"] == []
    assert (doc["oldestLogVersion"], doc["oldestRestorableVersion"]) == (0, 0)
    assert doc["checksumProblems"] == []  # the engine's own `.crc` of version 4 agrees with replay
    assert run_json("health", str(overwritten), "--small-file-bytes", "1")["smallFiles"] == 0


def test_health_human(overwritten: Path) -> None:
    Table.open(str(overwritten)).checkpoint()
    out = run_human("health", str(overwritten))
    assert re.search(r"version\s*│\s*4\s*│", out)
    assert re.search(r"last checkpoint\s*│\s*4\s*│", out)
    assert re.search(r"commits since checkpoint\s*│\s*0\s*│", out)
    assert re.search(r"tombstones\s*│\s*3\s*│", out)
    assert re.search(r"small files\s*│\s*1 \(< \d+ bytes\)\s*│", out)
    assert re.search(r"savepoints\s*│\s*-\s*│", out)
    assert re.search(r"oldest restorable version\s*│\s*0\s*│", out)
    assert re.search(r"version checksum\s*│\s*agrees with the log\s*│", out)
    (overwritten / "_delta_log" / f"{4:020d}.crc").write_text('{"numFiles": 1}')
    out = run_human("health", str(overwritten))
    flat = out.replace("\n", "")
    assert "DISAGREES with the log: 00000000000000000004.crc: not a version checksum: required" in flat


# ----------------------------------------------------------------------------- common behaviour
MAINTENANCE_COMMANDS = [
    ["savepoint", "create", "{uri}", "sp"],
    ["savepoint", "list", "{uri}"],
    ["savepoint", "delete", "{uri}", "sp"],
    ["restore", "{uri}", "--version", "0"],
    ["vacuum", "{uri}"],
    ["cleanup-log", "{uri}"],
    ["health", "{uri}"],
]


@pytest.mark.parametrize("command", MAINTENANCE_COMMANDS, ids=lambda c: "-".join(c[:2]).replace("-{uri}", ""))
@pytest.mark.parametrize("as_json", [False, True])
def test_missing_table_is_one_line_error(tmp_path: Path, command: list[str], as_json: bool) -> None:
    missing = tmp_path / "nothing-here"
    args = [a.format(uri=missing) for a in command]
    assert_error(run(*args, *(["--json"] if as_json else [])), "nothing-here")
    assert not (missing / "_savepoints").exists()


def test_help_lists_the_maintenance_commands() -> None:
    result = run("--help", env=WIDE)
    assert result.exit_code == 0
    for name in ("savepoint", "restore", "vacuum", "cleanup-log", "health", "describe", "checkpoint"):
        assert re.search(rf"│ {re.escape(name)}\s", result.stdout), name
    sub = run("savepoint", "--help", env=WIDE)
    assert sub.exit_code == 0
    for name in ("create", "list", "delete"):
        assert re.search(rf"│ {name}\s", sub.stdout), name


def test_storage_options_reach_maintenance_commands(
    overwritten: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    real_open = Table.open

    def spy(uri: str, *, storage_options: dict[str, Any] | None = None) -> Table:
        seen.append(storage_options)
        return real_open(uri, storage_options=storage_options)

    monkeypatch.setattr(cli.Table, "open", staticmethod(spy))
    result = run("-o", "auto_mkdir=true", "savepoint", "create", str(overwritten), "sp", "--json")
    assert result.exit_code == 0, result.output
    result = run("-o", "auto_mkdir=true", "vacuum", str(overwritten), "--json")
    assert result.exit_code == 0, result.output
    assert seen == [{"auto_mkdir": True}, {"auto_mkdir": True}]


# ----------------------------------------------------------------------------- corrupt savepoint records
@pytest.mark.parametrize("command", [["savepoint", "list"], ["vacuum"], ["health"]])
def test_corrupt_savepoint_record_is_one_line_error(table_path: Path, command: list[str]) -> None:
    Table.open(str(table_path)).create_savepoint("sp")
    (table_path / "_savepoints" / "sp.json").write_text("{truncated")
    assert_error(run(*command, str(table_path)), "sp.json")


def test_corrupt_savepoint_record_can_be_deleted(table_path: Path) -> None:
    Table.open(str(table_path)).create_savepoint("sp")
    (table_path / "_savepoints" / "sp.json").write_text("{truncated")
    result = run("savepoint", "delete", str(table_path), "sp")
    assert result.exit_code == 0, result.output
    assert not (table_path / "_savepoints" / "sp.json").exists()
    assert run("vacuum", str(table_path)).exit_code == 0


def test_plan_says_what_the_table_needs_and_why(tmp_path: Path) -> None:
    path = events_table(tmp_path / "events")
    for i in range(4):
        Table.open(str(path)).write(event_rows([100 + i], DAY_A))
    doc = run_json("plan", str(path), "--set", "quiet_minutes=0")
    (compact,) = [a for a in doc["actions"] if a["kind"] == "compact"]
    assert compact["partition"] == {"day": DAY_A} and compact["observed"] == 6
    assert any(
        s["partition"] == {"day": DAY_B} and s["reason"] == "healthy: 1 small files < 5"
        for s in doc["skipped"]
    )
    text = run("plan", str(path), "--set", "quiet_minutes=0", env={"COLUMNS": "80"})
    assert text.exit_code == 0 and "min_input_files: 6 vs 5" in text.output
    bad = run("plan", str(path), "--set", "min_input_files=1")
    assert bad.exit_code == 1 and "min_input_files must be >= 2" in bad.stderr
    assert run("plan", str(path), "--set", "nope").exit_code == 1


def test_vacuum_lite_lists_the_logs_tombstones_only(tmp_path: Path) -> None:
    path = events_table(tmp_path / "events")
    Table.open(str(path)).write(event_rows([1], DAY_A), mode="overwrite")
    (path / "orphan.parquet").write_bytes(b"x")
    doc = run_json("vacuum", str(path), "--lite", "--retain-hours", "0", "--no-enforce-retention")
    assert doc["dryRun"] and doc["numFiles"] == 3 and "orphan.parquet" not in doc["files"]
