"""Run one document's examples in order, as a reader would, in a fresh interpreter (tests/test_docs.py).

    python -m tests.doc_runner <plan.json> <result.json> <working folder>

The plan lists the examples of one document. The working folder is the test's temporary folder, the
only setup: it holds a link to the repository's `.venv` (the README's commands are written for the
repository root) and nothing else. Python examples run in one namespace, top to bottom, like cells
of a notebook, compiled under the name `<doc>:<line>` so that a traceback points at the document;
shell examples run with `bash -euo pipefail`; a `file` example is written where the document says
to save it. The result names the first example that failed, with its traceback or output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any


def _run(example: dict[str, Any], namespace: dict[str, Any]) -> str | None:
    """None when the example ran, else what went wrong."""
    where = f"{example['doc']}:{example['line']}"
    if example["kind"] == "file":
        target = Path(example["arg"])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(example["code"])
        return None
    if example["lang"] == "python":
        try:
            exec(compile(example["code"], where, "exec"), namespace)
        except BaseException:
            return traceback.format_exc()
        return None
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", example["code"]], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
    return None


def main(plan_file: str, result_file: str, work: str) -> None:
    plan = json.loads(Path(plan_file).read_text())
    os.chdir(work)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    ran = 0
    for example in plan:
        failure = _run(example, namespace)
        if failure is not None:
            where = f"{example['doc']}:{example['line']}"
            Path(result_file).write_text(json.dumps({"ran": ran, "failed": where, "why": failure}))
            return
        ran += 1
    Path(result_file).write_text(json.dumps({"ran": ran, "failed": None}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # the result is written; no interpreter teardown (a Spark gateway may linger)
