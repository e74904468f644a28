"""How the engine's two doors load their names: listed once, loaded on first use.

A door (`airflow_txnlog.engine` for users, `airflow_txnlog.engine.spi` for the package's other
layers) lists its names once, as `from airflow_txnlog.engine.<module> import <name>` statements under
`if TYPE_CHECKING:`, which type checkers and IDEs read. At run time `door(module)` reads the same
statements from the door's source with `ast` and returns what PEP 562 needs: `__all__`, a
`__getattr__` that imports a name's module on its first use (and keeps the name, so it runs once), and
`__dir__`. So `import airflow_txnlog.engine` costs nothing, and a process that uses only light names
(the triggers poll the log with `log_reader` and `storage_for`: pure Python + fsspec) never loads
pyarrow, numpy or sqlglot, whose import would hold the triggerer's event loop.

A name may be a module (`from airflow_txnlog.engine.log import log_reader`): loaded as one.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENGINE = "airflow_txnlog.engine"


def listed(source: str) -> dict[str, tuple[str, str]]:
    """Public name -> (engine module, its name there) of the imports under `if TYPE_CHECKING:`."""
    out: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.If) or ast.unparse(node.test) != "TYPE_CHECKING":
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module:
                for alias in statement.names:
                    out[alias.asname or alias.name] = (statement.module, alias.name)
    return out


def door(module: str) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """(`__all__`, `__getattr__`, `__dir__`) of the door `module` (see the module docstring)."""
    names = listed(Path(sys.modules[module].__file__ or "").read_text(encoding="utf-8"))

    def getattr_(name: str) -> Any:
        try:
            source, attr = names[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        loaded = importlib.import_module(source)
        try:
            value = getattr(loaded, attr)
        except AttributeError:  # (a submodule not imported yet)
            value = importlib.import_module(f"{source}.{attr}")
        setattr(sys.modules[module], name, value)
        return value

    return sorted(names), getattr_, lambda: sorted(names)
