"""airflow_txnlog.spark imports only the engine's two doors (the public names of `airflow_txnlog.engine`
and the layers' helpers of `airflow_txnlog.engine.spi`), pyspark, pyarrow and the stdlib (and
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
import airflow_txnlog.engine.spi

pytestmark = [pytest.mark.spark]

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_txnlog" / "spark"
ENGINE = "airflow_txnlog.engine"
SPI = "airflow_txnlog.engine.spi"


def _imports(path: Path) -> set[str]:
    """Modules imported by `path`; `from engine import X` counts as `engine.X` (X may be a module), and
    `from engine.spi import X` as `engine.spi.X`."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module in (ENGINE, SPI):
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_only_allowed_imports() -> None:
    public = {f"{ENGINE}.{name}" for name in airflow_txnlog.engine.__all__}
    public |= {f"{SPI}.{name}" for name in airflow_txnlog.engine.spi.__all__}
    for path in sorted(PACKAGE.rglob("*.py")):
        for module in _imports(path):
            top = module.split(".")[0]
            ok = (
                module in public
                or module.startswith("airflow_txnlog.spark")
                or module == "airflow_txnlog._shown"
                or top in ("pyspark", "pyarrow", "__future__")
                or top in sys.stdlib_module_names
            )
            assert ok, f"{path.relative_to(PACKAGE)} imports {module}"


def test_the_layers_helpers_come_from_the_spi_door() -> None:
    """A name of `engine.spi.__all__` is taken from that door, even while `airflow_txnlog.engine`
    still has it too (the helpers leave the users' door later)."""
    helpers = set(airflow_txnlog.engine.spi.__all__)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == ENGINE:
                wrong = sorted(a.name for a in node.names if a.name in helpers)
                assert not wrong, f"{path.relative_to(PACKAGE)} takes {wrong} from {ENGINE}, not {SPI}"


def test_importing_the_package_loads_neither_airflow_nor_deltalake() -> None:
    code = (
        "import sys, airflow_txnlog.spark; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('airflow', 'deltalake')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
