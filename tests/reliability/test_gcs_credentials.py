"""gcsfs's `token` as users pass it to the engine, on fake-gcs-server (engine.gcs_token).

gcsfs takes an unknown string token for a raw access token and validates it by sending it in a URL,
so a service-account key pasted as JSON text would travel to Google's tokeninfo endpoint, and the
request's error would carry it. The engine parses a JSON key, refuses a missing key file by name and
hands a raw access token to google-auth as credentials (no validation request).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_txnlog.engine import InvalidArgumentError, Table, TableNotFoundError
from airflow_txnlog.engine.storage import storage_for
from tests.conftest import SCHEMA, rows
from tests.gcs import GcsBucket, ServiceAccount


def test_a_json_key_as_text_is_a_key_not_an_access_token(
    gcs_bucket: GcsBucket, service_account: ServiceAccount
) -> None:
    options = {**gcs_bucket.options, "token": json.dumps(service_account.key)}
    t = Table.create(gcs_bucket.uri("json-key"), schema=SCHEMA, storage_options=options)
    assert t.write(rows([1, 2])) == 1
    assert service_account.requests and "assertion=" in service_account.requests[0]  # a signed JWT
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == [1, 2]


def test_a_raw_access_token_is_used_as_credentials_without_a_request(gcs_bucket: GcsBucket) -> None:
    from google.oauth2.credentials import Credentials  # noqa: PLC0415

    token = "ya29.a0-NEVER-IN-A-URL"
    options = {**gcs_bucket.options, "token": token}
    storage = storage_for(gcs_bucket.uri("raw-token"), options)
    held = storage.fs.credentials.credentials
    assert isinstance(held, Credentials) and held.token == token
    with pytest.raises(TableNotFoundError) as err:
        Table.open(gcs_bucket.uri("raw-token"), storage_options=options)
    assert token not in str(err.value)
    t = Table.create(gcs_bucket.uri("raw-token"), schema=SCHEMA, storage_options=options)
    assert t.write(rows([3])) == 1
    # One credentials object per token: fsspec's filesystem cache (keyed by the options' text) hits.
    assert storage_for(gcs_bucket.uri("x"), options).fs is storage.fs


def test_a_key_file_by_any_name_is_a_key_file(
    gcs_bucket: GcsBucket, service_account: ServiceAccount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative key file without a slash or `.json` (as gcsfs accepts it), read with a trailing
    newline from a secret file: still a key file, never taken for an access token."""
    (tmp_path / "sa.key").write_text(json.dumps(service_account.key))
    monkeypatch.chdir(tmp_path)
    options = {**gcs_bucket.options, "token": "sa.key\n"}
    t = Table.create(gcs_bucket.uri("key-file"), schema=SCHEMA, storage_options=options)
    assert t.write(rows([4])) == 1
    assert service_account.requests  # the key signed a JWT


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ('{"type": "service_account", "private_key": "NEVER-SHOWN', "not a JSON object"),
        ("/no/such/dir/sa.json", "no key file at '/no/such/dir/sa.json'"),
    ],
)
def test_a_bad_token_is_refused_without_echoing_it(
    gcs_bucket: GcsBucket, token: str, message: str | None
) -> None:
    options = {**gcs_bucket.options, "token": token}
    if message is None:
        assert storage_for(gcs_bucket.uri("bad"), options).fs.credentials.credentials.token == token
        return
    with pytest.raises(InvalidArgumentError, match=message) as err:
        Table.create(gcs_bucket.uri("bad"), schema=SCHEMA, storage_options=options)
    assert "NEVER-SHOWN" not in str(err.value)
    assert not gcs_bucket.server.fs().exists(gcs_bucket.uri("bad"))  # nothing written
