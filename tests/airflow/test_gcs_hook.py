"""Google Cloud Storage through the Airflow connection: the hook's credential mapping, and a table
written on fake-gcs-server through a connection.

The `txnlog` connection carries GCS credentials the ways the google provider's connection keeps
them: a service account's JSON key (the password), a key file (`key_path`), a named
`google_cloud_platform` connection (`gcp_conn_id`: its `key_path` / `keyfile_dict` / `project`), or
nothing (Application Default Credentials). `describe()` and `secret_values` never show the key.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_txnlog.engine import Table
from airflow_txnlog.hooks.txnlog import TxnLogHook, secret_values
from tests.conftest import SCHEMA, rows
from tests.gcs import GcsBucket

pytestmark = pytest.mark.airflow
PRIVATE_KEY = "-----BEGIN PRIVATE KEY-----\nNEVER-LOG-THIS-GCS-KEY\n-----END PRIVATE KEY-----\n"
KEYFILE = {
    "type": "service_account",
    "project_id": "lake-prod",
    "private_key_id": "abc123def456",
    "private_key": PRIVATE_KEY,
    "client_email": "airflow@lake-prod.iam.gserviceaccount.com",
}


def _hook(monkeypatch: pytest.MonkeyPatch, conn_id: str, **conn: Any) -> TxnLogHook:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "txnlog", **conn}))
    return TxnLogHook(txnlog_conn_id=conn_id)


def test_a_json_key_in_the_password_becomes_gcsfs_token(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = _hook(
        monkeypatch, "gcs_key", host="gs://lake/w", password=json.dumps(KEYFILE), extra={"project": "p1"}
    )
    options = hook.storage_options_for("gs://lake/w/t")
    assert options == {"token": KEYFILE, "project": "p1"}
    assert PRIVATE_KEY in secret_values(options) and "abc123def456" in secret_values(options)
    assert PRIVATE_KEY not in json.dumps(hook.describe()) and hook.describe()["token"] == "***"
    assert hook.storage_options_for("s3://bucket/t")["secret"] == json.dumps(KEYFILE)  # S3 keeps key/secret


def test_a_key_file_a_google_connection_or_adc(monkeypatch: pytest.MonkeyPatch) -> None:
    by_path = _hook(monkeypatch, "gcs_path", host="gs://lake/w", extra={"key_path": "/secrets/sa.json"})
    assert by_path.storage_options == {"token": "/secrets/sa.json"}
    monkeypatch.setenv(
        "AIRFLOW_CONN_GOOGLE_CLOUD_DEFAULT",
        json.dumps(
            {
                "conn_type": "google_cloud_platform",
                "extra": {"keyfile_dict": json.dumps(KEYFILE), "project": "p9"},
            }
        ),
    )
    by_google = _hook(
        monkeypatch, "gcs_google", host="gs://lake/w", extra={"gcp_conn_id": "google_cloud_default"}
    )
    assert by_google.storage_options == {"project": "p9", "token": KEYFILE}
    adc = _hook(monkeypatch, "gcs_adc", host="gs://lake/w")
    assert adc.storage_options == {}  # gcsfs's default: Application Default Credentials
    bad = _hook(monkeypatch, "gcs_bad", host="gs://lake/w", password="not json " + PRIVATE_KEY)
    with pytest.raises(Exception, match="not a JSON object") as err:
        bad.storage_options  # noqa: B018 - the property raises
    assert PRIVATE_KEY not in str(err.value)


def test_the_hook_writes_to_the_emulator_through_a_connection(
    monkeypatch: pytest.MonkeyPatch, gcs_bucket: GcsBucket
) -> None:
    base = gcs_bucket.uri("hooked")
    hook = _hook(monkeypatch, "gcs_live", host=base, extra=gcs_bucket.options)
    t = hook.create_table("t", schema=SCHEMA, partition_by=["part"])
    assert t.uri == f"{base}/t" and t.write(rows([1, 2])) == 1
    assert hook.get_table("t").write(rows([3])) == 2
    again = Table.open(f"{base}/t", storage_options=gcs_bucket.options)
    assert sorted(again.snapshot().to_arrow().column("id").to_pylist()) == [1, 2, 3]
