"""airflow_txnlog: a Delta-compatible transaction-log engine and Airflow provider for table maintenance."""

from __future__ import annotations

__version__ = "0.1.0"
