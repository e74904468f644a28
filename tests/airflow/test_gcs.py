"""Google Cloud Storage through the Airflow connection: the hook's credential mapping, and tables
written on fake-gcs-server through a connection.

The `txnlog` connection carries GCS credentials the ways the google provider's connection keeps
them: a service account's JSON key (the password), a key file (`key_path`), a named
`google_cloud_platform` connection (`gcp_conn_id`: its `key_path` / `keyfile_dict` / `project`), or
nothing (Application Default Credentials). `describe()` and `secret_values` never show the key.

Against the emulator the connection holds a real service-account key whose token endpoint is local
(tests/gcs.py): the hook writes a table, and two DAGs run with `dag.test()` (a savepoint, a Spark
append and a checkpoint; then a bad append restored by `restore_on_failure`) reaching the table only
through the connection. Their whole output (task logs included) never holds the private key or the
access token it was exchanged for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table
from airflow_txnlog.hooks.txnlog import TxnLogHook, secret_values
from tests.airflow.store_dags_run import run_and_check
from tests.conftest import SCHEMA, rows
from tests.gcs import GcsBucket, ServiceAccount

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
    with pytest.raises(InvalidArgumentError, match="not a JSON object") as err:
        bad.storage_options  # noqa: B018 - the property raises
    assert PRIVATE_KEY not in str(err.value)


def _google(monkeypatch: pytest.MonkeyPatch, conn_id: str, extra: dict[str, Any]) -> None:
    conn = {"conn_type": "google_cloud_platform", "extra": extra}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))


def test_one_credential_per_connection_and_unsupported_ways_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second credential would silently win over the first; a google connection's Secret Manager
    key, credential config file or impersonation would silently become ADC: all refused by name."""
    twice = _hook(
        monkeypatch, "gcs_twice", host="gs://lake/w", password=json.dumps(KEYFILE), extra={"token": "anon"}
    )
    with pytest.raises(InvalidArgumentError, match=r"2 ways \(password, token\): keep one") as err:
        twice.storage_options  # noqa: B018 - the property raises
    assert PRIVATE_KEY not in str(err.value)
    own_dict = _hook(monkeypatch, "gcs_dict", host="gs://lake/w", extra={"keyfile_dict": json.dumps(KEYFILE)})
    assert own_dict.storage_options == {"token": KEYFILE}
    old_name = {"extra__google_cloud_platform__key_path": "/sa.json"}  # read, never silently dropped
    assert _hook(monkeypatch, "gcs_old", host="gs://lake/w", extra=old_name).storage_options == {
        "token": "/sa.json"
    }
    assert "keyfile_dict" not in json.dumps(own_dict.describe()) and PRIVATE_KEY not in json.dumps(
        own_dict.describe()
    )
    for name in ("key_secret_name", "extra__google_cloud_platform__impersonation_chain", "idp_issuer_url"):
        hook = _hook(monkeypatch, f"gcs_{name[-6:]}", host="gs://lake/w", extra={name: "x"})
        with pytest.raises(InvalidArgumentError, match="is not supported for GCS tables"):
            hook.storage_options  # noqa: B018
    _google(monkeypatch, "gcp_wif", {"credential_config_file": "/wif.json"})
    via = _hook(monkeypatch, "gcs_wif", host="gs://lake/w", extra={"gcp_conn_id": "gcp_wif"})
    with pytest.raises(InvalidArgumentError, match="'credential_config_file' is not supported"):
        via.storage_options  # noqa: B018


def test_google_connection_precedence_project_and_anonymous(monkeypatch: pytest.MonkeyPatch) -> None:
    _google(monkeypatch, "gcp_key", {"keyfile_dict": json.dumps(KEYFILE), "project": "p2"})
    _google(monkeypatch, "gcp_both", {"keyfile_dict": json.dumps(KEYFILE), "key_path": "/other.json"})
    _google(monkeypatch, "gcp_anon", {"is_anonymous": True})
    by_dict = _hook(monkeypatch, "gcs_key", host="gs://lake/w", extra={"gcp_conn_id": "gcp_key"})
    assert by_dict.storage_options == {"project": "p2", "token": KEYFILE}
    own = {"gcp_conn_id": "gcp_key", "key_path": "/mine.json"}
    own_path = _hook(monkeypatch, "gcs_own", host="gs://lake/w", extra=own)
    assert own_path.storage_options == {"project": "p2", "token": "/mine.json"}  # own key, google project
    mine = _hook(monkeypatch, "gcs_mine", host="gs://lake/w", extra={**own, "project": "p3"})
    assert mine.storage_options["project"] == "p3"  # the connection's own extras last
    both = _hook(monkeypatch, "gcs_both", host="gs://lake/w", extra={"gcp_conn_id": "gcp_both"})
    with pytest.raises(InvalidArgumentError, match="both keyfile_dict and key_path: keep one") as err:
        both.storage_options  # noqa: B018 - the property raises
    assert PRIVATE_KEY not in str(err.value)
    anon = _hook(monkeypatch, "gcs_anon", host="gs://lake/w", extra={"gcp_conn_id": "gcp_anon"})
    assert anon.storage_options == {"token": "anon"}


def test_every_secret_field_of_a_key_is_masked() -> None:
    user_key = {
        "type": "authorized_user",
        "client_id": "123.apps.googleusercontent.com",
        "client_secret": "GOCSPX-NEVER-LOG",
        "refresh_token": "1//NEVER-LOG-REFRESH",
        "quota_project_id": "lake-prod",
    }
    assert set(secret_values({"token": user_key})) == {"GOCSPX-NEVER-LOG", "1//NEVER-LOG-REFRESH"}
    assert set(secret_values({"token": KEYFILE})) == {PRIVATE_KEY, "abc123def456"}


def _live_conn(bucket: GcsBucket, account: ServiceAccount, base: str) -> dict[str, Any]:
    """A connection as a user keeps it: the JSON key as the password, the endpoint as an extra."""
    extra = {k: v for k, v in bucket.options.items() if k != "token"}  # no anonymous token
    return {"host": base, "password": json.dumps(account.key), "extra": extra}


def test_the_hook_writes_to_the_emulator_through_a_connection(
    monkeypatch: pytest.MonkeyPatch, gcs_bucket: GcsBucket, service_account: ServiceAccount
) -> None:
    base = gcs_bucket.uri("hooked")
    hook = _hook(monkeypatch, "gcs_live", **_live_conn(gcs_bucket, service_account, base))
    t = hook.create_table("t", schema=SCHEMA, partition_by=["part"])
    assert t.uri == f"{base}/t" and t.write(rows([1, 2])) == 1
    assert hook.get_table("t").write(rows([3])) == 2
    assert service_account.requests  # the key was exchanged for a token: not an anonymous client
    again = Table.open(f"{base}/t", storage_options=gcs_bucket.options)
    assert sorted(again.snapshot().to_arrow().column("id").to_pylist()) == [1, 2, 3]


@pytest.mark.spark
@pytest.mark.slow
def test_dag_tasks_write_savepoint_checkpoint_and_restore_on_gcs(
    gcs_bucket: GcsBucket, service_account: ServiceAccount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)  # as in a deployment that never set it
    base = gcs_bucket.uri("lake")
    conn = _live_conn(gcs_bucket, service_account, base)
    output = run_and_check("gcs", base, gcs_bucket.options, conn, tmp_path)
    # The seeding used the anonymous options: every exchange came from the DAG's processes.
    assert service_account.requests
    for secret in (service_account.private_key_line, service_account.access_token):
        assert secret not in output
