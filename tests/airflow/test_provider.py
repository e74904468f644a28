"""Provider registration, example DAG parsing, the hook, and the restore-on-failure callback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from airflow_txnlog.callbacks import restore_on_failure
from airflow_txnlog.engine import Table
from airflow_txnlog.get_provider_info import get_provider_info
from airflow_txnlog.hooks.txnlog import TxnLogHook
from tests.conftest import SCHEMA, rows

pytestmark = pytest.mark.airflow
ROOT = Path(__file__).resolve().parents[2]


def _airflow_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow_home"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags_examples"),
    }


def _airflow_schema(name: str) -> dict[str, Any]:
    import airflow  # noqa: PLC0415

    return json.loads((Path(airflow.__file__).parent / name).read_text())  # type: ignore[no-any-return]


def _txnlog_connection_type() -> dict[str, Any]:
    (entry,) = [
        c for c in get_provider_info()["connection-types"] if c["connection-type"] == TxnLogHook.conn_type
    ]
    return entry  # type: ignore[no-any-return]


def test_provider_info_is_valid_against_airflows_schema() -> None:
    jsonschema.validate(get_provider_info(), _airflow_schema("provider_info.schema.json"))
    conn = _txnlog_connection_type()
    assert conn["hook-class-name"] == "airflow_txnlog.hooks.txnlog.TxnLogHook"
    assert conn["hook-name"] == TxnLogHook.hook_name
    assert set(conn["conn-fields"]) == {"endpoint_url", "single_writer"}
    for field in conn["conn-fields"].values():
        assert field["label"]
        jsonschema.Draft7Validator.check_schema(field["schema"])  # the UI renders each field from it


def test_connection_form_is_declared_once_in_provider_info() -> None:
    """Airflow >= 3.2 reads the form from provider info; hook methods for it are deprecated."""
    assert "get_ui_field_behaviour" not in TxnLogHook.__dict__
    assert "get_connection_form_widgets" not in TxnLogHook.__dict__
    behaviour = _txnlog_connection_type()["ui-field-behaviour"]
    schema = _airflow_schema("customized_form_field_behaviours.schema.json")
    # What ProvidersManager does with it: kebab-case keys to the hook-method form, then this schema.
    converted = {
        "hidden_fields": behaviour["hidden-fields"],
        "relabeling": behaviour["relabeling"],
        "placeholders": behaviour["placeholders"],
    }
    jsonschema.validate(converted, schema)
    # The provider-info form returned by a hook method (what TxnLogHook did) is refused by that schema.
    with pytest.raises(jsonschema.ValidationError, match="'hidden_fields' is a required property"):
        jsonschema.validate(behaviour, schema)


def test_airflow_loads_the_connection_form(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from airflow.providers_manager import ProvidersManager  # noqa: PLC0415

    manager = ProvidersManager()
    assert manager.field_behaviours["txnlog"] == {
        "hidden_fields": ["schema", "port"],
        "relabeling": {
            "host": "Base location (optional)",
            "login": "Access key id",
            "password": "Secret key",
        },
        "placeholders": _txnlog_connection_type()["ui-field-behaviour"]["placeholders"],
    }
    widgets = {k: w.field_name for k, w in manager.connection_form_widgets.items() if "__txnlog__" in k}
    assert widgets == {
        "extra__txnlog__endpoint_url": "endpoint_url",
        "extra__txnlog__single_writer": "single_writer",
    }
    # The UI stores each field under its field name in the extra: the names the hook reads.
    extra = {"endpoint_url": "http://127.0.0.1:9", "single_writer": True}
    monkeypatch.setenv(
        "AIRFLOW_CONN_FORM", json.dumps({"conn_type": "txnlog", "host": str(tmp_path), "extra": extra})
    )
    hook = TxnLogHook(txnlog_conn_id="form")
    assert (hook.storage_options, hook.single_writer) == ({"endpoint_url": "http://127.0.0.1:9"}, True)


def test_airflow_lists_the_provider(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "airflow", "providers", "list", "--output", "json"],
        capture_output=True,
        text=True,
        env=_airflow_env(tmp_path),
        check=True,
        timeout=300,
    )
    packages = {p["package_name"] for p in json.loads(out.stdout[out.stdout.index("[") :])}
    assert "airflow-txnlog" in packages


def test_example_dags_parse_without_pyspark_or_pyarrow(tmp_path: Path) -> None:
    code = (
        "import sys, json\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        f"bag = DagBag(dag_folder={str(ROOT / 'dags_examples')!r})\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'pyarrow', 'pandas'})\n"
        "errors = {k: str(v) for k, v in bag.import_errors.items()}\n"
        "print(json.dumps({'dags': sorted(bag.dags), 'errors': errors, 'heavy': heavy}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_airflow_env(tmp_path),
        check=True,
        timeout=300,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["errors"] == {}
    assert result["dags"] == [
        "txnlog_downstream",
        "txnlog_guarded_merge",
        "txnlog_ingest",
        "txnlog_maintenance",
        "txnlog_maintenance_fixed",
        "txnlog_release",
    ]
    assert "pyspark" not in result["heavy"]


def test_hook_turns_a_connection_into_storage_options(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    conn = {
        "conn_type": "txnlog",
        "host": str(tmp_path),
        "login": "AKIA123",
        "password": "s3cr3t",
        "extra": {"endpoint_url": "http://127.0.0.1:9", "single_writer": True},
    }
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps(conn))
    hook = TxnLogHook(txnlog_conn_id="lake")
    assert hook.storage_options == {
        "key": "AKIA123",
        "secret": "s3cr3t",
        "endpoint_url": "http://127.0.0.1:9",
    }
    assert hook.single_writer is True
    assert hook.resolve_uri("sales") == f"{tmp_path}/sales" and hook.resolve_uri("/abs") == "/abs"
    assert "s3cr3t" not in json.dumps(hook.describe())
    assert TxnLogHook().storage_options == {}  # no txnlog_default defined: local paths need nothing


def _context(ti: Any) -> dict[str, Any]:
    return {"ti": ti, "dag": SimpleNamespace(dag_id="d"), "run_id": "r1"}


def test_restore_on_failure_is_idempotent_and_never_raises(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    t = Table.create(uri, schema=SCHEMA, partition_by=["part"])
    t.write(rows([1, 2]))
    t.create_savepoint("sp")
    t.write(rows([3]), tags={"owner": "d/r1"})
    ti = SimpleNamespace(
        state="failed", task_id="merge", xcom_pull=lambda task_ids: {"name": "sp", "version": 1}
    )
    callback = restore_on_failure(uri, savepoint_task_id="savepoint")
    callback(_context(ti))
    restored = t.latest_version()
    assert restored == 3 and sorted(t.snapshot().to_arrow().column("id").to_pylist()) == [1, 2]
    callback(_context(ti))  # fired twice
    assert t.latest_version() == restored
    retry = SimpleNamespace(state="up_for_retry", task_id="merge", xcom_pull=ti.xcom_pull)
    t.write(rows([4]), tags={"owner": "d/r1"})
    callback(_context(retry))  # not a final failure: nothing restored
    assert 4 in t.snapshot().to_arrow().column("id").to_pylist()
    restore_on_failure(str(tmp_path / "missing"))(_context(ti))  # logs, does not raise
