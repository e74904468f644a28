"""The public API of `airflow_txnlog.engine` (the door's `__all__`) never breaks by accident.

api/engine.json is the committed baseline (scripts/api_baseline.py makes it, and says how); griffe's
`find_breaking_changes` compares it with the working tree, read statically. A break fails the test
with griffe's explanation of each one. The tests after the first show that the check catches a
removed parameter, a keyword-only parameter made required and a name dropped from the door, and lets
a compatible change through: each edits a copy of the engine's sources in a temporary folder.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("api_baseline", ROOT / "scripts" / "api_baseline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


api_baseline = _load_script()


def check(baseline: str | dict[str, Any], api: Any) -> None:
    """Fail, listing each break, when `api` (a fresh `collect()`) breaks the API `baseline` (a dump)."""
    breaks = api_baseline.breaking_changes(baseline, api.tree)
    if breaks:
        lines = "\n".join(f"  - {line}" for line in api_baseline.explain(breaks, api.locations))
        raise AssertionError(
            f"{len(breaks)} breaking change(s) to the public API of airflow_txnlog.engine "
            f"(baseline: api/engine.json):\n{lines}\n{api_baseline.HINT}"
        )


@pytest.fixture(scope="module")
def live() -> Any:
    return api_baseline.collect(ROOT)


def test_the_public_api_keeps_the_baseline(live: Any) -> None:
    check(api_baseline.BASELINE.read_text(), live)


def test_the_dump_is_deterministic_and_free_of_churn(live: Any) -> None:
    text = api_baseline.dumps(live.tree)
    # The text depends on no order of griffe's: members and keys come out sorted whatever their order.
    shuffled = json.loads(text, object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    assert list(shuffled["members"]) != list(live.tree["members"])
    assert api_baseline.dumps(shuffled) == text
    assert '"lineno"' not in text and '"docstring"' not in text
    assert str(ROOT) not in text
    assert list(live.tree["members"]) == sorted(live.tree["members"]) == live.tree["exports"]
    # The dump holds resolved objects only: decoded, it needs no modules collection.
    tree = api_baseline.load(text)
    assert not any(member.is_alias for member in _walk(tree))
    assert api_baseline.breaking_changes(text, text) == []


def _walk(obj: griffe.Object) -> Iterator[griffe.Object | griffe.Alias]:
    for member in obj.members.values():
        yield member
        if not member.is_alias:
            yield from _walk(member)  # type: ignore[arg-type]


# -- the check catches breaks: edits to a copy of the sources --------------------------------------


def _copy_sources(dest: Path) -> Path:
    """airflow_txnlog/__init__.py and airflow_txnlog/engine/: all that griffe reads for the door."""
    package = dest / "airflow_txnlog"
    package.mkdir(parents=True)
    shutil.copy2(ROOT / "airflow_txnlog" / "__init__.py", package / "__init__.py")
    shutil.copytree(
        ROOT / "airflow_txnlog" / "engine",
        package / "engine",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return dest


def _functions(tree: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for name, member in sorted(tree.get("members", {}).items()):
        path = f"{prefix}{name}"
        if member["kind"] == "function" and not name.startswith("__"):
            yield path, member
        yield from _functions(member, f"{path}.")


def _first(live: Any, fits: Callable[[dict[str, Any]], str | None]) -> tuple[str, str]:
    """The first public function (Table's methods first) with a parameter that `fits`: (path, name)."""
    found = []
    for path, function in _functions(live.tree):
        param = fits(function)
        if param is not None and path in live.locations:
            found.append((not path.startswith("Table."), path, param))
    assert found, "no public function to edit"
    _, path, param = min(found)
    return path, param


def _removable(function: dict[str, Any]) -> str | None:
    """Its last positional parameter (not self/cls), when no *args/**kwargs would swallow it."""
    params = function["parameters"]
    if any(p["kind"].startswith("variadic") for p in params):
        return None
    positional = [p for p in params if p["kind"] == "positional or keyword"]
    positional = [p for p in positional if p["name"] not in {"self", "cls"}]
    return positional[-1]["name"] if positional else None


def _optional_keyword(function: dict[str, Any]) -> str | None:
    params = [p for p in function["parameters"] if p["kind"] == "keyword-only" and "default" in p]
    return params[0]["name"] if params else None


class _Source:
    """A source file edited in place by text, at the positions ast gives (so nothing else moves)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = path.read_bytes()  # ast's columns count UTF-8 bytes
        self.tree = ast.parse(self.data)
        self._lines = [0, *(i + 1 for i, byte in enumerate(self.data) if byte == ord("\n"))]

    def start(self, node: ast.expr | ast.arg | ast.alias) -> int:
        return self._lines[node.lineno - 1] + node.col_offset

    def end(self, node: ast.expr | ast.arg | ast.alias) -> int:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return self._lines[node.end_lineno - 1] + node.end_col_offset

    def line_start(self, node: ast.stmt, *, after: bool = False) -> int:
        """Where `node`'s first line starts (`after`: where the line after its last one starts)."""
        line = (node.end_lineno or node.lineno) if after else node.lineno - 1
        return self._lines[line] if line < len(self._lines) else len(self.data)

    def cut(self, start: int, end: int, insert: bytes = b"") -> None:
        self.data = self.data[:start] + insert + self.data[end:]
        self.path.write_bytes(self.data)

    def cut_item(self, start: int, end: int) -> None:
        """Cut an item of a list (a parameter, an element) with the comma that separates it."""
        after = re.compile(rb"\s*,\s*").match(self.data, end)
        before = re.search(rb",\s*$", self.data[:start])
        if after:
            end = after.end()
        elif before:
            start = before.start()
        self.cut(start, end)

    def function(self, location: str, name: str) -> ast.arguments:
        line = int(location.rsplit(":", 1)[1])
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name != name:
                continue
            if line in {node.lineno, *(decorator.lineno for decorator in node.decorator_list)}:
                return node.args  # griffe's line of a decorated def is its first decorator's
        raise AssertionError(f"no def {name} at {location}")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A copy of the sources and its API: the tests below edit copies of it and compare with it (not
    with the working tree, which someone may be editing while they run)."""
    root = _copy_sources(tmp_path_factory.mktemp("snapshot"))
    return root, api_baseline.collect(root)


def _copy(snapshot: tuple[Path, Any], dest: Path) -> Any:
    shutil.copytree(snapshot[0], dest, dirs_exist_ok=True)
    return snapshot[1]


def _edited(live: Any, dest: Path, path: str) -> tuple[_Source, ast.arguments]:
    """The file and the arguments of the public function `path` in the copy `dest`."""
    location = live.locations[path]
    source = _Source(dest / location.rsplit(":", 1)[0])
    return source, source.function(location, path.rsplit(".", 1)[-1])


@pytest.fixture(scope="module")
def targets(snapshot: tuple[Path, Any]) -> dict[str, Any]:
    """What the tests below break: found in the API, so that they follow the door as it changes."""
    live = snapshot[1]
    return {
        "remove": _first(live, _removable),  # (public path of a function, parameter)
        "require": _first(live, _optional_keyword),
        "drop": "Table" if "Table" in live.tree["members"] else live.tree["exports"][0],
    }


def _kinds(breaks: list[griffe.Breakage]) -> list[tuple[str, str]]:
    return [(b.obj.path.removeprefix("airflow_txnlog.engine."), b.kind.value) for b in breaks]


def _fails(baseline: dict[str, Any], api: Any) -> str:
    with pytest.raises(AssertionError) as failure:
        check(baseline, api)
    message = str(failure.value)
    assert api_baseline.HINT in message and "scripts/api_baseline.py" in message
    return message


def test_a_removed_parameter_is_caught(snapshot: Any, targets: Any, tmp_path: Path) -> None:
    path, param = targets["remove"]
    live = _copy(snapshot, tmp_path)
    source, args = _edited(live, tmp_path, path)
    index = [a.arg for a in args.args].index(param)
    defaults = dict(zip(args.args[len(args.args) - len(args.defaults) :], args.defaults, strict=True))
    arg = args.args[index]
    source.cut_item(source.start(arg), source.end(defaults.get(arg, arg)))

    api = api_baseline.collect(tmp_path)
    breaks = api_baseline.breaking_changes(live.tree, api.tree)
    assert _kinds(breaks) == [(path, "Parameter was removed")]
    assert breaks[0].old_value.name == param
    message = _fails(live.tree, api)
    assert f"{path.split('.')[-1]}({param}): Parameter was removed" in message


def test_a_keyword_only_parameter_made_required_is_caught(
    snapshot: Any, targets: Any, tmp_path: Path
) -> None:
    path, param = targets["require"]
    live = _copy(snapshot, tmp_path)
    source, args = _edited(live, tmp_path, path)
    index = [a.arg for a in args.kwonlyargs].index(param)
    default = args.kw_defaults[index]
    assert default is not None
    source.cut(source.end(args.kwonlyargs[index]), source.end(default))  # " = <default>"

    api = api_baseline.collect(tmp_path)
    breaks = api_baseline.breaking_changes(live.tree, api.tree)
    assert _kinds(breaks) == [(path, "Parameter is now required")]
    assert breaks[0].old_value.name == param
    assert f"({param}): Parameter is now required" in _fails(live.tree, api)


def test_a_name_dropped_from_the_door_is_caught(snapshot: Any, targets: Any, tmp_path: Path) -> None:
    name = targets["drop"]
    live = _copy(snapshot, tmp_path)
    door = _Source(tmp_path / "airflow_txnlog" / "engine" / "__init__.py")
    # The door's one listing is its imports under TYPE_CHECKING: drop the name's `X as X` there.
    ((statement, listed),) = [
        (node, alias)
        for node in ast.walk(door.tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if (alias.asname or alias.name) == name
    ]
    if len(statement.names) == 1:  # (its own statement: the whole line goes)
        door.cut(door.line_start(statement), door.line_start(statement, after=True))
    else:
        door.cut_item(door.start(listed), door.end(listed))

    api = api_baseline.collect(tmp_path)
    assert name not in api.tree["members"]
    breaks = api_baseline.breaking_changes(live.tree, api.tree)
    assert _kinds(breaks) == [(name, "Public object was removed")]
    assert f"{name}: Public object was removed" in _fails(live.tree, api)


def test_a_compatible_change_passes(snapshot: Any, targets: Any, tmp_path: Path) -> None:
    """A new optional keyword-only parameter breaks nothing (the baseline's diff still shows it)."""
    path, _ = targets["require"]
    live = _copy(snapshot, tmp_path)
    source, args = _edited(live, tmp_path, path)
    last = args.kw_defaults[-1] or args.kwonlyargs[-1]
    source.cut(source.end(last), source.end(last), b", added_later: bool = False")

    api = api_baseline.collect(tmp_path)
    check(api_baseline.dumps(live.tree), api)
    assert api_baseline.changes(live.tree, api.tree) == [f"changed: {path}"]
