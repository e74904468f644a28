"""GCS credentials from Airflow connections, the google provider's way, as gcsfs options.

Where the credential comes from, first found wins:
1. the `txnlog` connection itself: its password (a service account's JSON key), or the extra
   `keyfile_dict` (the same, as the google connection names it), or the extra `key_path` (a key
   file on the workers), or the extra `token` (any gcsfs token, e.g. `"anon"` for an emulator).
   More than one of these is refused: one would silently win over the other;
2. the `google_cloud_platform` connection named by the extra `gcp_conn_id`: its `keyfile_dict` or
   its `key_path` (both is refused, as the google provider does), else anonymous when its
   `is_anonymous` is set. Its `project` is used whenever it is named, unless the `txnlog`
   connection's extras give one;
3. nothing: gcsfs uses Application Default Credentials (Workload Identity, Composer's service
   account, `gcloud auth application-default login`).

The google connection's other ways (`key_secret_name`, `credential_config_file`,
`impersonation_chain`, `idp_issuer_url`) are refused by name rather than silently replaced by a
different identity.
`token_secrets` lists every value of a key that is not one of its public fields, for masking.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from airflow_txnlog.arguments import invalid

# The google provider's connection extras (bare, or with its old `extra__google_cloud_platform__` prefix).
GCP_EXTRAS = ("key_path", "keyfile_dict", "project", "is_anonymous")
UNSUPPORTED = ("key_secret_name", "credential_config_file", "impersonation_chain", "idp_issuer_url")
GCP_PREFIX = "extra__google_cloud_platform__"
# Fields of a service-account or authorized-user key that are not secrets (all others are).
PUBLIC_KEY_FIELDS = frozenset(
    {
        "type",
        "project_id",
        "client_email",
        "client_id",
        "auth_uri",
        "token_uri",
        "auth_provider_x509_cert_url",
        "client_x509_cert_url",
        "universe_domain",
        "quota_project_id",
    }
)


def token_secrets(token: Mapping[str, Any]) -> list[str]:
    """The secret values of a key dict: every string but the public fields."""
    return [str(v) for k, v in token.items() if k not in PUBLIC_KEY_FIELDS and isinstance(v, str) and v]


def gcs_options(
    conn_id: str, password: str | None, extras: Mapping[str, Any], google: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    """gcsfs options for a `txnlog` connection (`extras` without `single_writer`); `google(conn_id)`
    reads another connection's extras."""
    rest = {k.removeprefix(GCP_PREFIX): v for k, v in extras.items()}  # the google form's old names too
    _refuse_unsupported(conn_id, extras)
    gcp_id = rest.pop("gcp_conn_id", None)
    own = {
        "password": password or None,
        "keyfile_dict": rest.pop("keyfile_dict", None),
        "key_path": rest.pop("key_path", None),
        "token": rest.pop("token", None),
    }
    given = [name for name, value in own.items() if value]
    if len(given) > 1:
        raise invalid(
            f"connection {conn_id!r} gives GCS credentials {len(given)} ways ({', '.join(given)}): keep one"
        )
    options = _from_google(str(gcp_id), google(str(gcp_id)), token=not given) if gcp_id else {}
    if given:
        options["token"] = _token(conn_id, given[0], own[given[0]])
    options.update(rest)
    return options


def google_extras(conn_id: str, extras: Mapping[str, Any]) -> dict[str, Any]:
    """A google connection's credential extras by their bare names (unsupported ways refused)."""
    _refuse_unsupported(conn_id, extras)
    return {k: extras.get(k) or extras.get(GCP_PREFIX + k) for k in GCP_EXTRAS}


def _refuse_unsupported(conn_id: str, extras: Mapping[str, Any]) -> None:
    for name in UNSUPPORTED:
        if extras.get(name) or extras.get(GCP_PREFIX + name):
            raise invalid(
                f"connection {conn_id!r}: {name!r} is not supported for GCS tables; give a service "
                "account key (keyfile_dict / key_path) or use Application Default Credentials"
            )


def _from_google(conn_id: str, google: Mapping[str, Any], *, token: bool) -> dict[str, Any]:
    """`project` from a google connection, and its credential as `token` when `token` is asked for."""
    options: dict[str, Any] = {"project": google["project"]} if google.get("project") else {}
    if not token:
        return options
    if google.get("keyfile_dict") and google.get("key_path"):
        raise invalid(f"connection {conn_id!r} gives both keyfile_dict and key_path: keep one")
    if google.get("keyfile_dict"):
        options["token"] = _token(conn_id, "keyfile_dict", google["keyfile_dict"])
    elif google.get("key_path"):
        options["token"] = str(google["key_path"])
    elif str(google.get("is_anonymous") or "").lower() in ("true", "1"):
        options["token"] = "anon"  # noqa: S105 - gcsfs's method name, not a secret
    return options


def _token(conn_id: str, source: str, value: Any) -> Any:
    if source == "key_path":
        return str(value)
    if source == "token" and not (isinstance(value, str) and value.lstrip().startswith("{")):
        return value  # a gcsfs method name or token (the engine keeps it out of URLs)
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(str(value))
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):  # (never echo it: it is a credential)
        raise invalid(f"connection {conn_id!r}: the GCS service account key ({source}) is not a JSON object")
    return parsed
