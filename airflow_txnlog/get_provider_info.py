"""Provider metadata for Airflow's ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    """Return the provider description Airflow's ProvidersManager reads."""
    return {
        "package-name": "airflow-txnlog",
        "name": "Transaction log (Delta-compatible tables)",
        "description": "Delta-compatible transaction log, Spark DML and table maintenance for Airflow.",
        "versions": ["0.1.0"],
    }
