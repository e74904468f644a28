"""Plan files: where a planned-maintenance run keeps the paths its data rewrites name (a compaction's
bins, a cluster's or purge's files), so that XCom carries ids and counts only, whatever the table's
size (a million small files planned into bins would otherwise be a million paths in one XCom).

    <history table>/_plans/<dag id>/<run id>/<plan task id>/<n>.json   one per planned table with
        rewrites (ids quoted: two DAGs' runs, or two planned-maintenance groups of one DAG, never
        share a folder):
        {"table": uri, "paths": {action id: {"bins": [[path, ...], ...]} or {"files": [path, ...]}}}

Written by the plan task (a plain write: a retried plan task rewrites its own files), read by a
stage task when it runs a rewrite (once per task), deleted by the history task after it recorded
the run (the stage tasks are done by then: it runs last). `_plans/` starts with `_`, so a vacuum
of the history table (Delta's rule for hidden folders, which the engine and delta-rs follow)
never takes the files for orphans. A plan file that is gone when a stage task needs it (deleted by
hand, the run cleared and re-run half-way) fails that task's rewrites with a message saying to plan
again, never runs a rewrite without its paths.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from airflow_txnlog.engine import FilesMissingError, InvalidArgumentError
from airflow_txnlog.engine.spi import Storage

PLANS_DIR = "_plans"
PATH_KEYS = ("bins", "files")


def plan_storage(hook: Any, uri: str) -> Storage:
    """The storage of the history table at `uri`, with `hook`'s (a TxnLogHook's) options for it."""
    from airflow_txnlog.engine.spi import storage_for  # noqa: PLC0415 - pyarrow at run time

    return storage_for(uri, hook.storage_options_for(uri) or None)


RunKey = tuple[str, str, str]  # (DAG id, run id, plan task id)


def run_folder(run: RunKey) -> str:
    """The folder of one plan task's plan files in one run, under the history table."""
    return "/".join([PLANS_DIR, *(quote(part, safe="") for part in run)])


def write_plan_file(storage: Storage, run: RunKey, index: int, table: str, paths: Mapping[str, Any]) -> str:
    """Write one table's paths; the file's key (under the history table's root)."""
    key = f"{run_folder(run)}/{index}.json"
    storage.write(key, json.dumps({"table": table, "paths": dict(paths)}).encode())
    return key


def read_paths(storage: Storage, key: str, table: str) -> dict[str, Any]:
    """{action id: its paths} of one table's plan file (FilesMissingError when it is gone)."""
    try:
        data = json.loads(storage.read(key))
    except FileNotFoundError as exc:
        raise FilesMissingError(
            f"the plan file {storage.full_path(key)} of {table} is gone (deleted, or its run's history "
            "was already recorded): nothing was rewritten. Help: plan again (a new run)",
            missing=[key],
        ) from exc
    if not isinstance(data, dict) or data.get("table") != table or not isinstance(data.get("paths"), dict):
        raise InvalidArgumentError(f"{storage.full_path(key)} is not the plan file of {table}")
    return dict(data["paths"])


def delete_run(storage: Storage, run: RunKey) -> int:
    """Delete one run's plan files; how many there were."""
    folder = run_folder(run)
    try:
        names = [f.name for f in storage.list_dir(folder)]
    except FileNotFoundError:
        return 0
    storage.delete_many([f"{folder}/{n}" for n in names])
    parts = folder.split("/")
    for depth in range(len(parts), 0, -1):  # (local disk: no empty folder left, up to _plans)
        storage.remove_empty_dir("/".join(parts[:depth]))
    return len(names)
