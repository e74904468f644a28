"""Provider metadata for Airflow's ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_txnlog import __version__

_INTEGRATION = "Transaction log"


def get_provider_info() -> dict[str, Any]:
    """Return the provider description Airflow's ProvidersManager reads (valid against its schema)."""
    return {
        "package-name": "airflow-txnlog",
        "name": "Transaction log (Delta-compatible tables)",
        "description": "Delta-compatible transaction log, Spark DML and table maintenance for Airflow.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": _INTEGRATION,
                "external-doc-url": "https://github.com/delta-io/delta/blob/master/PROTOCOL.md",
                "tags": ["software"],
            }
        ],
        "hooks": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": ["airflow_txnlog.hooks.txnlog", "airflow_txnlog.hooks.catalog"],
            }
        ],
        "operators": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": [
                    "airflow_txnlog.operators.spark",
                    "airflow_txnlog.operators.maintenance",
                    "airflow_txnlog.operators.savepoint",
                    "airflow_txnlog.operators.publish",
                    "airflow_txnlog.operators.release",
                    "airflow_txnlog.operators.constraints",
                    "airflow_txnlog.operators.planned_maintenance",
                    "airflow_txnlog.operators.planned_actions",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": ["airflow_txnlog.sensors.version", "airflow_txnlog.sensors.release"],
            }
        ],
        "triggers": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": ["airflow_txnlog.triggers.version", "airflow_txnlog.triggers.release"],
            }
        ],
        "connection-types": [_connection_type()],
        "config": _config(),
        # The Tables view (docs/ui.md): an Airflow 3 plugin with a FastAPI app and a nav entry.
        "plugins": [
            {
                "name": "txnlog_tables",
                "plugin-class": "airflow_txnlog.plugins.tables_plugin.TxnLogTablesPlugin",
            }
        ],
    }


def _config() -> dict[str, Any]:
    """The provider's `[txnlog]` options."""
    return {
        "txnlog": {
            "description": "Options of the txnlog provider.",
            "options": {
                "maintenance_history_uri": {
                    "description": "The maintenance-history Delta table that planned maintenance "
                    "(airflow_txnlog.operators.planned_maintenance) appends to and the Tables view "
                    "reads each table's last plan and maintenance history from. Opened with the "
                    "txnlog_default connection.",
                    "version_added": "0.1.0",
                    "type": "string",
                    "example": "s3://lake/_txnlog/maintenance_history",
                    "default": "",
                }
            },
        }
    }


def _connection_type() -> dict[str, Any]:
    """The `txnlog` connection type with its form.

    The form is declared here rather than by hook methods (deprecated since Airflow 3.2, and read
    without importing the hook). Keys are kebab-case; Airflow turns them into the hook-method form
    ("hidden_fields", ...) itself. Each conn-fields name is the extra key TxnLogHook reads.
    """
    return {
        "connection-type": "txnlog",
        "hook-class-name": "airflow_txnlog.hooks.txnlog.TxnLogHook",
        "hook-name": "Transaction log (Delta table)",
        "ui-field-behaviour": {
            "hidden-fields": ["schema", "port"],
            "relabeling": {
                "host": "Base location (optional)",
                "login": "Access key id",
                "password": "Secret key",
            },
            "placeholders": {
                "host": "s3://bucket/warehouse",
                "extra": '{"client_kwargs": {"region_name": "eu-west-1"}}',
            },
        },
        "conn-fields": {
            "endpoint_url": {
                "label": "Endpoint URL (S3-compatible stores)",
                "description": "fsspec storage option endpoint_url, e.g. http://minio:9000",
                "schema": {"type": ["string", "null"]},
            },
            "single_writer": {
                "label": "Single writer (only for stores without atomic create)",
                "description": "For a store that cannot create files atomically: promise that "
                "no other process ever writes to the table, so commits check, then write",
                "schema": {"type": ["boolean", "null"], "default": False},
            },
        },
    }
