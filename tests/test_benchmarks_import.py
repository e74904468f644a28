"""Every benchmark module imports: they run by hand (`python -m benchmarks.<name>`), not in CI, so a
refactor of what they import from the tests would otherwise break them unnoticed (it did once:
`benchmarks.s3_double_win` imported a helper the tests had renamed)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

MODULES = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("name", [m for m in MODULES if m != "__init__"])
def test_benchmark_module_imports(name: str) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    assert module.__doc__, f"benchmarks/{name}.py has no docstring saying what it measures and how to run it"
