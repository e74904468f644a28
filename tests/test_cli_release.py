"""`txnlog release publish|show|history|rollback` on real tables and a real release log: the
records on disk, the JSON and human output, the tables rolled back, and bad input that writes nothing
(usage errors exit 2, engine refusals exit 1 with one `error:` line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import Result

from airflow_txnlog.cli.release import PUBLISH_ID_RE
from airflow_txnlog.engine import Releases, Table
from airflow_txnlog.engine.validate import SAFE_NAME_RE
from tests.cli_support import DAY_A, WIDE, event_rows, events_table, run, run_json


def _tree(root: Path) -> dict[str, int]:
    """Every file (its size) and folder (-1) under `root`: what "writes nothing" compares."""
    return {str(p.relative_to(root)): p.stat().st_size if p.is_file() else -1 for p in root.rglob("*")}


def _ids(path: Path, version: int | None = None) -> list[int]:
    return sorted(Table.open(str(path)).snapshot(version).to_arrow().column("id").to_pylist())


def _records(log: Path) -> list[str]:
    return sorted(p.name for p in (log / "releases").iterdir())


def assert_error(result: Result, *fragments: str) -> str:
    """Exit code 1, nothing on stdout, one `error: ...` line on stderr containing every fragment."""
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Path, Path]:
    """Two tables (versions 0-3 each, events_table's rows)."""
    return events_table(tmp_path / "a"), events_table(tmp_path / "b")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "log"


# ----------------------------------------------------------------------------- publish, show, history
def test_publish_create_show_history(tables: tuple[Path, Path], log: Path) -> None:
    a, b = tables
    doc = run_json("release", "publish", str(log), f"{a}=1", f"{b}=2", "--create", "--note", "first")
    assert (doc["sequence"], doc["kind"], doc["rollbackTo"], doc["note"]) == (0, "publish", None, "first")
    assert doc["versions"] == {str(a): 1, str(b): 2}
    assert doc["tableIds"] == {str(p): Table.open(str(p)).snapshot().metadata.id for p in (a, b)}
    assert doc["publishedAt"].endswith("Z") and doc["publishedBy"] is None
    assert _records(log) == [f"{0:020d}.json"]
    assert run_json("release", "show", str(log)) == {**doc, "released": True}

    later = run_json("release", "publish", str(log), f"{a}=3")  # b keeps its version
    assert (later["sequence"], later["versions"]) == (1, {str(a): 3, str(b): 2})
    current = Releases.open(str(log)).current()
    assert current is not None
    assert Table.open(str(a)).snapshot(release=current).version == 3

    history = run_json("release", "history", str(log))
    assert [h["sequence"] for h in history] == [1, 0]
    assert history[1] == doc
    assert [h["sequence"] for h in run_json("release", "history", str(log), "--limit", "1")] == [1]
    assert run_json("release", "show", str(log), "--sequence", "0") == {**doc, "released": True}


def test_human_output(tables: tuple[Path, Path], log: Path) -> None:
    a, b = tables
    out = run("release", "publish", str(log), f"{a}=1", f"{b}=2", "--create", "--note", "nightly", env=WIDE)
    assert out.exit_code == 0 and out.stderr == "", out.output
    assert "Released 0" in out.stdout and "nightly" in out.stdout
    shown = run("release", "show", str(log), env=WIDE)
    assert shown.exit_code == 0, shown.output
    assert "Release 0" in shown.stdout and str(a) in shown.stdout and str(b) in shown.stdout
    history = run("release", "history", str(log), env=WIDE)
    assert history.exit_code == 0, history.output
    assert "1 release(s), newest first" in history.stdout and f"{a}=1" in history.stdout
    narrow = run("release", "history", str(log), env={"COLUMNS": "80"})  # one record per release
    # (a long path folds at 80 columns: its end stays on one line)
    assert narrow.exit_code == 0 and "0  publish" in narrow.stdout and "/b=2" in narrow.stdout


def test_relative_table_paths_are_recorded_as_the_engine_names_them(
    tables: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    doc = run_json("release", "publish", "log", "a=1", "./b/=2", "--create")
    assert doc["versions"] == {str(tmp_path / "a"): 1, str(tmp_path / "b"): 2}
    current = Releases.open(str(tmp_path / "log")).current()
    assert current is not None
    assert Table.open("a").snapshot(release=current).version == 1  # readers find it by any spelling
    assert Table.open(str(tmp_path / "b")).snapshot(release=current).version == 2


def test_nothing_released_yet_exits_1(log: Path) -> None:
    Releases.create(str(log))
    out = run("release", "show", str(log))
    assert out.exit_code == 1
    assert "nothing is released yet" in out.stdout
    as_json = run("release", "show", str(log), "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout) == {"log": str(log), "released": False, "sequence": None}
    assert run_json("release", "history", str(log)) == []


def test_retry_with_the_same_publish_id_returns_the_first_release(
    tables: tuple[Path, Path], log: Path
) -> None:
    a, _ = tables
    first = run_json("release", "publish", str(log), f"{a}=1", "--create", "--publish-id", "load-1")
    again = run("release", "publish", str(log), f"{a}=2", "--publish-id", "load-1", env=WIDE)
    assert again.exit_code == 0, again.output
    assert "publish id load-1 was published already, as release 0" in again.stdout
    assert run_json("release", "publish", str(log), f"{a}=2", "--publish-id", "load-1") == first
    assert _records(log) == [f"{0:020d}.json"]


def test_create_publishes_into_an_existing_log(tables: tuple[Path, Path], log: Path) -> None:
    a, _ = tables
    created = Releases.create(str(log))
    doc = run_json("release", "publish", str(log), f"{a}=1", "--create")
    assert doc["logId"] == created.id


# ----------------------------------------------------------------------------- engine refusals (exit 1)
def test_missing_log_is_an_error_naming_create(tables: tuple[Path, Path], tmp_path: Path, log: Path) -> None:
    a, _ = tables
    before = _tree(tmp_path)
    assert_error(run("release", "publish", str(log), f"{a}=1"), "no release log", "--create")
    for command in (("show",), ("history",), ("rollback", "--to", "0")):
        assert_error(run("release", command[0], str(log), *command[1:]), "no release log", "--create")
    assert _tree(tmp_path) == before
    assert not log.exists()


@pytest.mark.parametrize(
    ("pairs", "fragments"),
    [
        (["{a}=9"], ("version 9 does not exist",)),
        (["{a}=1", "{missing}=0"], ("no Delta table",)),
    ],
)
def test_create_with_a_bad_table_version_creates_nothing(
    tables: tuple[Path, Path], tmp_path: Path, log: Path, pairs: list[str], fragments: tuple[str, ...]
) -> None:
    a, _ = tables
    args = [p.format(a=a, missing=tmp_path / "missing") for p in pairs]
    before = _tree(tmp_path)
    assert_error(run("release", "publish", str(log), *args, "--create"), *fragments)
    assert _tree(tmp_path) == before


def test_moving_a_table_back_is_refused_and_writes_nothing(
    tables: tuple[Path, Path], tmp_path: Path, log: Path
) -> None:
    a, b = tables
    run_json("release", "publish", str(log), f"{a}=3", f"{b}=3", "--create")
    before = _tree(tmp_path)
    assert_error(run("release", "publish", str(log), f"{a}=1"), "never moves a table back")
    assert_error(run("release", "publish", str(log), f"{b}=3", f"{a}=7"), "version 7 does not exist")
    assert_error(run("release", "show", str(log), "--sequence", "5"), "release 5 does not exist")
    assert_error(run("release", "rollback", str(log), "--to", "5"), "release 5 does not exist")
    assert _tree(tmp_path) == before


# ----------------------------------------------------------------------------- bad usage (exit 2)
BAD: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "pair without '='": (["publish", "{log}", "{a}", "--create"], ("expected TABLE=VERSION",)),
    "pair without a table": (["publish", "{log}", "=1", "--create"], ("expected TABLE=VERSION",)),
    "version not a number": (["publish", "{log}", "{a}=v1", "--create"], ("non-negative integer", "'v1'")),
    "negative version": (["publish", "{log}", "{a}=-1", "--create"], ("non-negative integer", "'-1'")),
    "no table": (["publish", "{log}", "--create"], ("Missing argument",)),
    "one table twice": (["publish", "{log}", "{a}=1", "{a}/=2", "--create"], ("names the same table",)),
    "bad publish id": (
        ["publish", "{log}", "{a}=1", "--create", "--publish-id", "../x"],
        ("--publish-id", "letters, digits"),
    ),
    "negative sequence": (["show", "{log}", "--sequence", "-1"], ("greater than or equal to 0",)),
    "negative limit": (["history", "{log}", "--limit", "-1"], ("greater than or equal to 0",)),
    "rollback without --to": (["rollback", "{log}"], ("--to",)),
    "rollback to a negative release": (["rollback", "{log}", "--to", "-1"], ("greater than or equal to 0",)),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_usage_is_exit_2_and_writes_nothing(
    tables: tuple[Path, Path], tmp_path: Path, log: Path, case: str
) -> None:
    a, _ = tables
    args, fragments = BAD[case]
    before = _tree(tmp_path)
    result = run("release", *(x.format(log=log, a=a) for x in args), env=WIDE)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert result.stdout == "" and "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)
    assert _tree(tmp_path) == before


def test_the_publish_id_rule_is_the_engines() -> None:
    assert PUBLISH_ID_RE.pattern == SAFE_NAME_RE.pattern


# ----------------------------------------------------------------------------- rollback
def test_rollback_restores_every_table_as_a_new_release(tables: tuple[Path, Path], log: Path) -> None:
    a, b = tables
    run_json("release", "publish", str(log), f"{a}=1", f"{b}=2", "--create")
    run_json("release", "publish", str(log), f"{a}=3", f"{b}=3")
    doc = run_json("release", "rollback", str(log), "--to", "0", "--note", "bad load")
    assert (doc["sequence"], doc["kind"], doc["rollbackTo"], doc["note"]) == (2, "rollback", 0, "bad load")
    assert doc["versions"] == {str(a): 4, str(b): 4}  # each restore is a new commit
    assert _ids(a) == _ids(a, 1) and _ids(b) == _ids(b, 2)
    assert Table.open(str(a)).history(1)[0]["operation"] == "RESTORE"
    again = run("release", "rollback", str(log), "--to", "0", env=WIDE)  # converged: nothing to do
    assert again.exit_code == 0, again.output
    assert "nothing to roll back: release 2 already restores release 0" in again.stdout
    assert _records(log) == [f"{s:020d}.json" for s in range(3)]
    assert Table.open(str(a)).latest_version() == 4


def test_rollback_human_names_the_tables_restored(tables: tuple[Path, Path], log: Path) -> None:
    a, b = tables
    run_json("release", "publish", str(log), f"{a}=1", f"{b}=3", "--create")
    run_json("release", "publish", str(log), f"{a}=3")
    out = run("release", "rollback", str(log), "--to", "0", env=WIDE)
    assert out.exit_code == 0, out.output
    assert "rolled back to release 0 as release 2" in out.stdout
    assert f"{a}: version 4 (release 1: 3)" in out.stdout
    assert f"{b}:" not in out.stdout  # b was not restored (already at its version)


def test_rollback_refuses_foreign_commits_unless_forced(
    tables: tuple[Path, Path], tmp_path: Path, log: Path
) -> None:
    a, b = tables
    run_json("release", "publish", str(log), f"{a}=1", f"{b}=1", "--create")
    run_json("release", "publish", str(log), f"{a}=3", f"{b}=2")  # b's v3 comes after release 1
    Table.open(str(b)).write(event_rows([50], DAY_A), tags={"owner": "run-1"})  # b v4: ours
    before = _tree(tmp_path)
    line = assert_error(run("release", "rollback", str(log), "--to", "0"), "other writers", "--force")
    assert "versions [3, 4]" in line
    assert_error(run("release", "rollback", str(log), "--to", "0", "--owner", "run-1"), "versions [3] ")
    assert _tree(tmp_path) == before  # nothing restored in either table, no record
    doc = run_json("release", "rollback", str(log), "--to", "0", "--owner", "run-1", "--force")
    assert (doc["kind"], doc["versions"]) == ("rollback", {str(a): 4, str(b): 5})
    assert _ids(a) == _ids(a, 1) and _ids(b) == _ids(b, 1)
    assert Table.open(str(b)).history(1)[0]["tags"] == {"owner": "run-1"}
