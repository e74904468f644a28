"""Benchmarks comparing airflow_txnlog's engine with delta-rs (not part of the test suite)."""

from __future__ import annotations
