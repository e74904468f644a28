"""Every Python and shell example in README.md and docs/*.md runs as written (issue 30).

Each document is one test: its examples run in order in a fresh interpreter whose working folder is
a temporary folder (tests/doc_runner.py says exactly what it holds). A comment on the line before an
example's fence can say how it is taken instead:

    <!-- doctest: file <path> -->          save the block at <path> (a DAG file the next command runs)
    <!-- doctest: covered-by <test id> -->  a named test runs it already (the test must exist)
    <!-- doctest: skip <reason> -->         not run; the reason is required and says why
    <!-- doctest: spark -->                 needs Spark: the document's test is marked spark and slow

Nothing else is hidden: an example needs what the document showed before it, as a reader would.
The counts of examples run, saved, covered and skipped are printed with the reliability figures.
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIGURES_KEY
from tests.processes import ROOT, run_python

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(python|bash)\n(.*?)^```$", re.S | re.M)
MARKER = re.compile(r"^<!-- doctest: (file|covered-by|skip|spark)\b ?(.*?) ?-->$")


@dataclass(frozen=True)
class Example:
    doc: str
    line: int
    lang: str
    code: str
    kind: str  # "run", "file", "covered-by", "skip", "spark" (run, under Spark)
    arg: str


def examples(doc: Path) -> list[Example]:
    text = doc.read_text()
    found = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = [ln for ln in text[: m.start()].splitlines() if ln.strip()][-1:]
        marker = MARKER.match(before[0].strip()) if before else None
        kind, arg = (marker.group(1), marker.group(2)) if marker else ("run", "")
        found.append(Example(doc.name, line, m.group(1), m.group(2), kind, arg))
    return found


def _params() -> list[Any]:
    out = []
    for doc in DOCS:
        found = examples(doc)
        if not found:
            continue
        spark = any(e.kind == "spark" for e in found)
        marks = [pytest.mark.spark, pytest.mark.slow] if spark else []
        out.append(pytest.param(doc, marks=marks, id=doc.name))
    return out


def _test_exists(node_id: str) -> bool:
    path, _, name = node_id.partition("::")
    file = ROOT / path
    if not file.is_file() or not name:
        return False
    tree = ast.parse(file.read_text())
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


@pytest.mark.parametrize("doc", _params())
def test_the_examples_run_as_written(doc: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    found = examples(doc)
    for e in found:
        if e.kind == "skip":
            assert e.arg, f"{e.doc}:{e.line}: a skipped example must say why"
        if e.kind == "covered-by":
            assert _test_exists(e.arg), f"{e.doc}:{e.line}: no test {e.arg}"
    plan = [asdict(e) for e in found if e.kind in ("run", "spark", "file")]
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(ROOT / ".venv")
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    result = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYSPARK_", "OPENLINEAGE"))}
    env["PYTHONPATH"] = str(ROOT)  # for tests.doc_runner itself; the examples import the installed package
    args = ["-m", "tests.doc_runner", str(tmp_path / "plan.json"), str(result), str(work)]
    proc = run_python(args, env, 1200)  # it reports through the result file
    assert result.exists(), f"the runner wrote no result:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    outcome = json.loads(result.read_text())
    assert outcome["failed"] is None, f"{outcome['failed']} failed:\n{outcome['why']}"
    assert outcome["ran"] == len(plan)  # the runner went through every example it was given
    counts = {k: sum(e.kind == k for e in found) for k in ("file", "covered-by", "skip")}
    ran = outcome["ran"] - counts["file"]
    figures = {"title": f"docs examples {doc.name}", "ran": ran, **counts}
    request.node.user_properties.append((FIGURES_KEY, figures))
