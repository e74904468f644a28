"""Airflow operators of the txnlog provider."""

from __future__ import annotations

from airflow_txnlog.operators._base import run_datetime

__all__ = ["run_datetime"]
