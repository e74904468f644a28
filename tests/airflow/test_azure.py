"""Azure through the Airflow connection: the hook's credential mapping, and DAG tasks on Azurite.

- The `txnlog` connection carries Azure credentials the ways users keep them: account name + key
  (login / password), a SAS token, a connection string, or a service principal (extras). The hook
  turns each into adlfs options for `abfs://` / `abfss://` / `az://` tables (and keeps S3's
  key / secret for `s3://`), and `describe()` / `secret_values` never show a credential.
- Against Azurite (tests/azurite.py): the hook writes through a connection string and through a
  SAS; a read-only SAS is refused with a TxnLogError that does not echo the signature; and two DAGs
  run with `dag.test()` — a savepoint, a Spark append and a checkpoint; then a bad append restored by
  `restore_on_failure` — reaching the table only through the connection. Their whole output (task
  logs included) never holds the account key or the connection string.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import Table, TxnLogError
from airflow_txnlog.hooks.txnlog import TxnLogHook, secret_values
from tests.airflow.store_dags_run import run_and_check
from tests.azurite import ACCOUNT, ACCOUNT_KEY, AzureContainer
from tests.conftest import SCHEMA, rows

pytestmark = pytest.mark.airflow


def _hook(monkeypatch: pytest.MonkeyPatch, conn_id: str, **conn: Any) -> TxnLogHook:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "txnlog", **conn}))
    return TxnLogHook(txnlog_conn_id=conn_id)


def test_account_name_and_key_from_login_and_password(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = _hook(
        monkeypatch,
        "az_key",
        host="abfss://lake@acct.dfs.core.windows.net/w",
        login="acct",
        password="K3y+/==",
    )
    assert hook.storage_options == {"account_name": "acct", "account_key": "K3y+/=="}
    assert hook.storage_options_for("az://lake/t") == {"account_name": "acct", "account_key": "K3y+/=="}
    assert hook.storage_options_for("s3://bucket/t") == {"key": "acct", "secret": "K3y+/=="}  # S3 names
    assert hook.describe() == {"account_name": "acct", "account_key": "***"}
    assert secret_values(hook.storage_options) == ("K3y+/==",)


def test_sas_token_connection_string_and_service_principal_from_extras(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sas = _hook(
        monkeypatch, "az_sas", host="abfs://lake/w", login="acct", extra={"sas_token": "sv=1&sig=S1G"}
    )
    assert sas.storage_options == {"account_name": "acct", "sas_token": "sv=1&sig=S1G"}
    conn_string = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=THEKEY123;EndpointSuffix=x"
    cs = _hook(monkeypatch, "az_cs", host="abfs://lake/w", extra={"connection_string": conn_string})
    assert cs.storage_options == {"connection_string": conn_string}
    assert set(secret_values(cs.storage_options)) == {conn_string, "THEKEY123"}
    principal = {"account_name": "acct", "tenant_id": "t-1", "client_id": "c-1", "client_secret": "CS3CR3T"}
    sp = _hook(monkeypatch, "az_sp", host="abfs://lake/w", extra=principal)
    assert sp.storage_options == principal
    shown = json.dumps([sas.describe(), cs.describe(), sp.describe()])
    for secret in ("S1G", "THEKEY123", "CS3CR3T"):
        assert secret not in shown


def test_the_hook_writes_through_a_connection_string_and_a_sas(
    monkeypatch: pytest.MonkeyPatch, azure_container: AzureContainer
) -> None:
    from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas  # noqa: PLC0415

    base = azure_container.uri("hooked")
    by_key = _hook(monkeypatch, "az_live", host=base, extra=azure_container.options)
    t = by_key.create_table("t", schema=SCHEMA, partition_by=["part"])
    assert t.uri == f"{base}/t" and t.write(rows([1, 2])) == 1

    def sas_hook(conn_id: str, permission: AccountSasPermissions) -> TxnLogHook:
        token = generate_account_sas(
            ACCOUNT,
            ACCOUNT_KEY,
            ResourceTypes(container=True, object=True),
            permission,
            expiry=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1),
        )
        conn_string = f"BlobEndpoint={azure_container.server.blob_endpoint};SharedAccessSignature={token}"
        return _hook(monkeypatch, conn_id, host=base, extra={"connection_string": conn_string})

    full = sas_hook("az_sas_rw", AccountSasPermissions(read=True, write=True, list=True, create=True))
    assert full.get_table("t").write(rows([3])) == 2
    read_only = sas_hook("az_sas_ro", AccountSasPermissions(read=True, list=True))
    table = read_only.get_table("t")
    assert sorted(table.snapshot().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    with pytest.raises(TxnLogError) as err:
        table.write(rows([4]))
    signature = dict(p.split("=", 1) for p in read_only.storage_options["connection_string"].split(";"))
    assert signature["SharedAccessSignature"].split("sig=")[1][:10] not in str(err.value)
    assert Table.open(f"{base}/t", storage_options=azure_container.options).latest_version() == 2


@pytest.mark.spark
@pytest.mark.slow
def test_dag_tasks_write_savepoint_checkpoint_and_restore_on_azure(
    azure_container: AzureContainer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in a deployment that never set it: the operators must point Spark's workers at this Python.
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    base = azure_container.uri("lake")
    options = azure_container.options
    output = run_and_check("azure", base, options, {"host": base, "extra": options}, tmp_path)
    for secret in (ACCOUNT_KEY, options["connection_string"]):
        assert secret not in output
