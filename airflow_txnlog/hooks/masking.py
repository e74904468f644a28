"""Error text fit for an event payload or a log line: a connection's secret values masked.

Triggers and the hook's log polling report failures in events that land in Airflow's database and
UI; a storage error's text may hold what the connection holds (an account key, a SAS signature, a
connection string). `safe_message` replaces each secret value with `***` and cuts the text to a
length an event payload carries. It imports nothing of the engine (triggers load it on the event
loop).
"""

from __future__ import annotations

_MAX_MESSAGE_CHARS = 500


def safe_message(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """`Type: message` with every secret value masked, cut to a length fit for an event payload."""
    text = f"{type(exc).__name__}: {exc}"
    for secret in secrets:
        text = text.replace(secret, "***")
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 3] + "..."
