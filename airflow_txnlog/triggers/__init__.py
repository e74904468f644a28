"""Airflow triggers of the txnlog provider."""

from __future__ import annotations
