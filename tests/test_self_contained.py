"""The repository stands alone: no tracked file may point at material beside the repository.

A fresh clone has nothing next to it, so a path like ``../<sibling>/...`` in a test, script, benchmark,
doc or config would work only in the developers' own layout (it once made 245 tests fail on a clone).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Built from pieces so this file does not match itself.
_SIBLING = "sha" + "red"
# A relative path to the sibling folder, or a Path(...).parents[N] / "<sibling>" join.
_PATTERN = re.compile(r"\.\./" + _SIBLING + r"\b" + r"|parents\[\d+\]\s*/\s*[\"']" + _SIBLING + r"[\"']")
_TEXT_SUFFIXES = {".py", ".md", ".sh", ".toml", ".cfg", ".ini", ".txt", ".yaml", ".yml", ".json", ""}


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode()
    files = [ROOT / name for name in out.split("\0") if name]
    # The golden tables' JSON logs are data, not references; everything else is checked.
    return [
        f
        for f in files
        if f.suffix in _TEXT_SUFFIXES and "tests/compat/golden/" not in f.as_posix() and f.is_file()
    ]


def offending_lines(paths: list[Path], root: Path = ROOT) -> list[str]:
    hits = []
    for path in paths:
        for no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if _PATTERN.search(line):
                hits.append(f"{path.relative_to(root)}:{no}: {line.strip()}")
    return hits


def test_no_tracked_file_refers_to_material_beside_the_repository() -> None:
    files = _tracked_text_files()
    assert len(files) > 50, "git ls-files found too few files: is this a git checkout?"
    assert offending_lines(files) == []


def test_the_check_catches_a_sibling_reference(tmp_path: Path) -> None:
    bad = tmp_path / "conftest.py"
    bad.write_text(
        f'GOLDEN = "../{_SIBLING}/golden"\n'
        f'ROOT = Path(__file__).parents[3] / "{_SIBLING}" / "golden"\n'
        "fine = 'shared_state'\n"
    )
    assert [hit.split(":")[1] for hit in offending_lines([bad], root=tmp_path)] == ["1", "2"]


def test_golden_tables_are_carried_in_the_repository() -> None:
    golden = ROOT / "tests" / "compat" / "golden"
    assert (golden / "NOTICE.md").is_file()
    tables = [p for p in golden.iterdir() if (p / "_delta_log").is_dir()]
    assert len(tables) >= 90
