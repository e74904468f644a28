"""Fixtures for the Spark golden-table compatibility suite (tests/compat/test_golden.py)."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

# The reference tables are carried in the repository (see golden/NOTICE.md); TXNLOG_GOLDEN_DIR overrides.
_DEFAULT_GOLDEN = Path(__file__).resolve().parent / "golden"
GOLDEN_ROOT = Path(os.environ.get("TXNLOG_GOLDEN_DIR", str(_DEFAULT_GOLDEN)))


def _make_writable(root: Path) -> None:
    """The reference tables are read-only: a copy must be writable to set mtimes / rewrite hints."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            p.chmod(p.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | (stat.S_IXUSR if p.is_dir() else 0))
    root.chmod(root.stat().st_mode | stat.S_IWUSR | stat.S_IXUSR)


@pytest.fixture
def golden_copy(tmp_path: Path) -> Callable[[str], Path]:
    """Copy a golden table (by its name relative to the golden root) into tmp_path; return the copy."""

    def _copy(name: str) -> Path:
        src = GOLDEN_ROOT / name
        dst = tmp_path / name.replace("/", "__")
        shutil.copytree(src, dst)
        _make_writable(dst)
        return dst

    return _copy
