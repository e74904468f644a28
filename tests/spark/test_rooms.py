"""The Spark layer's house (airflow_txnlog/spark/__init__.py): its public names are a fixed set,
whichever room their module lives in; every module of a room is named in that room's import-linter
contract, and every room and root module in the "spark rooms" contract; each room says what lives
there and what it may import; no two Spark modules import each other, even inside a function.

The contracts run in `lint-imports`; here one is shown to fail on an upward import, so a contract that
checks nothing cannot pass unnoticed. No Spark session is started.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

import airflow_txnlog.spark as spark

REPO = Path(__file__).resolve().parents[2]
SPARK = REPO / "airflow_txnlog" / "spark"
ROOMS = ("source", "read", "features", "write", "dml", "maintenance")

# The public API, as it was before the Spark layer moved into rooms: moving modules must not add, drop
# or rename one. Change this list only with the API itself (and docs/spark.md).
PUBLIC_NAMES = {
    *("DEFAULT_SCHEME_MAP", "ConstraintViolationError", "DmlResult", "Expectation", "MergeBuilder"),
    *("MultipleSourceRowsMatchedError", "SparkJobError", "SparkTable", "SparkWorkersError"),
    *("WorkersCannotImportWarning", "WriteMode", "WriteResult", "check_expectations", "register"),
    *("to_hadoop_uri", "txnlog_errors"),
}


def _contract(container: str) -> dict[str, object]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c.get("containers") == [container]]
    return contract


def _layer_names(contract: dict[str, object]) -> set[str]:
    layers = contract["layers"]
    assert isinstance(layers, list)
    return {name.strip() for layer in layers for name in str(layer).split("|")}


def test_public_names_are_the_same_set() -> None:
    assert set(spark.__all__) == PUBLIC_NAMES
    assert len(spark.__all__) == len(PUBLIC_NAMES)
    for name in PUBLIC_NAMES:
        assert getattr(spark, name) is not None, name


def test_room_contract_names_every_room_and_root_module() -> None:
    root_modules = {p.stem for p in SPARK.glob("*.py")} - {"__init__"}
    rooms = {p.parent.name for p in SPARK.glob("*/__init__.py")}
    assert rooms == set(ROOMS)
    assert _layer_names(_contract("airflow_txnlog.spark")) == rooms | root_modules


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_contract_names_every_module_of_the_room(room: str) -> None:
    modules = {p.stem for p in (SPARK / room).glob("*.py")} - {"__init__"}
    contract = _contract(f"airflow_txnlog.spark.{room}")
    assert _layer_names(contract) == modules, f"spark/{room}/ and its import-linter contract disagree"


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_says_what_lives_there_and_what_it_may_import(room: str) -> None:
    init = SPARK / room / "__init__.py"
    tree = ast.parse(init.read_text())
    doc = ast.get_docstring(tree) or ""
    assert "What lives here" in doc and "May import" in doc, init
    assert len(tree.body) == 1, f"{init} holds code: a room's __init__ stays a docstring"


def test_no_import_circle_among_spark_modules() -> None:
    """grimp's graph holds every import, those inside functions and under TYPE_CHECKING too."""
    graph = grimp.build_graph("airflow_txnlog")
    modules = {m for m in graph.modules if m.startswith("airflow_txnlog.spark")}
    circles = sorted(
        (importer, imported)
        for importer in modules
        for imported in graph.find_modules_directly_imported_by(importer) & modules
        if graph.chain_exists(importer=imported, imported=importer)
    )
    assert circles == []


@pytest.mark.parametrize(
    ("module", "upward", "contract"),
    [
        ("read/scan.py", "airflow_txnlog.spark.write.stage", "spark rooms"),  # between rooms
        ("source/reader.py", "airflow_txnlog.spark.source.data_source", "spark.source"),  # inside a room
    ],
)
def test_an_upward_import_breaks_the_contracts(
    tmp_path: Path, module: str, upward: str, contract: str
) -> None:
    """A copy of the package with one upward import added: lint-imports must refuse it."""
    shutil.copytree(REPO / "airflow_txnlog", tmp_path / "airflow_txnlog")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "airflow_txnlog" / "spark" / module
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
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    names = [str(c["name"]) for c in config["tool"]["importlinter"]["contracts"]]
    (name,) = [n for n in names if n.startswith(contract + ":")]
    assert f"{name} BROKEN" in " ".join(out.stdout.split()), out.stdout  # (long names wrap)
    importer = "airflow_txnlog.spark." + module.removesuffix(".py").replace("/", ".")
    assert f"{importer} -> {upward}" in out.stdout
