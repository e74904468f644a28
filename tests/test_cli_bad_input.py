"""Bad input catalogue for `txnlog`: each malformed option is a clean usage error (exit code 2, a
message naming what is accepted, no traceback) and the table on disk is left exactly as it was.

Engine-side refusals (exit code 1, one `error:` line) are covered per command in
tests/test_cli_maintenance.py and tests/test_cli.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import WIDE, events_table, run

SECRET = "s3cr3t-value"


def files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    return events_table(tmp_path / "events")


CASES: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "storage option without '='": (["-o", "novalue", "vacuum", "{t}", "--execute"], ("KEY=VALUE",)),
    "storage option without a key": (["-o", "=x", "cleanup-log", "{t}"], ("KEY=VALUE",)),
    "storage option with broken JSON": (
        ["-o", f'client_kwargs={{"token": "{SECRET}"', "restore", "{t}", "--version", "1"],
        ("client_kwargs", "true/false/null, or a JSON object/array"),
    ),
    "restore without a target": (["restore", "{t}"], ("'--version' / '--timestamp' / '--savepoint'",)),
    "restore with two targets": (["restore", "{t}", "--version", "1", "--savepoint", "sp"], ("exactly one",)),
    "restore to a negative version": (["restore", "{t}", "--version", "-1"], ("greater than or equal to 0",)),
    "vacuum negative retention": (
        ["vacuum", "{t}", "--retain-hours", "-1", "--execute"],
        ("--retain-hours", "greater than or equal to 0"),
    ),
    "cleanup-log retention not a number": (
        ["cleanup-log", "{t}", "--retain-hours", "soon"],
        ("--retain-hours", "valid number"),
    ),
    "health small-file size zero": (
        ["health", "{t}", "--small-file-bytes", "0"],
        ("--small-file-bytes", "greater than or equal to 1"),
    ),
    "savepoint version not a number": (
        ["savepoint", "create", "{t}", "sp", "--version", "v1"],
        ("--version", "valid integer"),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_option_is_a_usage_error_and_writes_nothing(table_path: Path, case: str) -> None:
    args, accepted = CASES[case]
    before = files(table_path)
    result = run(*(a.replace("{t}", str(table_path)) for a in args), env=WIDE)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, not an escaped exception
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    for fragment in accepted:
        assert fragment in result.stderr, (fragment, result.stderr)
    assert SECRET not in result.stderr  # a storage option value is never echoed
    assert files(table_path) == before
