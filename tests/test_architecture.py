"""The package's shape, as docs/architecture.md describes it: no import circle anywhere, and the page
names every sub-package and module that exists (and none that does not), so it cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_circle() -> None:
    """Every import counts, those inside functions too (grimp reads them all)."""
    assert _circles(grimp.build_graph("airflow_txnlog", cache_dir=None)) == []


def _modules() -> set[str]:
    """Every sub-package (`engine/log/`) and module (`engine/log/replay.py`) of the package, as paths
    relative to airflow_txnlog/ (no __init__.py, no __pycache__)."""
    base = ROOT / "airflow_txnlog"
    out = set()
    for path in base.rglob("*.py"):
        if "__pycache__" in path.parts or path.name == "__init__.py":
            continue
        out.add(path.relative_to(base).as_posix())
    for path in base.rglob("__init__.py"):
        if path.parent != base:
            out.add(path.parent.relative_to(base).as_posix() + "/")
    return out


def test_the_architecture_page_names_every_module_and_only_those() -> None:
    """Each module appears on the page by its path under airflow_txnlog/ (`engine/log/replay.py`) or,
    inside a room's line, by its name after the room (`log/ ... replay.py`): the page lists them in a
    table, one row per room, so the check reads `room/` rows."""
    text = PAGE.read_text(encoding="utf-8")
    listed = _listed(text)
    modules = _modules()
    assert sorted(modules - listed) == [], "modules the page does not name"
    assert sorted(listed - modules) == [], "names on the page that are not modules"


def _listed(text: str) -> set[str]:
    """The module paths the page's tree names: lines `` `path/` `` open a package; the names after it
    on the same line (`a.py`, `b/`) are its members."""
    out = set()
    for line in text.splitlines():
        found = re.match(r"\|\s*`([\w./]+/)`\s*\|(.*)\|\s*$", line)
        if found is None:
            continue
        package, members = found.group(1), found.group(2)
        if package != "./":
            out.add(package)
        prefix = "" if package == "./" else package
        out.update(prefix + m for m in re.findall(r"`([\w/]+(?:\.py|/))`", members))
    return out
