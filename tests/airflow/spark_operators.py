"""What the tests that run the Spark operators' `execute` share besides the `spark` fixture
(tests/airflow/conftest.py): a plain dict context (no Airflow DB)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from types import SimpleNamespace
from typing import Any


def plain_context(day: int) -> dict[str, Any]:
    """The context of a run of `orders_dag` on 2024-06-<day>, as `execute` reads it."""
    logical = dt.datetime(2024, 6, day, tzinfo=dt.UTC)
    return {
        "dag": SimpleNamespace(dag_id="orders_dag"),
        "run_id": f"scheduled__2024-06-{day:02d}",
        "logical_date": logical,
        "dag_run": SimpleNamespace(logical_date=logical, run_after=logical),
        "outlet_events": defaultdict(lambda: SimpleNamespace(extra=None)),
    }
