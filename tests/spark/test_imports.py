"""airflow_txnlog.spark imports only the engine's public names, pyspark, pyarrow and the stdlib (and
`airflow_txnlog._shown`, the import-free rule every layer's argument checks show values by).

(The import-linter contract "spark uses only the engine's public names" says the same for the
whole import graph; this test also names the offending file and symbol.)
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import airflow_txnlog.engine

pytestmark = [pytest.mark.spark]

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_txnlog" / "spark"
ENGINE = "airflow_txnlog.engine"


def _imports(path: Path) -> set[str]:
    """Modules imported by `path`; `from engine import X` counts as `engine.X` (X may be a module)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == ENGINE:
            out.update(f"{ENGINE}.{a.name}" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_only_allowed_imports() -> None:
    public = {f"{ENGINE}.{name}" for name in airflow_txnlog.engine.__all__}
    for path in sorted(PACKAGE.glob("*.py")):
        for module in _imports(path):
            top = module.split(".")[0]
            ok = (
                module in public
                or module.startswith("airflow_txnlog.spark")
                or module == "airflow_txnlog._shown"
                or top in ("pyspark", "pyarrow", "__future__")
                or top in sys.stdlib_module_names
            )
            assert ok, f"{path.name} imports {module}"


def test_importing_the_package_loads_neither_airflow_nor_deltalake() -> None:
    code = (
        "import sys, airflow_txnlog.spark; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('airflow', 'deltalake')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
