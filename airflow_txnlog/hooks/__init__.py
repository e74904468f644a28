"""Airflow hooks of the txnlog provider."""

from __future__ import annotations
