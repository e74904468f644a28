"""gcsfs's `token` storage option, made safe before gcsfs sees it.

gcsfs reads a string `token` as a method name (`google_default`, `cache`, `cloud`, `anon`,
`browser`), a path to a key file, or else a raw OAuth access token, which it validates by sending it
in a URL (`oauth2.googleapis.com/tokeninfo?access_token=...`): the request's error then carries the
token, and a service-account key pasted as JSON text would travel the same way, private key and
all. So, before gcsfs is built:

- a string holding a JSON object becomes the dict gcsfs expects for a key (invalid JSON is refused
  without echoing it);
- a string naming an existing file is a key file (passed on stripped); one that looks like a path
  (a `/` or `\\` in it, or ending in `.json`) but names no file is refused by name (a path is not a
  secret) instead of being taken for an access token;
- any other string that is not a method name is an access token: it becomes google-auth
  `Credentials`, which gcsfs uses as they are, with no validation request.

Dicts and credential objects pass unchanged.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from airflow_txnlog.engine.errors import InvalidArgumentError

GCSFS_METHODS = frozenset({"google_default", "cache", "cloud", "anon", "browser"})


def safe_token(options: dict[str, Any]) -> dict[str, Any]:
    """`options` with a string `token` turned into what gcsfs reads without a request (see above)."""
    token = options.get("token")
    if not isinstance(token, str) or token in GCSFS_METHODS:
        return options
    text = token.strip()
    if os.path.exists(text):  # a key file, wherever it is and whatever its name
        return {**options, "token": text}
    if text.startswith("{"):
        try:
            key = json.loads(text)
        except ValueError:
            key = None
        if not isinstance(key, dict):
            raise InvalidArgumentError(
                "storage option 'token' looks like a JSON service account key but is not a JSON object "
                "(its text is not shown: it is a credential)"
            )
        return {**options, "token": key}
    if any(sep in text for sep in ("/", "\\")) or text.endswith(".json"):
        raise InvalidArgumentError(f"storage option 'token': no key file at {text!r}")
    return {**options, "token": _credentials(text)}


@functools.lru_cache(maxsize=32)
def _credentials(access_token: str) -> Any:
    """One credentials object per token: fsspec caches filesystems by their options' text, which
    holds the object's identity, so a new object per call would build (and keep) a new filesystem."""
    from google.oauth2.credentials import Credentials  # noqa: PLC0415 - gcsfs brings google-auth

    return Credentials(token=access_token)  # type: ignore[no-untyped-call]
