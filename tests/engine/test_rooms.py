"""The engine's house (docs/architecture.md): the public names of `airflow_txnlog.engine` are a fixed
set, whichever room their module lives in; every module of a room is named in that room's
import-linter contract (a module left out of it would be free to import its room-mates upward); each
room says what lives there and what it may import; no module of the package exceeds 500 lines
(but the few named in LONGER_MODULES, each with its reason).

The contracts themselves run in `lint-imports` (the test command); here one is shown to fail on an
upward import, so a contract that checks nothing cannot pass unnoticed.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import airflow_txnlog.engine as engine
from airflow_txnlog.engine import _doors, spi

REPO = Path(__file__).resolve().parents[2]
ENGINE = REPO / "airflow_txnlog" / "engine"
ROOMS = ("log", "sql", "features", "state", "write", "uniform", "maintenance")
MAX_LINES = 500
# Modules allowed past MAX_LINES, each with its own limit and the reason: cohesion comes first.
LONGER_MODULES = {
    "airflow_txnlog/engine/table.py": (
        680,
        "one concept, the entry point: `Table`'s methods check arguments and delegate to the rooms; "
        "split, it was a mixin that had to fake the rest of the class (NotImplementedError, cast)",
    ),
    "airflow_txnlog/engine/storage.py": (
        530,
        "one concept, the storage contract (put_if_absent, listing, batch deletes) and its backends "
        "(local disk, fsspec, S3, memory), which implement it side by side",
    ),
}


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _layer_names(contract: dict[str, object]) -> set[str]:
    layers = contract["layers"]
    assert isinstance(layers, list)
    return {name.strip() for layer in layers for name in str(layer).split("|")}


def test_the_users_door_lists_each_name_once_under_its_own_name() -> None:
    """`airflow_txnlog.engine` (users) names each object as it is defined (no alias), lists it once,
    and holds no helper of the other layers (those are `engine.spi`'s); its set is the API checked
    against api/engine.json (tests/test_public_api.py)."""
    listed = _doors.listed((REPO / "airflow_txnlog/engine/__init__.py").read_text())
    assert sorted(listed) == engine.__all__
    assert [n for n, (_, source_name) in listed.items() if n != source_name] == []  # no alias
    assert not set(engine.__all__) & set(spi.__all__)
    assert len(engine.__all__) <= 90
    for name in engine.__all__:
        assert getattr(engine, name) is not None, name


def test_the_layers_door_loads_every_name_it_lists() -> None:
    listed = _doors.listed((REPO / "airflow_txnlog/engine/spi.py").read_text())
    assert sorted(listed) == sorted(spi.__all__)
    for name in spi.__all__:
        assert getattr(spi, name) is not None, name


def test_room_contract_names_every_room_and_root_module() -> None:
    (rooms,) = [c for c in _contracts() if c.get("containers") == ["airflow_txnlog.engine"]]
    root_modules = {p.stem for p in ENGINE.glob("*.py")} - {"__init__"}
    assert _layer_names(rooms) == set(ROOMS) | root_modules


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_contract_names_every_module_of_the_room(room: str) -> None:
    (contract,) = [c for c in _contracts() if c.get("containers") == [f"airflow_txnlog.engine.{room}"]]
    modules = {p.stem for p in (ENGINE / room).glob("*.py")} - {"__init__"}
    assert _layer_names(contract) == modules, f"engine/{room}/ and its import-linter contract disagree"


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_says_what_lives_there_and_what_it_may_import(room: str) -> None:
    init = ENGINE / room / "__init__.py"
    tree = ast.parse(init.read_text())
    doc = ast.get_docstring(tree) or ""
    assert "What lives here" in doc and "May import" in doc, init
    assert len(tree.body) == 1, f"{init} holds code: a room's __init__ must stay a docstring (lazy imports)"


def test_no_module_of_the_package_exceeds_500_lines() -> None:
    """Except the named LONGER_MODULES, each under its own limit."""
    lengths = {
        str(p.relative_to(REPO)): len(p.read_text().splitlines())
        for p in (REPO / "airflow_txnlog").rglob("*.py")
    }
    too_long = {name: n for name, n in lengths.items() if n > LONGER_MODULES.get(name, (MAX_LINES, ""))[0]}
    assert too_long == {}
    assert all(lengths.get(name, 0) > MAX_LINES for name in LONGER_MODULES), "an exception no longer needed"


@pytest.mark.parametrize(
    ("module", "upward", "contract"),
    [
        ("log/actions.py", "airflow_txnlog.engine.state.snapshot", "engine rooms"),  # between rooms
        ("log/actions.py", "airflow_txnlog.engine.log.log_reader", "engine.log"),  # inside a room
    ],
)
def test_an_upward_import_breaks_the_contracts(
    tmp_path: Path, module: str, upward: str, contract: str
) -> None:
    """A copy of the package with one upward import added: lint-imports must refuse it."""
    shutil.copytree(REPO / "airflow_txnlog", tmp_path / "airflow_txnlog")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "airflow_txnlog" / "engine" / module
    package, _, name = upward.rpartition(".")
    path.write_text(path.read_text() + f"\nfrom {package} import {name}  # noqa\n")
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(lint), "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode != 0, out.stdout
    (name,) = [str(c["name"]) for c in _contracts() if str(c["name"]).startswith(contract)]
    assert f"{name} BROKEN" in " ".join(out.stdout.split()), out.stdout  # (long names wrap)
    importer = "airflow_txnlog.engine." + module.removesuffix(".py").replace("/", ".")
    assert f"{importer} -> {upward}" in out.stdout
