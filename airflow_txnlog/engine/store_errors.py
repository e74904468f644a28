"""Store clients' errors as `OSError`s: what the engine's callers classify (engine.storage).

s3fs and gcsfs raise OSErrors already; adlfs wraps a failed upload in `RuntimeError` and lets the
Azure SDK's own errors through. An error whose cause chain holds an exception of a store client (the
Azure, Google or botocore SDKs, or aiohttp) becomes an `OSError` naming the object, the cause
chained; any other error passes unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

_CLIENT_MODULES = ("azure.", "adlfs.", "google.", "gcsfs.", "botocore.", "aiobotocore.", "aiohttp.")
_F = TypeVar("_F", bound=Callable[..., Any])


def _from_store_client(exc: BaseException) -> bool:
    """True when `exc` or an exception it was raised from comes from an object store's client."""
    seen: BaseException | None = exc
    for _ in range(8):  # a cause chain is short; a cycle must not loop forever
        if seen is None:
            return False
        if any(c.__module__.startswith(_CLIENT_MODULES) for c in type(seen).__mro__):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def os_errors(method: _F) -> _F:
    """Make a store client's own exceptions `OSError`s (see "Errors" in the module docstring)."""

    @functools.wraps(method)
    def wrapper(self: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, key, *args, **kwargs)
        except OSError:
            raise
        except Exception as exc:
            translated = as_os_error(self.root, str(key), exc)
            if translated is None:
                raise
            raise translated from exc

    return wrapper  # type: ignore[return-value]


def as_os_error(root: str, key: str, exc: Exception) -> OSError | None:
    """The OSError for a store client's exception about `key` (None: not a store client's)."""
    if not _from_store_client(exc):
        return None
    text = str(exc).strip()
    first_line = text.splitlines()[0] if text else ""  # Azure appends request ids and an XML body
    return OSError(f"{root}: {key}: {type(exc).__name__}: {first_line}")
