"""`TxnLogHook`: turns an Airflow connection into engine `Table`s.

Connection type `txnlog`:
- `host` (optional): a base location; relative table URIs are resolved against it
  (e.g. host `s3://lake/warehouse` + table `sales/orders` -> `s3://lake/warehouse/sales/orders`);
- `login` / `password` (optional): the store's key pair. For S3 and other stores they go to fsspec
  as `key` / `secret`; for Azure (`abfs://`, `abfss://`, `az://` tables) as the storage account
  name and account key (`account_name` / `account_key`, adlfs's names);
- `extra` (a JSON object): every other fsspec storage option (`endpoint_url`, `client_kwargs`, `anon`,
  `token`, ...), plus `single_writer` (true/false) for stores without atomic creates. Azure's other
  credentials are extras too: `sas_token` (with the account as login), `connection_string`, or a
  service principal (`tenant_id`, `client_id`, `client_secret`); with none of them adlfs uses
  Azure's default credential chain (managed identity, environment, CLI login).
  Google Cloud Storage (`gs://`, `gcs://`), as the google provider's connection does it: the
  password may hold a service account's JSON key (or the extra `keyfile_dict`), or the extra
  `key_path` a key file; or the extra `gcp_conn_id` names a `google_cloud_platform` connection whose
  `keyfile_dict` / `key_path` / `project` are used (the google provider need not be installed); with
  none of them gcsfs uses Application Default Credentials. They become gcsfs's `token` (and
  `project`); the precedence and what is refused are in `hooks.gcs_credentials`.
  Anything but a JSON object, or a `single_writer` that is not a boolean, is an `InvalidArgumentError`.
Which mapping applies follows the table URI's scheme (`storage_options_for(uri)`); `storage_options`
is the mapping for the connection's base location.
Without a connection (or when `txnlog_default` is not defined) local paths work as they are.
Secrets are never logged: `describe()` masks them, `secret_values` lists them for masking messages
(the account key and signature inside a connection string too; `hooks.masking.safe_message` masks
them in an error's text), and `storage_options` is not templated.

Polling a table's log (hooks.log_polling: one listing from the cursor, then only the new commits),
for the version sensor and the version triggers: `open_log` (the table's storage and the secrets to
mask), `poll_log` (the commits after a version, or a channel's publications) and `log_version` (the
latest version, a baseline). Each has an async variant (`aopen_log`, `apoll_log`, `alog_version`)
that runs it in a worker thread: the connection lookup, the engine's import and every storage call
stay off a triggerer's event loop. This module itself imports no engine module at run time.

The connection form (hidden and relabelled fields, and the `endpoint_url` / `single_writer` fields,
whose names are the extra keys read here) is declared in `airflow_txnlog.get_provider_info`, as
Airflow >= 3.2 expects; the hook defines no `get_ui_field_behaviour` / `get_connection_form_widgets`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from airflow_txnlog.arguments import flag, invalid
from airflow_txnlog.hooks.gcs_credentials import gcs_options, google_extras, token_secrets

if TYPE_CHECKING:  # the engine (pyarrow) loads when a table is opened, not when a DAG file is parsed
    from airflow_txnlog.engine import Table
    from airflow_txnlog.engine.spi import Storage
    from airflow_txnlog.hooks.log_polling import LogPoll, OpenedLog

SINGLE_WRITER = "single_writer"  # the extra (and connection-form field) that is not a storage option
SECRET_KEYS = frozenset(
    {"secret", "password", "token", "key", "account_key", "sas_token", "client_secret", "connection_string"}
)
AZURE_SCHEMES = frozenset({"abfs", "abfss", "az"})
GCS_SCHEMES = frozenset({"gs", "gcs"})
# The parts of an Azure connection string that are credentials (the rest names endpoints).
_CONNECTION_STRING_SECRETS = ("accountkey", "sharedaccesssignature")


def secret_values(options: dict[str, Any]) -> tuple[str, ...]:
    """Every secret value in storage options, for masking messages (short values are not secrets)."""
    found: list[str] = []
    for key, value in options.items():
        if key == "token" and isinstance(value, dict):  # a key file's content: all but its public fields
            found += token_secrets(value)
            continue
        if key not in SECRET_KEYS or not isinstance(value, str):
            continue
        found.append(value)
        if key == "connection_string":
            for part in value.split(";"):
                name, _, secret = part.partition("=")
                if name.strip().lower() in _CONNECTION_STRING_SECRETS:
                    found.append(secret.strip())
    return tuple(v for v in found if len(v) >= 4)


class TxnLogHook(BaseHook):
    """Opens and creates Delta-compatible tables with the storage options of a `txnlog` connection.

    :param txnlog_conn_id: the connection id; if it is the default id and not defined, no options are used.
    """

    conn_name_attr = "txnlog_conn_id"
    default_conn_name = "txnlog_default"
    conn_type = "txnlog"
    hook_name = "Transaction log (Delta table)"

    def __init__(self, txnlog_conn_id: str | None = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.txnlog_conn_id = txnlog_conn_id

    @cached_property
    def _connection(self) -> Any | None:
        if not self.txnlog_conn_id:
            return None
        try:
            return self.get_connection(self.txnlog_conn_id)
        except AirflowNotFoundException:
            if self.txnlog_conn_id == self.default_conn_name:
                return None  # local paths need no connection
            raise

    @cached_property
    def _extras(self) -> dict[str, Any]:
        conn = self._connection
        extras = (conn.extra_dejson or {}) if conn is not None else {}
        if not isinstance(extras, dict):  # valid JSON, but a list or a string has no option names
            raise invalid(
                f"the extra of connection {self.txnlog_conn_id!r} must be a JSON object of fsspec "
                f"storage options; got a JSON {type(extras).__name__}"
            )
        return extras

    @cached_property
    def storage_options(self) -> dict[str, Any]:
        """fsspec storage options for the connection's base location (see `storage_options_for`)."""
        return self.storage_options_for(self.base_location or "")

    def storage_options_for(self, table_uri: str) -> dict[str, Any]:
        """fsspec storage options from the connection for a table: login/password as the key pair of
        the URI's store (Azure: account name / key; others: key / secret), then the extras."""
        conn = self._connection
        if conn is None:
            return {}
        scheme = urlsplit(self.resolve_uri(table_uri)).scheme.lower()
        if scheme in GCS_SCHEMES:
            return self._gcs_options(conn)
        user, secret = ("account_name", "account_key") if scheme in AZURE_SCHEMES else ("key", "secret")
        options: dict[str, Any] = {}
        if conn.login:
            options[user] = conn.login
        if conn.password:
            options[secret] = conn.password
        options.update({k: v for k, v in self._extras.items() if k != SINGLE_WRITER})
        return options

    def _gcs_options(self, conn: Any) -> dict[str, Any]:
        """gcsfs options (hooks.gcs_credentials: the key from this connection or a google one)."""
        extras = {k: v for k, v in self._extras.items() if k != SINGLE_WRITER}
        return gcs_options(str(self.txnlog_conn_id), conn.password, extras, self._google_extras)

    def _google_extras(self, conn_id: str) -> dict[str, Any]:
        return google_extras(conn_id, self.get_connection(conn_id).extra_dejson or {})

    @cached_property
    def single_writer(self) -> bool:
        return flag(
            f"extra {SINGLE_WRITER!r} of connection {self.txnlog_conn_id!r}", self._extras.get(SINGLE_WRITER)
        )

    @cached_property
    def base_location(self) -> str | None:
        conn = self._connection
        return conn.host.rstrip("/") if conn is not None and conn.host else None

    def resolve_uri(self, table_uri: str) -> str:
        """The full table URI: absolute URIs and paths as they are, relative ones under the base location."""
        head, sep, _ = table_uri.partition("://")
        if (sep and head.isalnum()) or table_uri.startswith("/") or not self.base_location:
            return table_uri
        return f"{self.base_location}/{table_uri.lstrip('/')}"

    def get_table(self, table_uri: str, *, lazy: bool = False) -> Table:
        """Open an existing table (TableNotFoundError if there is none); `lazy=True` reads nothing yet
        (the first query finds out whether there is a table: one `Table.overview`, say)."""
        from airflow_txnlog.engine import Table  # noqa: PLC0415 - see the TYPE_CHECKING import

        return Table.open(
            self.resolve_uri(table_uri),
            storage_options=self.storage_options_for(table_uri) or None,
            single_writer=self.single_writer,
            lazy=lazy,
        )

    def get_storage(self, table_uri: str) -> Storage:
        """The table's files only: no listing, no snapshot (e.g. to read one commit file)."""
        from airflow_txnlog.engine.spi import storage_for  # noqa: PLC0415 - light, but not at parse time

        uri = self.resolve_uri(table_uri)
        return storage_for(uri, self.storage_options_for(uri) or None, single_writer=self.single_writer)

    def create_table(self, table_uri: str, **kwargs: Any) -> Table:
        """Create a table (see `Table.create` for the keyword arguments)."""
        from airflow_txnlog.engine import Table  # noqa: PLC0415

        return Table.create(
            self.resolve_uri(table_uri),
            storage_options=self.storage_options_for(table_uri) or None,
            single_writer=self.single_writer,
            **kwargs,
        )

    def describe(self) -> dict[str, Any]:
        """The connection as logs may show it: secrets masked."""
        return {k: ("***" if k in SECRET_KEYS else v) for k, v in self.storage_options.items()}

    def test_connection(self) -> tuple[bool, str]:
        """Used by the UI's Test button: list the base location when there is one."""
        if not self.base_location:
            return True, "no base location: local paths and full URIs are used as given"
        try:
            from airflow_txnlog.engine.spi import storage_for  # noqa: PLC0415 - only for the UI

            storage = storage_for(self.base_location, self.storage_options or None)
            storage.fs.ls(storage.fs_root)
        except Exception as exc:  # the UI shows the message; any failure means the test failed
            return False, f"cannot list {self.base_location}: {type(exc).__name__}"
        return True, f"listed {self.base_location}"

    # ------------------------------------------------------------------ polling the log (hooks.log_polling)
    def open_log(self, table_uri: str) -> OpenedLog:
        """The table's storage for polling, with the connection's secrets to mask in messages (reads
        the connection; touches no table file)."""
        from airflow_txnlog.hooks import log_polling  # noqa: PLC0415 - the engine's log reader, on first use

        uri = self.resolve_uri(table_uri)
        options = self.storage_options_for(uri)
        secrets = secret_values(options)
        return log_polling.open_log(table_uri, uri, options, secrets, single_writer=self.single_writer)

    def poll_log(
        self,
        log: OpenedLog,
        after: int,
        *,
        operations: Collection[str] | None = None,
        channel: str | None = None,
    ) -> LogPoll:
        """The commits after version `after` (at most `log_polling.MAX_COMMITS_PER_POLL`), oldest first,
        each `matched` when its operation is one of `operations` (None: any); with `channel`, the
        channel's publications after it."""
        from airflow_txnlog.hooks import log_polling  # noqa: PLC0415

        return log_polling.poll(log.storage, after, operations=operations, channel=channel)

    def log_version(self, log: OpenedLog, *, channel: str | None = None) -> int:
        """The latest version (with `channel`: the latest published one), -1 when there is none yet."""
        from airflow_txnlog.hooks import log_polling  # noqa: PLC0415

        return log_polling.latest_version(log.storage, channel=channel)

    async def aopen_log(self, table_uri: str) -> OpenedLog:
        """`open_log` in a worker thread (the first call imports the engine's log reader there)."""
        return await asyncio.to_thread(self.open_log, table_uri)

    async def apoll_log(
        self,
        log: OpenedLog,
        after: int,
        *,
        operations: Collection[str] | None = None,
        channel: str | None = None,
    ) -> LogPoll:
        """`poll_log` in a worker thread."""
        return await asyncio.to_thread(self.poll_log, log, after, operations=operations, channel=channel)

    async def alog_version(self, log: OpenedLog, *, channel: str | None = None) -> int:
        """`log_version` in a worker thread."""
        return await asyncio.to_thread(self.log_version, log, channel=channel)
