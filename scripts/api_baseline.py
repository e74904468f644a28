"""The public API of `airflow_txnlog.engine` as a griffe tree, and its committed baseline api/engine.json.

tests/test_public_api.py compares the working tree with the baseline (griffe's `find_breaking_changes`)
and fails on a break. After an intended break (say so in the changelog / issue), regenerate it:

    .venv/bin/python scripts/api_baseline.py            # write api/engine.json, print what changed
    .venv/bin/python scripts/api_baseline.py --check    # write nothing; exit 1 if it is out of date

What the API is: every name in the door's `__all__`, resolved to its definition and dumped under the
public name (a class with its public methods and attributes, inherited ones included, and `__init__`,
which is also how dataclass fields are checked; a function with its signature; a module with its public
names; a constant with its value). The door's aliases are resolved HERE, while griffe still has the
package's modules collection: the dump holds no alias, so the decoded tree needs no collection. The
live side goes through the same dump and decode as the baseline, so both trees are built alike.

The dump is static (griffe reads the sources; nothing is imported), sorted, and carries no line
numbers, docstrings or absolute paths, so an unrelated edit does not change it. Annotations, defaults
and values are kept as source text. `airflow_txnlog.engine.spi` (helpers for the internal layers) is
not part of the API.

What griffe does not call a break (so neither does the test): a changed annotation or return type
(except one removed), a changed constant, a choice removed from a Literal alias such as WriteMode.
Such changes still show in this script's list of changes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "api" / "engine.json"
DOOR = "airflow_txnlog.engine"
HINT = (
    "if the break is intended, run `.venv/bin/python scripts/api_baseline.py` and say so in the "
    "changelog/issue"
)
# Special methods that are not called by users (everything else with a dunder name is: __init__,
# __enter__, __eq__, __iter__, ...).
_NOT_API_DUNDERS = frozenset({"__post_init__", "__init_subclass__", "__class_getitem__"})
_OBJECT_KINDS = frozenset({"module", "class", "function", "attribute", "type alias"})
_PARAMETER_KINDS = frozenset(kind.value for kind in griffe.ParameterKind)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Api:
    tree: dict[str, Any]  # the door as griffe's JSON (what api/engine.json holds)
    locations: dict[str, str]  # public path -> "file:line" of its definition (for messages only)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _relative(path: Path | list[Path] | None, root: Path) -> str | None:
    if isinstance(path, list):  # a namespace package
        path = path[0] if path else None
    if path is None:
        return None
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


class _Collector:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.locations: dict[str, str] = {}

    def entry(self, obj: griffe.Object | griffe.Alias, name: str, public_path: str) -> dict[str, Any]:
        try:
            target = obj.final_target if isinstance(obj, griffe.Alias) else obj
        except griffe.AliasResolutionError:  # a name from outside the package: keep what it points at
            assert isinstance(obj, griffe.Alias)
            return {"kind": "attribute", "name": name, "value": obj.target_path}
        if target.lineno is not None and not target.is_module:
            where = _relative(target.filepath, self.root)
            self.locations[public_path] = f"{where}:{target.lineno}"
        data: dict[str, Any] = {"kind": target.kind.value, "name": name}
        if target.labels:
            data["labels"] = sorted(target.labels)
        if isinstance(target, griffe.Function):
            data["parameters"] = [self.parameter(p) for p in target.parameters]
            if target.returns is not None:
                data["returns"] = _text(target.returns)
        elif isinstance(target, griffe.Class):
            if target.bases:
                data["bases"] = [_text(base) for base in target.bases]
            data["members"] = self.members(target, public_path, in_class=True)
        elif isinstance(target, griffe.Module):
            data["filepath"] = _relative(target.filepath, self.root)
            data["members"] = self.members(target, public_path, in_class=False)
        elif isinstance(target, griffe.Attribute | griffe.TypeAlias):
            if isinstance(target, griffe.Attribute) and target.annotation is not None:
                data["annotation"] = _text(target.annotation)
            # A module-level value is the API (a constant, a Literal alias); a class attribute's value
            # is an implementation detail (a dataclass field's default is checked through __init__).
            if target.value is not None and not (target.parent and target.parent.is_class):
                data["value"] = _text(target.value)
        return data

    @staticmethod
    def parameter(param: griffe.Parameter) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": _text(param.kind and param.kind.value), "name": param.name}
        if param.annotation is not None:
            data["annotation"] = _text(param.annotation)
        if param.default is not None:
            data["default"] = _text(param.default)
        return data

    def members(self, obj: griffe.Object, path: str, *, in_class: bool) -> dict[str, Any]:
        found = {}
        # A class's inherited members count (Table's maintenance methods come from a base class);
        # griffe resolves the bases now, so the dump needs no base classes to be found later.
        for name, member in sorted((obj.all_members if in_class else obj.members).items()):
            if in_class:
                dunder = name.startswith("__") and name.endswith("__")
                if member.is_alias and not member.inherited:
                    continue  # an import in a class body
                if dunder and (name in _NOT_API_DUNDERS or not _is_function(member)):
                    continue
                if name.startswith("_") and not dunder:
                    continue
            elif not member.is_public or name.startswith("_"):
                continue
            found[name] = self.entry(member, name, f"{path}.{name}")
        return found


def _is_function(member: griffe.Object | griffe.Alias) -> bool:
    try:
        return member.is_function
    except griffe.AliasResolutionError:
        return False


def _door_names(root: Path) -> list[str]:
    """The door's names as the package itself reads them at run time (engine._doors.listed: the
    imports under TYPE_CHECKING), from the sources under `root`, without importing the package."""
    path = root / "airflow_txnlog" / "engine" / "_doors.py"
    spec = importlib.util.spec_from_file_location("_api_doors", path)
    assert spec is not None and spec.loader is not None
    doors = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doors)
    source = (root / "airflow_txnlog" / "engine" / "__init__.py").read_text(encoding="utf-8")
    return sorted(doors.listed(source))


def collect(root: Path = ROOT) -> Api:
    """The door's public API as read from the sources under `root` (a checkout or a copy of one)."""
    collection = griffe.ModulesCollection()
    door = griffe.load(
        DOOR,
        search_paths=[root],
        modules_collection=collection,
        allow_inspection=False,  # read the sources only; never import the package
        store_source=False,
    )
    assert isinstance(door, griffe.Module)
    names = _door_names(root)
    if not names:
        raise ValueError(f"{DOOR} lists no names (its imports under TYPE_CHECKING)")
    missing = [name for name in names if name not in door.members]
    if missing:
        raise ValueError(f"{DOOR}.__all__ lists names it never imports (under TYPE_CHECKING): {missing}")
    collector = _Collector(root)
    members = {name: collector.entry(door.members[name], name, name) for name in names}
    tree = {
        "generated_by": "scripts/api_baseline.py (do not edit; tests/test_public_api.py checks it)",
        "kind": "module",
        "name": DOOR,
        "filepath": _relative(door.filepath, root),
        "exports": names,
        "members": members,
    }
    return Api(tree, collector.locations)


def dumps(tree: dict[str, Any]) -> str:
    """The dump as text: keys in a fixed order, names sorted; a small value (a parameter, an attribute,
    labels) on one line, so that a diff shows one line per parameter."""
    return _format(_ordered(tree), 0) + "\n"


_KEY_ORDER = ("generated_by", "name", "kind", "labels", "annotation", "default", "value", "filepath")


def _keys(value: dict[str, Any]) -> list[str]:
    order = {key: i for i, key in enumerate(_KEY_ORDER)}
    return sorted(value, key=lambda key: (order.get(key, len(order)), key))


def _ordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _ordered(value[key]) for key in _keys(value)}
    if isinstance(value, list):
        return [_ordered(item) for item in value]
    return value


def _format(value: Any, depth: int) -> str:
    flat = json.dumps(value)
    nested = isinstance(value, dict) and ("members" in value or "parameters" in value)
    if not isinstance(value, dict | list) or (not nested and len(flat) <= 120):
        return flat
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(value, list):
        items = [inner + _format(item, depth + 1) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    items = [f"{inner}{json.dumps(key)}: {_format(item, depth + 1)}" for key, item in value.items()]
    return "{\n" + ",\n".join(items) + "\n" + pad + "}"


def _decode(data: dict[str, Any]) -> Any:
    # The dump leaves out what griffe's decoder requires but the API check never reads.
    kind = data.get("kind")
    if kind in _OBJECT_KINDS:
        data.setdefault("lineno", None)
        if kind == "function":
            data.setdefault("returns", None)
        elif kind == "class":  # a base as a name expression (compared by its text, as griffe does)
            data["bases"] = [griffe.ExprName(base) for base in data.get("bases", [])]
        elif kind == "type alias":
            data.setdefault("value", None)
            data.setdefault("type_parameters", [])
    elif kind in _PARAMETER_KINDS and "name" in data:
        data.setdefault("annotation", None)
        data.setdefault("default", None)
    return griffe.json_decoder(data)


def load(text_or_tree: str | dict[str, Any]) -> griffe.Module:
    """A dumped API (the baseline's text, or a fresh `collect().tree`) as a griffe module."""
    text = text_or_tree if isinstance(text_or_tree, str) else dumps(text_or_tree)
    module = json.loads(text, object_hook=_decode)
    assert isinstance(module, griffe.Module)
    return module


def breaking_changes(old: str | dict[str, Any], new: str | dict[str, Any]) -> list[griffe.Breakage]:
    """griffe's breaking changes from the API `old` to the API `new` (a name gone from the door included)."""
    return list(griffe.find_breaking_changes(load(old), load(new)))


def explain(breakages: list[griffe.Breakage], locations: dict[str, str] | None = None) -> list[str]:
    """griffe's one-line explanation of each break (without colours, and without the line number the
    dump does not keep), and where the live object is defined when it still is."""
    lines = []
    for breakage in breakages:
        line = _ANSI.sub("", breakage.explain()).replace(":0: ", ": ", 1)
        public = breakage.obj.path.removeprefix(f"{DOOR}.")
        if locations and public in locations:
            line += f"  (defined at {locations[public]})"
        lines.append(line)
    return lines


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two dumps, per public name (added, removed, changed): breaking or not."""
    before, after = old.get("members", {}), new.get("members", {})
    out = [f"added to the door: {name}" for name in sorted(after.keys() - before.keys())]
    out += [f"removed from the door: {name}" for name in sorted(before.keys() - after.keys())]
    for name in sorted(before.keys() & after.keys()):
        if before[name] != after[name]:
            out.extend(_member_changes(name, before[name], after[name]))
    return out


def _member_changes(path: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    if old.get("members") is None or new.get("members") is None or old["kind"] != new["kind"]:
        return [f"changed: {path}"]
    out = []
    if {k: v for k, v in old.items() if k != "members"} != {k: v for k, v in new.items() if k != "members"}:
        out.append(f"changed: {path}")
    before, after = old["members"], new["members"]
    out += [f"added: {path}.{name}" for name in sorted(after.keys() - before.keys())]
    out += [f"removed: {path}.{name}" for name in sorted(before.keys() - after.keys())]
    for name in sorted(before.keys() & after.keys()):
        if before[name] != after[name]:
            out.extend(_member_changes(f"{path}.{name}", before[name], after[name]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if out of date")
    args = parser.parse_args(argv)

    api = collect()
    text = dumps(api.tree)
    old_text = BASELINE.read_text() if BASELINE.exists() else None
    shown = BASELINE.relative_to(ROOT)
    if old_text == text:
        print(f"{shown} is up to date ({len(api.tree['members'])} public names)")
        return 0
    if old_text is None:
        print(f"{shown} is new ({len(api.tree['members'])} public names)")
    else:
        breaks = explain(breaking_changes(old_text, text), api.locations)
        print(f"breaking changes ({len(breaks)}):" if breaks else "no breaking change")
        for line in breaks:
            print(f"  {line}")
        diff = changes(json.loads(old_text), api.tree)
        print(f"all changes ({len(diff)}):" if diff else "no change to the API (only to the dump's text)")
        for line in diff:
            print(f"  {line}")
    if args.check:
        print(f"{shown} is out of date: run .venv/bin/python scripts/api_baseline.py")
        return 1
    BASELINE.parent.mkdir(exist_ok=True)
    BASELINE.write_text(text)
    print(f"wrote {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
