"""The baseline a sensor waits past, kept for the whole DAG run (both txnlog sensors).

Without an explicit `after_*`, a sensor waits for something newer than what there was when it first
poked in this DAG run. That first answer must survive reschedules and retries, so it is kept in the
task state store under the sensor's key; on an Airflow without one, a sensor in reschedule mode
cannot keep it and is refused (poke mode and deferral keep it in the running process or trigger).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.sdk.exceptions import AirflowException


def run_baseline(
    context: Any, *, key: str, reschedule: bool, sensor: str, param: str, current: Callable[[], int]
) -> tuple[int, bool]:
    """(the baseline, whether it was fixed just now): the stored one, else `current()` stored."""
    store: Any = context.get("task_state_store")
    if store is not None:
        stored = store.get(key)
        if stored is not None:
            return int(stored), False
    elif reschedule:
        raise AirflowException(
            f"{sensor} in reschedule mode needs {param} on this Airflow version (no task state store "
            f"to keep the baseline between pokes). Help: pass {param}, or use mode='poke' or "
            "deferrable=True."
        )
    baseline = current()
    if store is not None:
        store.set(key, baseline)
    return baseline, True
